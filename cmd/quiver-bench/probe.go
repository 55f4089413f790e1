package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/quiverdata/quiver/bench/load"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	registerSuite("probe", suite{"one Flight SQL client running a query over and over against a running server: latency p50, p99 and max (bench load runs it as a process of its own beside its clients)", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg load.ProbeConfig
		fs.StringVar(&cfg.Addr, "flight", "127.0.0.1:31337", "the server's Flight SQL address")
		fs.StringVar(&cfg.User, "user", "", "user to log in as; the password comes from QUIVER_PASSWORD")
		fs.StringVar(&cfg.SQL, "sql", "SELECT 1", "the query; with --ids, each %d in it takes a random id")
		fs.Int64Var(&cfg.IDs, "ids", 0, "ids are drawn below this (0: the query as given)")
		fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long it runs once logged in")
		until := fs.String("until", "", "run until this RFC 3339 time instead of --duration")
		return func(ctx context.Context, _ env) (*report.Report, error) {
			if *until != "" {
				t, err := time.Parse(time.RFC3339Nano, *until)
				if err != nil {
					return nil, cli.Usagef("bad --until %q: give an RFC 3339 time", *until)
				}
				cfg.Until = t
			}
			if cfg.Duration <= 0 || cfg.IDs < 0 {
				return nil, cli.Usagef("--duration must be positive and --ids not negative")
			}
			if cfg.User != "" {
				cfg.Password = os.Getenv("QUIVER_PASSWORD")
			}
			return load.Probe(ctx, cfg)
		}
	}})
}
