package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/workload"
)

func TestEngineFit(t *testing.T) {
	cfg := FetchConfig{Workloads: []workload.Workload{workload.Workloads["id"], workload.Workloads["str20"]}, Sizes: []int64{1_000_000, 10_000_000, 100_000_000}}
	// 1M rows: num 160 B and str 320 B a row, two copies, plus twice the
	// widest row for duckdb-go's result.
	if got, want := engineNeed(cfg, 1_000_000), int64(2*160+2*320+2*320)*1_000_000; got != want {
		t.Fatalf("engineNeed(1M) = %d, want %d", got, want)
	}
	for _, tt := range []struct {
		avail, want int64
	}{
		{0, 0},
		{1 << 30, 0},             // 1M needs 1.6 GB: twice that is not there
		{4 << 30, 1_000_000},     // 1M fits in half
		{40 << 30, 10_000_000},   // 10M needs 16 GB
		{400 << 30, 100_000_000}, // everything
		{engineNeed(cfg, 10_000_000) * 2, 10_000_000}, // exactly half
	} {
		if got := engineFit(cfg, tt.avail); got != tt.want {
			t.Errorf("engineFit(%s) = %d, want %d", fmtGB(tt.avail), got, tt.want)
		}
	}
}

// TestFetch_Small runs the fetch suite on 20k rows: both tables, with the
// peak memory of server and client filled in.
func TestFetch_Small(t *testing.T) {
	if testing.Short() {
		t.Skip("builds quiver and runs a server")
	}
	bin := testsvc.QuiverBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const rows = 20_000
	rep, err := Fetch(ctx, FetchConfig{
		Workloads: []workload.Workload{workload.Workloads["id"], workload.Workloads["str20"]}, Sizes: []int64{rows},
		Protocols: []string{"flight"}, Bin: bin, Reps: 1, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != 2 {
		t.Fatalf("got %d tables, want engine export and protocol fetch", len(rep.Tables))
	}
	for _, r := range rep.Results {
		if r.Contender != "raw TCP" && r.Rows != rows {
			t.Errorf("%s %s %s: %d rows, want %d", r.Table, r.Case, r.Contender, r.Rows, rows)
		}
	}
	fetch := rep.Tables[1]
	col := map[string]int{}
	for i, c := range fetch.Columns {
		col[c] = i
	}
	for _, row := range fetch.Rows {
		for _, name := range []string{"server RSS MB", "client RSS MB"} {
			mb, err := strconv.Atoi(row[col[name]])
			if err != nil || mb <= 0 || mb > 4096 {
				t.Errorf("%s %s: %q, want a positive size in MB", strings.Join(row[:2], "/"), name, row[col[name]])
			}
		}
	}
}
