package ingest_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/scrape"
	"github.com/quiverdata/quiver/internal/testsvc"
)

// TestLong_IngestMemoryBounded checks that quiver ingest's memory is set
// by its queues and fetch sizes, not by the topic's backlog: draining a
// backlog of 3M messages peaks within half again the heap of draining 1M (both far
// more than one fetch and the queues hold). quiver ingest runs
// as a subprocess (the broker's copy of the topic stays in this one) and
// its Go heap is read from its /metrics while it works. DuckDB's own
// memory is bounded by its memory limit, not by the pipeline.
func TestLong_IngestMemoryBounded(t *testing.T) {
	if !longTests {
		t.Skip("set QUIVER_LONG_TESTS=1")
	}
	bin := testsvc.QuiverBinary(t)
	md := compile(t, "Flat")
	peak := func(n int) float64 {
		t.Helper()
		addrs := startCluster(t, 4)
		produce(t, addrs, 4, flatValues(t, md, 0, n), time.Unix(1_740_000_000, 0))
		db := filepath.Join(t.TempDir(), "mem.duckdb")
		p := startIngestHTTP(t, bin, ingestArgs(addrs, "mem", db, "", "--idle-exit", "2s"))
		exited := make(chan error, 1)
		go func() { exited <- p.Wait() }()
		var maxHeap, records float64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(5 * time.Minute)
		for {
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("quiver ingest: %v\n%s", err, p.Stderr())
				}
				if records != float64(n) {
					t.Fatalf("ingested %.0f of %d messages", records, n)
				}
				return maxHeap
			case <-deadline:
				p.cmd.Process.Kill()
				<-exited
				t.Fatalf("quiver ingest did not drain %d messages\n%s", n, p.Stderr())
			case <-tick.C:
				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				f, err := scrape.Page(sctx, p.Metrics)
				cancel()
				if err != nil {
					continue // the process is exiting
				}
				m := f.Sums()
				if v, ok := m["go_memstats_heap_inuse_bytes"]; ok {
					maxHeap = max(maxHeap, v)
				}
				if v, ok := m["quiver_ingest_records_total"]; ok {
					records = v
				}
			}
		}
	}
	small := peak(1_000_000)
	large := peak(3_000_000)
	t.Logf("peak Go heap in use: %.0f MB draining 1M messages, %.0f MB draining 3M", small/(1<<20), large/(1<<20))
	// A heap that grew with the backlog would be about 3× at 3M. The
	// margin covers garbage not yet collected when a sample is taken: the
	// peak of heap in use varies by a GC cycle's worth between runs (one
	// 1M run peaked at 203 MB and a 3M run at 337 MB, another at 268 MB).
	if large > 1.5*small+64<<20 {
		t.Errorf("the heap grew with the backlog: %.0f MB for 3M messages against %.0f MB for 1M", large/(1<<20), small/(1<<20))
	}
	if large > 1<<30 {
		t.Errorf("peak heap %.0f MB, more than 1 GB", large/(1<<20))
	}
}
