package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
)

func init() {
	registerSuite("ingest", benchSuite{"bulk ingest over Flight DoPut against DuckDB's native INSERT … SELECT and duckdb-go's row Appender", func(fs *flag.FlagSet) func(context.Context, int) (*report.Report, error) {
		rows := fs.Int("rows", 10_000_000, "rows per run")
		appender := fs.Bool("appender", true, "also time duckdb-go's row Appender")
		return func(ctx context.Context, reps int) (*report.Report, error) {
			if *rows < 1 {
				return nil, usagef("--rows must be positive")
			}
			bin, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("find the quiver binary: %w", err)
			}
			return bench.Ingest(ctx, bench.IngestConfig{Rows: *rows, Appender: *appender, Bin: bin, Reps: reps})
		}
	}})
}
