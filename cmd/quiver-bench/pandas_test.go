package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPandasReport lays out bench_pandas.py's output: medians, the
// speedup, StarRocks' published figure, and a contender that was not run because
// its frame would not fit.
func TestPandasReport(t *testing.T) {
	const out = `{"versions": {"pandas": "2"}, "cases": [
		{"workload": "id", "rows": 1000000, "seconds": {"adbc": [0.1, 0.3, 0.2], "pymysql": [4, 5, 6]}, "skipped": {}},
		{"workload": "num20", "rows": 100000000, "seconds": {"adbc": [20], "pymysql": []}, "skipped": {"pymysql": "needs about 60 GB; 19 GB available"}},
		{"workload": "str20", "rows": 100000000, "seconds": {"adbc": [], "pymysql": []}, "skipped": {"adbc": "needs about 150 GB; 19 GB available", "pymysql": "needs about 200 GB; 19 GB available"}}
	]}`
	var po pandasOutput
	if err := json.Unmarshal([]byte(out), &po); err != nil {
		t.Fatal(err)
	}
	rep := pandasReport(po, 3)
	tab := rep.Tables[0]
	want := [][]string{
		{"id", "1M", "5000 ±40%", "200 ±100%", "25.0×", "19.3×"},
		{"num20", "100M", "does not fit", "20000 ±0%", "—", "PyMySQL OOM"},
		{"str20", "100M", "does not fit", "does not fit", "—", "—"},
	}
	if len(tab.Rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(tab.Rows), len(want))
	}
	for i, row := range want {
		if got := strings.Join(tab.Rows[i], " | "); got != strings.Join(row, " | ") {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, strings.Join(row, " | "))
		}
	}
	for _, s := range []string{"num20/100M PyMySQL: not run, the DataFrame needs about 60 GB", "str20/100M ADBC: not run", "str20/100M PyMySQL: not run"} {
		if !strings.Contains(tab.Footer, s) {
			t.Errorf("footer %q lacks %q", tab.Footer, s)
		}
	}
	if n := len(rep.Results); n != 3 {
		t.Errorf("%d results, want the 3 contenders that ran", n)
	}
}
