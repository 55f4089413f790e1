package flightsql_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/internal/workload"
	"github.com/quiverdata/quiver/server"
)

// longTests says whether the slow tests run: QUIVER_LONG_TESTS=1.
func longTests(t *testing.T) {
	t.Helper()
	if os.Getenv("QUIVER_LONG_TESTS") != "1" {
		t.Skip("set QUIVER_LONG_TESTS=1 to run")
	}
}

// heapLimit is what the heap may grow to while 100M rows stream.
const heapLimit = 256 << 20

// TestLong_StreamBounded streams 100M rows through the Go client from an
// in-process server and checks the heap stays bounded: the server and the
// client share the process, so HeapInuse covers both.
func TestLong_StreamBounded(t *testing.T) {
	longTests(t)
	const rows = 100_000_000
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	s := startSampler(t)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := c.Query(ctx, "SELECT i FROM range(100000000) t(i)")
	if err != nil {
		t.Fatal(err)
	}
	var got, batches int64
	for r.Next() {
		got += r.RecordBatch().NumRows()
		batches++
	}
	err = r.Err()
	r.Release()
	s.stop()
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	took := time.Since(s.start)
	t.Logf("%d rows in %d batches, %v (%.1f M rows/s); %s", got, batches, took.Round(time.Millisecond), float64(got)/took.Seconds()/1e6, s)
	if got != rows {
		t.Errorf("rows: got %d, want %d", got, rows)
	}
	if s.maxHeap > heapLimit {
		t.Errorf("heap in use: max %.1f MB, want under %.0f MB", mb(s.maxHeap), mb(heapLimit))
	}
}

// TestLong_IngestBounded bulk-loads 50M rows of the 14-column ingest
// schema through DoPut into a file database and checks the heap stays
// bounded: batches are consumed as they arrive. (DuckDB's own memory is
// outside the Go heap; the RSS is reported.)
func TestLong_IngestBounded(t *testing.T) {
	longTests(t)
	const batchRows, batches = 64 * 1024, 763 // 50.0M rows
	srv := testutil.StartServer(t, server.Config{DB: filepath.Join(t.TempDir(), "ingest.duckdb")})
	c := testutil.Dial(t, srv, client.Config{})
	recs, _ := workload.Flat14(batchRows)
	defer releaseAll(recs)
	s := startSampler(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	n, err := c.Ingest(ctx, &repeatReader{rec: recs[0], left: batches}, &flightsql.ExecuteIngestOpts{Table: "big", TableDefinitionOptions: modeCreate})
	s.stop()
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	took := time.Since(s.start)
	t.Logf("%d rows ingested, %v (%.2f M rows/s); %s", n, took.Round(time.Millisecond), float64(n)/took.Seconds()/1e6, s)
	if want := int64(batchRows * batches); n != want {
		t.Errorf("rows: got %d, want %d", n, want)
	}
	if got := scalar(t, c, "SELECT count(*) FROM big"); got != strconv.Itoa(batchRows*batches) {
		t.Errorf("rows in the table: %s", got)
	}
	if s.maxHeap > heapLimit {
		t.Errorf("heap in use: max %.1f MB, want under %.0f MB", mb(s.maxHeap), mb(heapLimit))
	}
}

// repeatReader yields rec left times.
type repeatReader struct {
	rec  arrow.RecordBatch
	left int
}

func (r *repeatReader) Schema() *arrow.Schema          { return r.rec.Schema() }
func (r *repeatReader) Next() bool                     { r.left--; return r.left >= 0 }
func (r *repeatReader) RecordBatch() arrow.RecordBatch { return r.rec }
func (r *repeatReader) Record() arrow.RecordBatch      { return r.rec }
func (r *repeatReader) Err() error                     { return nil }
func (r *repeatReader) Retain()                        {}
func (r *repeatReader) Release()                       {}

// sampler records the heap in use and the RSS every 10 ms until stop.
type sampler struct {
	t               *testing.T
	mu              sync.Mutex
	maxHeap, maxRSS uint64
	startHeap       uint64
	start           time.Time
	samples         int
	halt, done      chan struct{}
	once            sync.Once
}

func startSampler(t *testing.T) *sampler {
	s := &sampler{t: t, startHeap: heapInuse(), start: time.Now(), halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.halt:
				return
			case <-tick.C:
				s.sample()
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *sampler) sample() {
	h, r := heapInuse(), vmRSS()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxHeap, s.maxRSS = max(s.maxHeap, h), max(s.maxRSS, r)
	s.samples++
}

// stop ends the sampling, with one last sample.
func (s *sampler) stop() {
	s.once.Do(func() {
		close(s.halt)
		<-s.done
		s.sample()
	})
}

func (s *sampler) String() string {
	return fmt.Sprintf("heap in use: %.1f MB before, max %.1f MB; max RSS %.1f MB; %d samples",
		mb(s.startHeap), mb(s.maxHeap), mb(s.maxRSS), s.samples)
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// vmRSS is the process's resident set size; 0 where it cannot be read.
func vmRSS() uint64 {
	mem, err := osfacts.ProcessMemory(os.Getpid())
	if err != nil {
		return 0
	}
	return uint64(mem.RSS)
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
