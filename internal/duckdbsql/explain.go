package duckdbsql

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Operator is one operator of DuckDB's EXPLAIN (FORMAT json) output.
type Operator struct {
	Name     string     `json:"name"`
	Children []Operator `json:"children"`
	// ExtraInfo is what the operator says of itself ("Estimated
	// Cardinality", "Top", …), as DuckDB writes it.
	ExtraInfo map[string]any `json:"extra_info"`
}

// ReadExplain reads the plan of DuckDB's EXPLAIN (FORMAT json): its root
// operators, one for a statement.
func ReadExplain(js []byte) ([]Operator, error) {
	var roots []Operator
	if err := json.Unmarshal(js, &roots); err != nil {
		return nil, fmt.Errorf("read DuckDB's plan: %w", err)
	}
	return roots, nil
}

// Info is a number the operator says of itself under key ("Estimated
// Cardinality"); DuckDB writes most as strings. ok is false when it says
// none.
func (o *Operator) Info(key string) (int64, bool) {
	switch v := o.ExtraInfo[key].(type) {
	case string:
		x, err := strconv.ParseInt(v, 10, 64)
		return x, err == nil
	case float64:
		return int64(v), true
	}
	return 0, false
}
