package flightsql_test

import (
	"context"
	"testing"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/internal/workload"
	"github.com/quiverdata/quiver/ipcx"
	"github.com/quiverdata/quiver/mempool"
	"github.com/quiverdata/quiver/server"
)

// BenchmarkDoGet_Num20 fetches 2M rows × 20 BIGINT end to end: DuckDB →
// Arrow → Flight → quiver's Go client, over loopback.
func BenchmarkDoGet_Num20(b *testing.B) {
	benchDoGet(b, "num", 2_000_000, client.Config{})
}

// BenchmarkDoGet_Str20 fetches 1M rows × 20 VARCHAR the same way, into
// recycled client memory (the benchmark keeps no strings).
func BenchmarkDoGet_Str20(b *testing.B) {
	benchDoGet(b, "str", 1_000_000, client.Config{Allocator: mempool.New()})
}

func benchDoGet(b *testing.B, table string, rows int64, cfg client.Config) {
	srv := testutil.StartServer(b, server.Config{})
	c := testutil.Dial(b, srv, cfg)
	ctx := context.Background()
	if _, err := c.Exec(ctx, workload.CreateSQL(table, rows)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Query(ctx, "SELECT * FROM "+table)
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for r.Next() {
			n += ipcx.RecordBytes(r.RecordBatch())
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		r.Release()
		b.SetBytes(n)
	}
}
