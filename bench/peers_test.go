package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/bench/report"
)

// TestQuackReport lays out quack_bench.py's output: medians, the p50 and
// p99 of the point queries, insert rates, and quiver's speed over Quack's
// on each row, faster or slower.
func TestQuackReport(t *testing.T) {
	const out = `{"versions": {"duckdb": "1.5.5"},
		"fetch": [{"workload": "num20", "rows": 10000000, "seconds": {"quiver": [2.6, 2.4, 2.5], "quack": [5.0, 4.9, 5.1]}}],
		"point": {"quiver": [0.004, 0.005, 0.006, 0.100], "quack": [0.010, 0.009, 0.011, 0.020]},
		"insert": [{"clients": 1, "rows_per_s": {"quiver": [400, 390, 410], "quack": [650, 640, 660]}},
		           {"clients": 8, "rows_per_s": {"quiver": [1600], "quack": [1000]}}]}`
	var qo quackOutput
	if err := json.Unmarshal([]byte(out), &qo); err != nil {
		t.Fatal(err)
	}
	r := &report.Report{}
	tab, err := quackReport(qo, PeersConfig{PointRows: 100_000, InsertWindow: 10 * time.Second}, r)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"fetch num20/10M", "2.50 s", "5.00 s", "2.00× faster"},
		{"point query (WHERE id = ?, 100k rows), p50", "5.0 ms", "10.0 ms", "2.00× faster"},
		{"point query (WHERE id = ?, 100k rows), p99", "100.0 ms", "20.0 ms", "0.20× (slower)"},
		{"single-row INSERT, autocommit, 1 client", "400 /s", "650 /s", "0.62× (slower)"},
		{"single-row INSERT, autocommit, 8 client processes", "1600 /s", "1000 /s", "1.60× faster"},
	}
	if len(tab.Rows) != len(want) {
		t.Fatalf("got %d rows, want %d: %q", len(tab.Rows), len(want), tab.Rows)
	}
	for i, row := range want {
		if got := strings.Join(tab.Rows[i], " | "); got != strings.Join(row, " | ") {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, strings.Join(row, " | "))
		}
	}
	if n := len(r.Results); n != 8 {
		t.Errorf("got %d results, want 2 fetches, 2 point-query stats and 4 insert rates", n)
	}
}

// TestQuackReport_Missing fails a report that lacks a side's figures,
// rather than printing a ratio of nothing.
func TestQuackReport_Missing(t *testing.T) {
	for _, tc := range []struct{ name, out, want string }{
		{"no quack fetch", `{"fetch": [{"workload": "num20", "rows": 10, "seconds": {"quiver": [1]}}], "point": {"quiver": [1], "quack": [1]}}`, "no times for fetch num20/10"},
		{"no points", `{"point": {"quiver": [0.1]}}`, "no point-query latencies"},
		{"no inserts", `{"point": {"quiver": [1], "quack": [1]}, "insert": [{"clients": 8, "rows_per_s": {"quiver": [5], "quack": []}}]}`, "no inserts at 8 clients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var qo quackOutput
			if err := json.Unmarshal([]byte(tc.out), &qo); err != nil {
				t.Fatal(err)
			}
			_, err := quackReport(qo, PeersConfig{}, &report.Report{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one holding %q", err, tc.want)
			}
		})
	}
}

// TestFlightPeerRow checks the C++ Flight row: medians, rates, server
// CPU per fetch, and the two ratios quiver/peer.
func TestFlightPeerRow(t *testing.T) {
	stat := func(name string, cpu time.Duration, durs ...time.Duration) report.Stat {
		s := report.Stat{Name: name}
		for _, d := range durs {
			s.Samples = append(s.Samples, report.Sample{Dur: d, Rows: 10_000_000, CPU: cpu})
		}
		return s
	}
	q := stat("quiver", 1400*time.Millisecond, time.Second, time.Second)
	p := stat("peer", 2800*time.Millisecond, 1500*time.Millisecond, 1500*time.Millisecond)
	got := strings.Join(flightPeerRow(peerFetch{Workload: "num20", Rows: 10_000_000}, 10, q, p), " | ")
	want := "num20 | 10M | 10 | 1000 ±0% | 1500 ±0% | 10.00M | 6.67M | 1.40 | 2.80 | 1.50× | 0.50×"
	if got != want {
		t.Errorf("row:\n got %s\nwant %s", got, want)
	}
}
