package main

import (
	"context"
	"flag"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	registerSuite("ingest", suite{"bulk ingest over Flight DoPut against DuckDB's native INSERT … SELECT and duckdb-go's row Appender", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		rows := fs.Int("rows", 10_000_000, "rows per run")
		appender := fs.Bool("appender", true, "also time duckdb-go's row Appender")
		return func(ctx context.Context, e env) (*report.Report, error) {
			if *rows < 1 {
				return nil, cli.Usagef("--rows must be positive")
			}
			bin, err := e.quiver()
			if err != nil {
				return nil, err
			}
			return bench.Ingest(ctx, bench.IngestConfig{Rows: *rows, Appender: *appender, Bin: bin, Reps: e.reps})
		}
	}})
}
