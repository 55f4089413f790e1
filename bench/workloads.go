package bench

import (
	"fmt"
	"strings"
)

// Workload is one of the seed's fetch workloads (seeds/000, table 1).
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

// CreateSQL generates the workload's table with n rows inside DuckDB, so
// generation is not timed.
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

// ParseSizes reads "1M,5M,10M"-style row counts.
func ParseSizes(s string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(strings.ToUpper(part))
		if part == "" {
			continue
		}
		mult := int64(1)
		switch {
		case strings.HasSuffix(part, "M"):
			mult, part = 1_000_000, strings.TrimSuffix(part, "M")
		case strings.HasSuffix(part, "K"):
			mult, part = 1_000, strings.TrimSuffix(part, "K")
		}
		var n int64
		if _, err := fmt.Sscan(part, &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q: use e.g. 1M,5M,10M", part)
		}
		out = append(out, n*mult)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no sizes given")
	}
	return out, nil
}

// ParseWorkloads reads "id,num20,str20".
func ParseWorkloads(s string) ([]Workload, error) {
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
