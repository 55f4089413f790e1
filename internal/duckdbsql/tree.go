package duckdbsql

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The typed reader of DuckDB's syntax trees, the output of
// json_serialize_sql. DuckDB serializes SELECT statements only; the types
// below hold the parts quiver reads (lake pruning, the split planner,
// admission's classifier, the export's query check), and every
// expression and statement keeps its raw JSON for walks that must see
// every child, so no kind of node is missed when DuckDB adds one.

// Tree is DuckDB's syntax tree of a text: one entry a statement.
type Tree struct {
	Statements []TreeStatement `json:"statements"`
}

// TreeStatement is one statement of a Tree.
type TreeStatement struct {
	Node *Node `json:"node"`
	// Raw is the whole statement as DuckDB wrote it.
	Raw json.RawMessage `json:"-"`
}

// Node is a query node: a SELECT_NODE, a SET_OPERATION_NODE, a
// RECURSIVE_CTE_NODE or a CTE_NODE (only a SELECT_NODE fills the fields
// past Type and CTEMap).
type Node struct {
	Type      string            `json:"type"`
	Modifiers []json.RawMessage `json:"modifiers"`
	CTEMap    struct {
		Map []json.RawMessage `json:"map"`
	} `json:"cte_map"`
	SelectList []*Expr           `json:"select_list"`
	From       *TableRef         `json:"from_table"`
	Where      *Expr             `json:"where_clause"`
	GroupBy    []json.RawMessage `json:"group_expressions"`
	Having     *Expr             `json:"having"`
	Qualify    *Expr             `json:"qualify"`
	Sample     json.RawMessage   `json:"sample"`
	Aggregate  string            `json:"aggregate_handling"`
}

// TableRef is an entry of a FROM clause: a BASE_TABLE, a JOIN of two
// entries, a subquery or a table function.
type TableRef struct {
	Type     string          `json:"type"`
	Alias    string          `json:"alias"`
	Catalog  string          `json:"catalog_name"`
	Schema   string          `json:"schema_name"`
	Table    string          `json:"table_name"`
	Left     *TableRef       `json:"left"`
	Right    *TableRef       `json:"right"`
	JoinType string          `json:"join_type"`
	RefType  string          `json:"ref_type"`
	Sample   json.RawMessage `json:"sample"`
	At       json.RawMessage `json:"at_clause"`
}

// Expr is an expression of a syntax tree.
type Expr struct {
	Class    string       `json:"class"`
	Type     string       `json:"type"`
	Columns  []string     `json:"column_names"`
	Children []*Expr      `json:"children"`
	Left     *Expr        `json:"left"`
	Right    *Expr        `json:"right"`
	Input    *Expr        `json:"input"`
	Lower    *Expr        `json:"lower"`
	Upper    *Expr        `json:"upper"`
	Child    *Expr        `json:"child"`
	CastType *LogicalType `json:"cast_type"`
	TryCast  bool         `json:"try_cast"`
	Function string       `json:"function_name"`
	Distinct bool         `json:"distinct"`
	Value    *Value       `json:"value"`
	// Raw is the whole expression as DuckDB wrote it.
	Raw json.RawMessage `json:"-"`
}

// LogicalType is a type as a syntax tree writes it.
type LogicalType struct {
	ID   string `json:"id"`
	Info *struct {
		Width int `json:"width"`
		Scale int `json:"scale"`
	} `json:"type_info"`
}

// Value is a constant's value.
type Value struct {
	Type   LogicalType     `json:"type"`
	IsNull bool            `json:"is_null"`
	Value  json.RawMessage `json:"value"`
}

// BaseTable is one base table a FROM clause reads.
type BaseTable struct {
	Catalog, Schema, Table, Alias string
}

// ReadTree reads the output of DuckDB's json_serialize_sql. A text DuckDB
// could not parse or serialize (anything but SELECTs) is a *PlanError.
func ReadTree(js []byte) (*Tree, error) {
	var head struct {
		Error   bool   `json:"error"`
		Type    string `json:"error_type"`
		Message string `json:"error_message"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("read DuckDB's syntax tree: %w", err)
	}
	if head.Error {
		return nil, &PlanError{Type: head.Type, Message: head.Message}
	}
	var t Tree
	if err := json.Unmarshal(js, &t); err != nil {
		return nil, fmt.Errorf("read DuckDB's syntax tree: %w", err)
	}
	return &t, nil
}

// UnmarshalJSON keeps the raw statement next to its node.
func (s *TreeStatement) UnmarshalJSON(b []byte) error {
	type plain TreeStatement
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	s.Raw = bytes.Clone(b)
	return nil
}

// UnmarshalJSON keeps the raw expression next to the fields read.
func (e *Expr) UnmarshalJSON(b []byte) error {
	type plain Expr
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.Raw = bytes.Clone(b)
	return nil
}

// Select is the tree's one SELECT node, or nil when the text is not one
// statement or that statement is not a plain SELECT (a UNION, say).
func (t *Tree) Select() *Node {
	if len(t.Statements) != 1 {
		return nil
	}
	n := t.Statements[0].Node
	if n == nil || n.Type != "SELECT_NODE" {
		return nil
	}
	return n
}

// RecursiveCTE reports whether any statement defines a recursive CTE
// anywhere, in a subquery's WITH too: a cte_map entry whose query is a
// RECURSIVE_CTE_NODE.
func (t *Tree) RecursiveCTE() bool {
	for _, st := range t.Statements {
		if Walk(st.Raw, func(m map[string]any) bool {
			cm, ok := m["cte_map"].(map[string]any)
			if !ok {
				return true
			}
			entries, _ := cm["map"].([]any)
			for _, e := range entries {
				if cteNodeType(e) == "RECURSIVE_CTE_NODE" {
					return false
				}
			}
			return true
		}) {
			return true
		}
	}
	return false
}

// cteNodeType is the node type of one cte_map entry's query:
// {"key": name, "value": {"query": {"node": {"type": …}}}}.
func cteNodeType(entry any) string {
	e, _ := entry.(map[string]any)
	v, _ := e["value"].(map[string]any)
	q, _ := v["query"].(map[string]any)
	n, _ := q["node"].(map[string]any)
	t, _ := n["type"].(string)
	return t
}

// Walk calls visit with every JSON object in raw, depth first, until it
// returns false; stopped reports whether it did. Raw that does not
// decode stops the walk at once.
func Walk(raw json.RawMessage, visit func(map[string]any) bool) (stopped bool) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(raw) == 0 || dec.Decode(&v) != nil {
		return true
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			if !visit(v) {
				return false
			}
			for _, c := range v {
				if !walk(c) {
					return false
				}
			}
		case []any:
			for _, c := range v {
				if !walk(c) {
					return false
				}
			}
		}
		return true
	}
	return !walk(v)
}

// BaseTables lists the base tables of a FROM clause that joins only base
// tables (a regular or cross join, no time travel); ok is false for
// anything else (subqueries, table functions). A nil FROM reads none.
func BaseTables(t *TableRef) (refs []BaseTable, ok bool) {
	if t == nil {
		return nil, true
	}
	switch t.Type {
	case "BASE_TABLE":
		if len(t.At) > 0 && string(t.At) != "null" {
			return nil, false
		}
		return []BaseTable{{Catalog: t.Catalog, Schema: t.Schema, Table: t.Table, Alias: t.Alias}}, true
	case "JOIN":
		if t.RefType != "REGULAR" && t.RefType != "CROSS" {
			return nil, false
		}
		l, ok1 := BaseTables(t.Left)
		r, ok2 := BaseTables(t.Right)
		return append(l, r...), ok1 && ok2
	}
	return nil, false
}

// Conjuncts splits a WHERE clause at its top-level ANDs.
func Conjuncts(e *Expr) []*Expr {
	if e == nil {
		return nil
	}
	if e.Class == "CONJUNCTION" && e.Type == "CONJUNCTION_AND" {
		var out []*Expr
		for _, c := range e.Children {
			out = append(out, Conjuncts(c)...)
		}
		return out
	}
	return []*Expr{e}
}
