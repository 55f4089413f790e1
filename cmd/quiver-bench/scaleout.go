package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	registerSuite("scaleout", suite{"a multi-endpoint lake scan fetched from 3 replicas against 1, each behind its own shaped 1 Gbit/s veth link (root, netns)", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg bench.ScaleOutConfig
		lf := registerLakeFileFlags(fs, &cfg.Dir, &cfg.FetchParallel, &cfg.Files)
		fs.IntVar(&cfg.Replicas, "replicas", 3, "replicas serving the lake, each in its own network namespace")
		fs.StringVar(&cfg.Rate, "rate", "1gbit", "tc tbf rate of each direction of each replica's link")
		fs.StringVar(&cfg.Burst, "burst", "1mb", "tc tbf burst")
		fs.StringVar(&cfg.Latency, "latency", "10ms", "tc tbf latency (queue bound)")
		fs.StringVar(&cfg.Subnet, "subnet", "10.201", "first two octets of the replicas' /30s: replica i is SUBNET.i.1")
		return func(ctx context.Context, e env) (*report.Report, error) {
			if err := lf.check(); err != nil {
				return nil, err
			}
			if cfg.Replicas < 2 || cfg.Replicas > 250 {
				return nil, cli.Usagef("--replicas must be 2 to 250")
			}
			bin, err := e.quiver()
			if err != nil {
				return nil, err
			}
			cfg.Bin, cfg.Reps = bin, e.reps
			cfg.Rows, cfg.PartBytes = lf.rowCount, lf.partMB<<20
			rep, err := bench.ScaleOut(ctx, cfg)
			if errors.Is(err, bench.ErrLinkUnavailable) {
				// Skipped, not failed: `make bench` runs on machines
				// without root too.
				fmt.Fprintf(e.stderr, "quiver-bench scaleout: skipping: %v\n", err)
				return &report.Report{Suite: "scaleout", Reps: e.reps, Tables: []*report.Table{{Title: "Scale-out: skipped", Note: err.Error()}}}, nil
			}
			return rep, err
		}
	}})
}
