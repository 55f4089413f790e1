package main

import (
	"context"
	"flag"
	"time"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	registerSuite("codec", suite{"LZ4_FRAME and ZSTD IPC write and read, time and allocations, arrow-go against quiver", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg bench.CodecConfig
		rows := fs.String("rows", "100k,500k,1M", "rows of the int + string batch")
		fs.DurationVar(&cfg.MinSample, "min-sample", 200*time.Millisecond, "least time per sample (operations are repeated to fill it)")
		return func(ctx context.Context, e env) (*report.Report, error) {
			ns, err := bench.ParseSizes(*rows)
			if err != nil {
				return nil, cli.Usagef("%v", err)
			}
			for _, n := range ns {
				cfg.Rows = append(cfg.Rows, int(n))
			}
			cfg.Reps = e.reps
			return bench.Codec(ctx, cfg)
		}
	}})
}
