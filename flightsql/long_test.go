package flightsql_test

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
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

	var (
		mu               sync.Mutex
		maxHeap, maxRSS  uint64
		samples          int
		startHeap, start = heapInuse(), time.Now()
	)
	sample := func() {
		h, r := heapInuse(), vmRSS(t)
		mu.Lock()
		defer mu.Unlock()
		maxHeap, maxRSS = max(maxHeap, h), max(maxRSS, r)
		samples++
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	})

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
	close(stop)
	<-done
	sample()
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	took := time.Since(start)
	t.Logf("%d rows in %d batches, %v (%.1f M rows/s); heap in use: %.1f MB before, max %.1f MB; max RSS %.1f MB; %d samples",
		got, batches, took.Round(time.Millisecond), float64(got)/took.Seconds()/1e6,
		mb(startHeap), mb(maxHeap), mb(maxRSS), samples)
	if got != rows {
		t.Errorf("rows: got %d, want %d", got, rows)
	}
	if maxHeap > heapLimit {
		t.Errorf("heap in use: max %.1f MB, want under %.0f MB", mb(maxHeap), mb(heapLimit))
	}
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// vmRSS is the process's resident set size, from /proc/self/status; 0
// where there is no /proc.
func vmRSS(t *testing.T) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest) // "123456 kB"
			if len(fields) == 2 && fields[1] == "kB" {
				kb, err := strconv.ParseUint(fields[0], 10, 64)
				if err != nil {
					t.Errorf("parse VmRSS %q: %v", rest, err)
					return 0
				}
				return kb << 10
			}
		}
	}
	return 0
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
