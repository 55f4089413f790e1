package flightsql_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/internal/workload"
	"github.com/quiverdata/quiver/server"
)

// The ingest benchmarks load the same rows three ways into a file
// database, so their rows/s read side by side:
//
//	go test -tags duckdb_arrow -run '^$' -bench 'Ingest_' -benchtime 3x ./flightsql/
//
// QUIVER_BENCH_INGEST_ROWS sets the row count (default 2,000,000).

// benchIngestData is the flat 14-column data set (10 BIGINT, 4 VARCHAR),
// built once for all the benchmarks.
var benchIngestData = sync.OnceValues(func() ([]arrow.RecordBatch, int64) {
	rows := 2_000_000
	if s := os.Getenv("QUIVER_BENCH_INGEST_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			rows = n
		}
	}
	return workload.Flat14(rows)
})

func benchRows(recs []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

func startBenchServer(b *testing.B) *server.Server {
	b.Helper()
	return testutil.StartServer(b, server.Config{DB: filepath.Join(b.TempDir(), "bench.duckdb")})
}

// BenchmarkIngest_DoPut is a client's CommandStatementIngest of the data
// set over loopback gRPC into a new table.
func BenchmarkIngest_DoPut(b *testing.B) {
	recs, size := benchIngestData()
	rows := benchRows(recs)
	srv := startBenchServer(b)
	c := testutil.Dial(b, srv, client.Config{})
	ctx := context.Background()
	opts := &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: modeCreate}
	b.ReportAllocs()
	b.SetBytes(size)
	var sw stopwatch
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS t; CHECKPOINT"); err != nil {
			b.Fatal(err)
		}
		rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		sw.start()
		n, err := c.Ingest(ctx, rdr, opts)
		sw.stop()
		if err != nil || n != rows {
			b.Fatalf("ingest: got %d, %v; want %d", n, err, rows)
		}
		b.StopTimer()
		rdr.Release()
		b.StartTimer()
	}
	sw.report(b, rows)
}

// BenchmarkIngest_NativeInsert is DuckDB's own INSERT INTO t2 SELECT * FROM
// t of the same rows in the same kind of database: the engine's ceiling.
func BenchmarkIngest_NativeInsert(b *testing.B) {
	recs, size := benchIngestData()
	rows := benchRows(recs)
	srv := startBenchServer(b)
	ctx := context.Background()
	conn, err := srv.DB.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(workload.Flat14DDL, "t")); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.InsertArrow(ctx, `"t"`, nil, rdr); err != nil {
		b.Fatal(err)
	}
	rdr.Release()
	b.ReportAllocs()
	b.SetBytes(size)
	var sw stopwatch
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS t2; CHECKPOINT; "+fmt.Sprintf(workload.Flat14DDL, "t2")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		sw.start()
		n, err := conn.Exec(ctx, "INSERT INTO t2 SELECT * FROM t")
		sw.stop()
		if err != nil || n != rows {
			b.Fatalf("insert: got %d, %v; want %d", n, err, rows)
		}
	}
	sw.report(b, rows)
}

// BenchmarkIngest_EngineInsertArrow is the engine's Arrow-scan insert of
// the same batches, without Flight: DoPut's cost less the transport.
func BenchmarkIngest_EngineInsertArrow(b *testing.B) {
	recs, size := benchIngestData()
	rows := benchRows(recs)
	srv := startBenchServer(b)
	ctx := context.Background()
	conn, err := srv.DB.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	b.ReportAllocs()
	b.SetBytes(size)
	var sw stopwatch
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS t; CHECKPOINT; "+fmt.Sprintf(workload.Flat14DDL, "t")); err != nil {
			b.Fatal(err)
		}
		rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		sw.start()
		n, err := conn.InsertArrow(ctx, `"t"`, nil, rdr)
		sw.stop()
		if err != nil || n != rows {
			b.Fatalf("insert: got %d, %v; want %d", n, err, rows)
		}
		b.StopTimer()
		rdr.Release()
		b.StartTimer()
	}
	sw.report(b, rows)
}

// cpuTime is the process's user plus system CPU time. On a shared machine
// the CPU seconds an ingest costs vary less than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stopwatch accumulates wall and CPU time over the timed sections.
type stopwatch struct {
	wall, cpu time.Duration
	startWall time.Time
	cpu0      time.Duration
}

func (w *stopwatch) start() { w.startWall, w.cpu0 = time.Now(), cpuTime() }

func (w *stopwatch) stop() {
	w.wall += time.Since(w.startWall)
	w.cpu += cpuTime() - w.cpu0
}

func (w *stopwatch) report(b *testing.B, rows int64) {
	b.ReportMetric(float64(rows)*float64(b.N)/w.wall.Seconds(), "rows/s")
	b.ReportMetric(w.cpu.Seconds()/float64(b.N), "cpu-s/op")
}
