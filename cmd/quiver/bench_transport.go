package main

import (
	"context"
	"flag"

	"github.com/quiverdata/quiver/bench"
)

func init() {
	registerSuite("transport", benchSuite{"DoGet and DoPut of pre-built batches against raw TCP loopback", func(fs *flag.FlagSet) func(context.Context, int) (*bench.Report, error) {
		var cfg bench.TransportConfig
		fs.IntVar(&cfg.MB, "mb", 1024, "Arrow payload per run, MB")
		fs.IntVar(&cfg.BatchRows, "batch-rows", 64*1024, "rows per batch")
		return func(ctx context.Context, reps int) (*bench.Report, error) {
			cfg.Reps = reps
			return bench.Transport(ctx, cfg)
		}
	}})
}
