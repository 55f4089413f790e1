package main

import (
	"context"
	"flag"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
)

func init() {
	registerSuite("transport", suite{"DoGet and DoPut of pre-built batches against raw TCP loopback", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg bench.TransportConfig
		fs.IntVar(&cfg.MB, "mb", 1024, "Arrow payload per run, MB")
		fs.IntVar(&cfg.BatchRows, "batch-rows", 64*1024, "rows per batch")
		return func(ctx context.Context, e env) (*report.Report, error) {
			cfg.Reps = e.reps
			return bench.Transport(ctx, cfg)
		}
	}})
}
