// Package workload holds the table shapes the benchmarks publish figures
// for and the product's tests and benchmarks build on: the fetch
// tables (num with id and num20, str with str20) and the flat 14-column
// ingest rows. It imports nothing of quiver's but ipcx, so any package's
// tests may use it.
package workload

import (
	"fmt"
	"strings"
)

// Workload is one of the fetch workloads.
type Workload struct {
	Name  string
	Table string
}

// Workloads are id, num20 and str20.
var Workloads = map[string]Workload{
	"id":    {Name: "id", Table: "num"},
	"num20": {Name: "num20", Table: "num"},
	"str20": {Name: "str20", Table: "str"},
}

// Query is the workload's SQL for n rows.
func (w Workload) Query(n int64) string {
	if w.Name == "id" {
		return fmt.Sprintf("SELECT id FROM num LIMIT %d", n)
	}
	return fmt.Sprintf("SELECT * FROM %s LIMIT %d", w.Table, n)
}

// CreateSQL generates the workload's table (num: id and 19 BIGINT
// multiples of it; str: 20 VARCHAR of 5 to 9 bytes) with n rows inside
// DuckDB, so generation is not timed.
func CreateSQL(table string, n int64) string {
	var cols []string
	switch table {
	case "num":
		cols = append(cols, "i AS id")
		for k := 1; k <= 19; k++ {
			cols = append(cols, fmt.Sprintf("i * %d AS c%d", k, k))
		}
	case "str":
		for k := 1; k <= 20; k++ {
			cols = append(cols, fmt.Sprintf("'val_' || (i * %d %% 100000) AS s%d", k, k))
		}
	}
	return fmt.Sprintf("CREATE OR REPLACE TABLE %s AS SELECT %s FROM range(%d) t(i)", table, strings.Join(cols, ", "), n)
}

// Parse reads "id,num20,str20".
func Parse(s string) ([]Workload, error) {
	var out []Workload
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		w, ok := Workloads[name]
		if !ok {
			return nil, fmt.Errorf("unknown workload %q: use id, num20, str20", name)
		}
		out = append(out, w)
	}
	return out, nil
}
