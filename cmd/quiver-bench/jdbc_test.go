package main

import (
	"strings"
	"testing"
)

// TestBenchJDBC_UsageErrors checks that bad bench jdbc and bench parquet
// flags, and a missing Java or Python side, exit 2 with a one-line reason
// before any server starts.
func TestBenchJDBC_UsageErrors(t *testing.T) {
	empty := t.TempDir()
	checkUsage(t, []usageCase{
		{"jdbc unknown workload", []string{"jdbc", "--workloads", "str20,nope"}, `unknown workload "nope"`},
		{"jdbc id workload", []string{"jdbc", "--workloads", "id"}, "workload id is not one of the Java suites' tables"},
		{"jdbc bad size", []string{"jdbc", "--sizes", "lots"}, `bad size "LOTS"`},
		{"jdbc negative warm-up", []string{"jdbc", "--warmup-rows", "-1"}, "--warmup-rows must be 0 or more"},
		{"jdbc no java", []string{"jdbc", "--java", "/nonexistent/java"}, "install a JDK 17"},
		{"jdbc no build", []string{"jdbc", "--java-dir", empty}, "run `make interop` once"},
		{"parquet unknown workload", []string{"parquet", "--workloads", "nope"}, `unknown workload "nope"`},
		{"parquet no build", []string{"parquet", "--java-dir", empty}, "run `make interop` once"},
	})
}

// TestJDBCReport_Layout checks the two Java tables built from JdbcBench's
// output: cells, speedups against the buffered MySQL baseline, anchors,
// and dashes for a contender that did not run.
func TestJDBCReport_Layout(t *testing.T) {
	out := jdbcOutput{
		Versions: map[string]string{"connectorj": "mysql-connector-j-9.7.0 (Revision: abc)", "flight_jdbc": "18.2.0", "java": "17.0.15"},
		Cases: []jdbcCase{
			{Workload: "str20", Rows: 5_000_000, Seconds: map[string][]float64{
				"mysql": {20, 22, 21}, "mysql-stream": {18, 18, 18}, "flight-jdbc": {10, 10.5, 11},
				"raw": {7, 7, 7}, "raw-prefetched": {5, 5, 5},
			}},
			{Workload: "num20", Rows: 10_000, Seconds: map[string][]float64{
				"mysql": {0.4}, "flight-jdbc": {0.1}, "raw": {0.05}, "raw-prefetched": {0.01},
			}},
		},
	}
	r := jdbcReport(out, 3)
	if len(r.Tables) != 2 {
		t.Fatalf("got %d tables, want 2", len(r.Tables))
	}
	for _, tt := range []struct {
		table int
		want  [][]string
	}{
		{0, [][]string{
			{"VARCHAR (str20)", "5M", "21000 ±10%", "10500 ±10%", "2.00×", "1.79×", "18000 ±0%"},
			{"numeric (num20)", "10k", "400 ±0%", "100 ±0%", "4.00×", "—", "—"},
		}},
		{1, [][]string{
			{"VARCHAR (str20)", "5M", "21000 ±10%", "7000 ±0%", "3.00×", "5000 ±0%", "4.20×", "1.90×"},
			{"numeric (num20)", "10k", "400 ±0%", "50 ±0%", "8.00×", "10 ±0%", "40.00×", "—"},
		}},
	} {
		tab := r.Tables[tt.table]
		if len(tab.Rows) != len(tt.want) {
			t.Fatalf("table %d: got %d rows, want %d", tt.table, len(tab.Rows), len(tt.want))
		}
		for i, row := range tab.Rows {
			if len(row) != len(tab.Columns) {
				t.Errorf("table %d row %d: %d cells for %d columns", tt.table, i, len(row), len(tab.Columns))
			}
			if got, want := strings.Join(row, " | "), strings.Join(tt.want[i], " | "); got != want {
				t.Errorf("table %d row %d:\n got %s\nwant %s", tt.table, i, got, want)
			}
		}
	}
	if !strings.Contains(r.Tables[0].Note, "Connector/J 9.7.0 in its default buffered mode") {
		t.Errorf("note %q does not name the buffered baseline and its version", r.Tables[0].Note)
	}
	if !strings.Contains(r.Tables[1].Note, "conversion loop alone") {
		t.Errorf("note %q does not say what pre-fetched times", r.Tables[1].Note)
	}
	// One result per contender and case: 5 for str20, 4 for num20.
	if got := len(r.Results); got != 9 {
		t.Errorf("got %d results, want 9", got)
	}
}
