package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/quiverdata/quiver/bench/load"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	registerSuite("load-clients", suite{"a share of bench load's clients in a process of their own (bench load --client-procs starts it; it talks to it over stdin and stdout)", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		spec := fs.String("spec", "", "the clients to run: a JSON file bench load writes")
		out := fs.String("out", "", "where to write what they did, as JSON")
		return func(ctx context.Context, _ env) (*report.Report, error) {
			if *spec == "" || *out == "" {
				return nil, cli.Usagef("--spec and --out are required")
			}
			b, err := os.ReadFile(*spec)
			if err != nil {
				return nil, fmt.Errorf("read the clients' spec: %w", err)
			}
			var s load.ClientsSpec
			if err := json.Unmarshal(b, &s); err != nil {
				return nil, fmt.Errorf("clients' spec %s: %w", *spec, err)
			}
			if err := load.RunClients(ctx, s, os.Getenv("QUIVER_PASSWORD"), os.Stdin, os.Stdout, *out); err != nil {
				return nil, err
			}
			return &report.Report{Suite: "load-clients", Reps: 1}, nil
		}
	}})
}
