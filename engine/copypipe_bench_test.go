package engine_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/workload"
)

var copyRows = flag.Int64("copy-rows", 2_000_000, "rows of the str20 table that BenchmarkCopy_Str20Limit exports")

// BenchmarkCopy_Str20Limit exports the seed's query, SELECT * FROM str
// LIMIT n, over twenty short VARCHAR columns into uncompressed Parquet,
// as one statement and piped (Stmt.PipeCopy), one after the other in each
// round, and reports the median of each and their ratio. The README's
// figure for the pipe is this benchmark at 10M rows:
//
//	go test -tags duckdb_arrow -run '^$' -bench Copy_Str20Limit -benchtime 3x -timeout 60m ./engine/ -args -copy-rows=10000000
//
// (A larger streaming_buffer_size on the query's connection, so that
// DuckDB's producer runs further ahead of the Arrow scan, made no
// difference at 2M rows: 4.6-5.6 s piped either way.)
func BenchmarkCopy_Str20Limit(b *testing.B) {
	n := *copyRows
	dir := b.TempDir()
	ctx := context.Background()
	c := benchConn(b, engine.Options{Path: ":memory:", AllowedDirs: []string{dir}})
	if _, err := c.Exec(ctx, workload.CreateSQL("str", n)); err != nil {
		b.Fatal(err)
	}
	query := fmt.Sprintf("SELECT * FROM str LIMIT %d", n)
	out := filepath.Join(dir, "out.parquet")
	copySQL := func(src string) string {
		return "COPY " + src + " TO " + engine.QuoteString(out) + " (FORMAT parquet, COMPRESSION uncompressed)"
	}
	export := func(piped bool) time.Duration {
		start := time.Now()
		st, err := c.Prepare(ctx, copySQL("("+query+")"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		if piped {
			ok, err := st.PipeCopy(ctx, query, func(view string) string { return copySQL("(SELECT * FROM " + view + ")") })
			if err != nil || !ok {
				b.Fatalf("piped %v, %v", ok, err)
			}
		}
		got, err := st.Exec(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("wrote %d rows of %d", got, n)
		}
		return time.Since(start)
	}
	var one, piped []time.Duration
	for b.Loop() {
		one = append(one, export(false))
		piped = append(piped, export(true))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return d[len(d)/2].Seconds()
	}
	b.ReportMetric(med(one), "one-statement-s")
	b.ReportMetric(med(piped), "piped-s")
	b.ReportMetric(med(one)/med(piped), "speedup")
}
