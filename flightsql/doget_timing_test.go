package flightsql_test

import (
	"context"
	"testing"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/ipcx"
	"github.com/quiverdata/quiver/server"
)

// BenchmarkDoGet_Num20 fetches 2M rows × 20 BIGINT end to end: DuckDB →
// Arrow → Flight → quiver's Go client, over loopback.
func BenchmarkDoGet_Num20(b *testing.B) {
	srv := testutil.StartServer(b, server.Config{})
	c := testutil.Dial(b, srv, client.Config{})
	ctx := context.Background()
	if _, err := c.Exec(ctx, bench.CreateSQL("num", 2_000_000)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Query(ctx, "SELECT * FROM num")
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
