package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/consolepage/consoletest"
	"github.com/quiverdata/quiver/internal/testsvc"
)

// TestBenchConsole_Tiny runs quiver-bench console on a few thousand rows,
// to show that it works end to end: the server and quiver query run as
// processes of a quiver binary built for the test, the page in headless
// Chromium. Nothing here is timed; the figures are only checked to be
// there.
func TestBenchConsole_Tiny(t *testing.T) {
	chromium := consoletest.Chromium(t)
	out := filepath.Join(t.TempDir(), "console.json")
	code, stdoutText, errOut := runBench(t, "console", "--rows", "5k", "--reps", "2", "--chromium", chromium, "--json", out,
		"--quiver", testsvc.QuiverBinary(t))
	if code != 0 {
		t.Fatalf("quiver-bench console: exit %d: %s%s", code, errOut, stdoutText)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Suite != "console" || rep.Reps != 2 || len(rep.Tables) != 1 || len(rep.Tables[0].Rows) != 1 {
		t.Fatalf("report: %s", b)
	}
	want := []string{"quiver query --format arrow", "console (wall)", "console (page data-ms)"}
	if len(rep.Results) != len(want) {
		t.Fatalf("results: %+v, want %q", rep.Results, want)
	}
	for i, r := range rep.Results {
		if r.Contender != want[i] || r.Case != "num20/5k" || r.Rows != 5000 || r.MedianMS <= 0 {
			t.Errorf("result %d: %+v, want %s of num20/5k with 5000 rows and a median", i, r, want[i])
		}
	}
	// 5,000 num20 rows are 20 BIGINT columns: 800 kB of values, more
	// with the stream's framing.
	if got := rep.Results[1].Bytes; got < 5000*20*8 {
		t.Errorf("the page received %d bytes, want at least the rows' %d", got, 5000*20*8)
	}
	if row := rep.Tables[0].Rows[0]; row[0] != "5k" || !strings.HasSuffix(row[len(row)-1], "×") {
		t.Errorf("table row %q", row)
	}
}

// TestBenchConsole_UsageErrors checks bad flags exit 2 before anything
// starts.
func TestBenchConsole_UsageErrors(t *testing.T) {
	checkUsage(t, []usageCase{
		{"two sizes", []string{"console", "--rows", "1M,2M"}, "bad --rows"},
		{"bad size", []string{"console", "--rows", "lots"}, "bad --rows"},
		{"unknown flag", []string{"console", "--nope"}, "flag provided but not defined"},
	})
}
