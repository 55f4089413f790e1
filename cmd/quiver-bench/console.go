package main

import (
	"context"
	"flag"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/consolepage"
)

func init() {
	registerSuite("console", suite{"a num20 result in the web console (headless Chromium) against quiver query --format arrow, alternated", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg bench.ConsoleConfig
		rows := fs.String("rows", "1M", "rows of num20 the result holds")
		fs.StringVar(&cfg.Chromium, "chromium", "", "Chromium or Chrome binary (default: $QUIVER_CHROMIUM, else /usr/bin/chromium or chromium on the PATH)")
		return func(ctx context.Context, e env) (*report.Report, error) {
			ns, err := bench.ParseSizes(*rows)
			if err != nil || len(ns) != 1 {
				return nil, cli.Usagef("bad --rows %q: one size, e.g. 1M", *rows)
			}
			if cfg.Chromium == "" {
				if cfg.Chromium, err = consolepage.ChromiumPath(); err != nil {
					return nil, err
				}
			}
			if cfg.Bin, err = e.quiver(); err != nil {
				return nil, err
			}
			cfg.Rows, cfg.Reps = ns[0], e.reps
			return bench.Console(ctx, cfg)
		}
	}})
}
