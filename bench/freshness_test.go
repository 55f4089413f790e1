package bench

import (
	"context"
	"github.com/quiverdata/quiver/bench/report"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestFreshness runs the suite briefly in both modes: every timed message
// is seen by every reader, the lake mode tracks the table's files, and
// the report plots.
func TestFreshness(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  FreshnessConfig
	}{
		{"serve", FreshnessConfig{Mode: FreshServe, Duration: 2 * time.Second, Rate: 5000, Partitions: 2, Every: 10, QueryClients: 2}},
		{"lake", FreshnessConfig{Mode: FreshLake, Duration: 4 * time.Second, Rate: 5000, Partitions: 2, Every: 10,
			CommitInterval: 500 * time.Millisecond, CompactInterval: time.Second, Poll: 200 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if tc.name == "lake" {
				cfg.Python = pythonWithPyiceberg(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := Freshness(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			vis := rep.Tables[0]
			wantReaders := 1
			if cfg.Python != "" {
				wantReaders = 2
			}
			if len(vis.Rows) != wantReaders {
				t.Fatalf("readers: got %v, want %d", vis.Rows, wantReaders)
			}
			for _, row := range vis.Rows {
				timed, _ := strconv.Atoi(row[1])
				if timed == 0 || row[5] != "0" {
					t.Errorf("reader %s: timed %s, unseen %s; want some timed and none unseen (row %v)", row[0], row[1], row[5], row)
				}
			}
			if tc.name == "lake" && (len(rep.Tables) < 2 || len(rep.Tables[len(rep.Tables)-1].Lines) != 2) {
				t.Errorf("no table of the lake's files over time: %+v", rep.Tables)
			}
			if tc.name == "serve" && (len(rep.Tables) < 2 || rep.Tables[1].Rows[0][1] == "0") {
				t.Errorf("no point queries measured: %+v", rep.Tables)
			}
			if err := report.Plot(rep, filepath.Join(t.TempDir(), "fresh.png")); err != nil {
				t.Error(err)
			}
		})
	}
}

// pythonWithPyiceberg is QUIVER_PYTHON when it names a Python that has
// pyiceberg, else "".
func pythonWithPyiceberg(t *testing.T) string {
	py := os.Getenv("QUIVER_PYTHON")
	if py == "" {
		return ""
	}
	if err := exec.Command(py, "-c", "import pyiceberg.catalog.sql").Run(); err != nil {
		t.Logf("QUIVER_PYTHON=%s has no pyiceberg: %v", py, err)
		return ""
	}
	return py
}
