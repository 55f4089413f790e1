package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/testsvc"
)

// TestBenchPeers_UsageErrors checks that bad peers flags exit 2 with a
// one-line reason, before any server or venv is made.
func TestBenchPeers_UsageErrors(t *testing.T) {
	checkUsage(t, []usageCase{
		{"unknown peer", []string{"peers", "--peers", "flight,gizmo"}, `bad --peers "flight,gizmo"`},
		{"no peer", []string{"peers", "--peers", ""}, `bad --peers ""`},
		{"two num20 sizes", []string{"peers", "--num20-rows", "1M,2M"}, `bad --num20-rows "1M,2M"`},
		{"bad str20 size", []string{"peers", "--str20-rows", "lots"}, `bad --str20-rows "lots"`},
		{"zero point rows", []string{"peers", "--point-rows", "0"}, `bad --point-rows "0"`},
		{"zero points", []string{"peers", "--points", "0"}, "--points must be at least 1"},
		{"zero clients", []string{"peers", "--insert-clients", "1,0"}, `bad --insert-clients "1,0"`},
		{"bad clients", []string{"peers", "--insert-clients", "eight"}, `bad --insert-clients "eight"`},
		{"zero window", []string{"peers", "--insert-window", "0s"}, "--insert-window must be positive"},
		{"zero batch", []string{"peers", "--peer-batch-rows", "0"}, "--peer-batch-rows must be at least 1"},
		{"negative warmup", []string{"peers", "--warmup", "-1"}, "--warmup must not be negative"},
		{"unknown flag", []string{"peers", "--nope"}, "flag provided but not defined"},
	})
}

// TestPeersFlags_Config checks what good flags turn into: the defaults
// are the published sizes, and each flag lands in its field.
func TestPeersFlags_Config(t *testing.T) {
	defaults := bench.PeersConfig{Flight: true, Quack: true, Num20Rows: 10_000_000, Str20Rows: 5_000_000, PeerBatchRows: 65536,
		PointRows: 100_000, Points: 1000, InsertWindow: 10 * time.Second, InsertClients: []int{1, 8}, Warmup: 1}
	flightOnly := defaults
	flightOnly.Quack, flightOnly.Num20Rows, flightOnly.Str20Rows, flightOnly.PeerBatchRows = false, 5000, 2000, 1024
	quackOnly := defaults
	quackOnly.Flight, quackOnly.PointRows, quackOnly.Points, quackOnly.InsertClients, quackOnly.InsertWindow, quackOnly.Warmup =
		false, 1000, 20, []int{2, 4}, 1500*time.Millisecond, 0
	for _, tc := range []struct {
		name string
		args []string
		want bench.PeersConfig
	}{
		{"defaults", nil, defaults},
		{"flight only", []string{"--peers", "flight", "--num20-rows", "5k", "--str20-rows", "2K", "--peer-batch-rows", "1024"}, flightOnly},
		{"quack only", []string{"--peers", "quack", "--point-rows", "1K", "--points", "20", "--insert-clients", "2, 4",
			"--insert-window", "1500ms", "--warmup", "0"}, quackOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f peersFlags
			fs := flag.NewFlagSet("peers", flag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := f.config()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("config:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestBenchPeers_Tiny runs quiver-bench peers on a few thousand rows with
// every server a real process: quiver, the C++ Flight peer and the Quack
// server, with Python clients beside them. Nothing is timed; the report
// must hold every row, with figures that can be true.
func TestBenchPeers_Tiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers and Python clients")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := bench.PythonVenv(ctx, "python3", "peers", bench.PeerRequirements(), nil); err != nil {
		t.Skipf("the peers' Python venv cannot be built here: %v", err)
	}
	out := filepath.Join(t.TempDir(), "peers.json")
	code, stdout, errOut := runBench(t, "peers", "--num20-rows", "3k", "--str20-rows", "2k", "--point-rows", "1k", "--points", "20",
		"--insert-window", "1s", "--insert-clients", "1,2", "--reps", "1", "--json", out, "--quiver", testsvc.QuiverBinary(t))
	if code != 0 {
		t.Fatalf("quiver-bench peers: exit %d: %s%s", code, errOut, stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != 2 {
		t.Fatalf("got %d tables, want the C++ Flight one and the Quack one:\n%s", len(rep.Tables), stdout)
	}

	flightTab := rep.Tables[0]
	if got, want := len(flightTab.Rows), 2; got != want {
		t.Fatalf("C++ Flight table: got %d rows, want %d:\n%s", got, want, stdout)
	}
	for i, want := range [][]string{{"num20", "3k"}, {"str20", "2k"}} {
		row := flightTab.Rows[i]
		if row[0] != want[0] || row[1] != want[1] {
			t.Errorf("C++ Flight row %d: got %q, want %s/%s", i, row, want[0], want[1])
		}
		if n, err := strconv.Atoi(row[2]); err != nil || n < 1 {
			t.Errorf("C++ Flight row %d: endpoints %q, want at least 1", i, row[2])
		}
		for _, c := range []int{7, 8} {
			if v, err := strconv.ParseFloat(row[c], 64); err != nil || v < 0 {
				t.Errorf("C++ Flight row %d: %s %q, want CPU seconds", i, flightTab.Columns[c], row[c])
			}
		}
		if !strings.HasSuffix(row[9], "×") {
			t.Errorf("C++ Flight row %d: speed ratio %q", i, row[9])
		}
	}
	wantRows := map[string]int64{"num20/3k": 3000, "str20/2k": 2000}
	var flightResults int
	for _, r := range rep.Results {
		if r.Table != "flight" {
			continue
		}
		flightResults++
		if r.Rows != wantRows[r.Case] || r.MedianMS <= 0 || r.Bytes <= 0 {
			t.Errorf("C++ Flight result %+v: want %d rows, a median and bytes", r, wantRows[r.Case])
		}
	}
	if flightResults != 4 {
		t.Errorf("got %d C++ Flight results, want quiver and the peer on each of 2 tables", flightResults)
	}

	quackTab := rep.Tables[1]
	wantCalls := []string{"fetch num20/3k", "fetch str20/2k", "point query (WHERE id = ?, 1k rows), p50", "point query (WHERE id = ?, 1k rows), p99",
		"single-row INSERT, autocommit, 1 client", "single-row INSERT, autocommit, 2 client processes"}
	if len(quackTab.Rows) != len(wantCalls) {
		t.Fatalf("Quack table: got %d rows, want %d:\n%s", len(quackTab.Rows), len(wantCalls), stdout)
	}
	for i, want := range wantCalls {
		row := quackTab.Rows[i]
		if row[0] != want {
			t.Errorf("Quack row %d: got %q, want %q", i, row[0], want)
		}
		if !strings.Contains(row[3], "×") {
			t.Errorf("Quack row %d: ratio %q", i, row[3])
		}
	}
	p50, p99 := map[string]float64{}, map[string]float64{}
	for _, r := range rep.Results {
		if r.Table != "quack" {
			continue
		}
		switch {
		case strings.HasPrefix(r.Case, "insert/"):
			if r.RowsPerS <= 0 {
				t.Errorf("Quack result %+v: want inserts per second", r)
			}
		case r.Case == "point":
			p50[r.Contender], p99[r.Contender] = r.MedianMS, r.MaxMS
		default:
			if r.MedianMS <= 0 || r.Rows != wantRows[strings.TrimPrefix(r.Case, "fetch ")] {
				t.Errorf("Quack result %+v: want a median and the table's rows", r)
			}
		}
	}
	for _, c := range []string{"quiver", "Quack"} {
		if p50[c] <= 0 || p50[c] > p99[c] {
			t.Errorf("%s point queries: median %.2f ms, slowest %.2f ms", c, p50[c], p99[c])
		}
	}
}
