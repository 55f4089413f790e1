package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/workload"
)

// BenchmarkLakeScan_Engine splits the lakeread suite's gap without the
// network: the same num20 rows scanned in-process, as Arrow batches, from
// the DuckDB table and from Parquet files as the lake holds them
// (DuckDB's writer, row groups of 122,880 rows), with each file
// compression and Parquet version. quiver ingest writes zstd V1.
//
//	go test -tags duckdb_arrow -run '^$' -bench LakeScan ./bench/
func BenchmarkLakeScan_Engine(b *testing.B) {
	const rows = 2_000_000
	ctx := context.Background()
	dir := b.TempDir()
	db, err := engine.Open(ctx, engine.Options{Path: filepath.Join(dir, "scan.duckdb"), ExternalAccess: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, workload.CreateSQL("num", rows)); err != nil {
		b.Fatal(err)
	}
	sources := []struct{ name, from string }{{"table", "num"}}
	for _, version := range []string{"V1", "V2"} {
		for _, comp := range LakeFileCompressions {
			opts, err := LakeFiles{Compression: comp, ParquetVersion: version}.copyOptions()
			if err != nil {
				b.Fatal(err)
			}
			name := comp + " " + version
			out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".parquet")
			q := fmt.Sprintf("COPY (SELECT * FROM num) TO %s (FORMAT parquet, %s)", engine.QuoteString(out), strings.Join(opts, ", "))
			if _, err := conn.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
			sources = append(sources, struct{ name, from string }{"parquet " + name, "read_parquet(" + engine.QuoteString(out) + ")"})
		}
	}
	for _, s := range sources {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(rows * 20 * 8)
			for b.Loop() {
				r, err := conn.Query(ctx, "SELECT * FROM "+s.from)
				if err != nil {
					b.Fatal(err)
				}
				_, n, err := drainReader(r)
				r.Close()
				if err != nil || n != rows {
					b.Fatalf("%d rows, %v", n, err)
				}
			}
		})
	}
}
