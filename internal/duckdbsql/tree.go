package duckdbsql

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
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
	// Raw is the whole tree as DuckDB wrote it, for a rewrite of it
	// (AndWhere) to give back to json_deserialize_sql.
	Raw json.RawMessage `json:"-"`
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
	// Raw is the whole node as DuckDB wrote it, for Unread.
	Raw json.RawMessage `json:"-"`
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
	// Raw is the whole entry as DuckDB wrote it, for Unread.
	Raw json.RawMessage `json:"-"`
}

// Expr is an expression of a syntax tree.
type Expr struct {
	Class    string       `json:"class"`
	Type     string       `json:"type"`
	Alias    string       `json:"alias"`
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
	// Filter is an aggregate's FILTER (WHERE …).
	Filter *Expr `json:"filter"`
	// OrderBys is an aggregate's own ORDER BY: sum(x ORDER BY y).
	OrderBys *struct {
		Orders []json.RawMessage `json:"orders"`
	} `json:"order_bys"`
	// ExportState is set for an aggregate called with EXPORT_STATE.
	ExportState bool   `json:"export_state"`
	Value       *Value `json:"value"`
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
// could not parse or serialize (anything but SELECTs) is a *PlanError. A
// constant that is not finite reads as a string (see quoteNonFinite), in
// Raw too.
func ReadTree(js []byte) (*Tree, error) {
	js = quoteNonFinite(js)
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
	t.Raw = bytes.Clone(js)
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

// UnmarshalJSON keeps the raw node next to the fields read.
func (n *Node) UnmarshalJSON(b []byte) error {
	type plain Node
	if err := json.Unmarshal(b, (*plain)(n)); err != nil {
		return err
	}
	n.Raw = bytes.Clone(b)
	return nil
}

// UnmarshalJSON keeps the raw entry next to the fields read.
func (t *TableRef) UnmarshalJSON(b []byte) error {
	type plain TableRef
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return err
	}
	t.Raw = bytes.Clone(b)
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

// Unread returns the keys of the JSON object raw, but for those named in
// read, whose values are not empty (null, false, "", 0-length, or arrays
// and objects of nothing but empty values). A caller that must not miss
// a clause (the split planner, which may only cut a plain scan) refuses a
// node with any: a clause DuckDB adds later then makes it refuse rather
// than misread. ok is false when raw is not an object.
func Unread(raw json.RawMessage, read ...string) (keys []string, ok bool) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	for k, v := range m {
		if !slices.Contains(read, k) && !empty(v) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, true
}

// empty reports whether a decoded JSON value holds nothing.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, e := range x {
			if !empty(e) {
				return false
			}
		}
		return true
	}
	return false
}

// WalkExprs calls visit with every expression in raw, wherever it sits
// (any object with a "class"), depth first, until it returns false;
// stopped reports whether it did. It finds the expressions no field of
// Expr names (a CASE's checks, a lambda's body, a subquery's select
// list), so a check of every expression misses none. Raw that does not
// decode, or an expression that does not read as an Expr, stops the walk
// at once.
func WalkExprs(raw json.RawMessage, visit func(*Expr) bool) (stopped bool) {
	var walk func(raw json.RawMessage) bool
	walk = func(raw json.RawMessage) bool {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			return false
		}
		switch raw[0] {
		case '{':
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil {
				return false
			}
			if _, ok := m["class"]; ok {
				var e Expr
				if json.Unmarshal(raw, &e) != nil || !visit(&e) {
					return false
				}
			}
			for _, v := range m {
				if !walk(v) {
					return false
				}
			}
		case '[':
			var a []json.RawMessage
			if json.Unmarshal(raw, &a) != nil {
				return false
			}
			for _, v := range a {
				if !walk(v) {
					return false
				}
			}
		}
		return true
	}
	return !walk(raw)
}

// AndWhere takes the output of DuckDB's json_serialize_sql for one
// SELECT and adds the WHERE clause of cond, json_serialize_sql's output
// for a SELECT … WHERE, to its WHERE clause as one more conjunct (or
// several, flat, as DuckDB's parser builds an AND of several terms). The
// result is json_deserialize_sql's input. A parse error DuckDB reported
// is a *PlanError.
func AndWhere(js, cond []byte) ([]byte, error) {
	var top, c map[string]any
	if err := decodeTree(js, &top); err != nil {
		return nil, err
	}
	if err := decodeTree(cond, &c); err != nil {
		return nil, err
	}
	node := onlyNode(top)
	if node == nil || node["type"] != "SELECT_NODE" {
		return nil, errors.New("add to a WHERE clause: not one SELECT")
	}
	where, _ := onlyNode(c)["where_clause"].(map[string]any)
	if where == nil {
		return nil, errors.New("add to a WHERE clause: the condition has no WHERE clause")
	}
	terms := func(e any) []any {
		if m, ok := e.(map[string]any); ok && m["type"] == "CONJUNCTION_AND" {
			children, _ := m["children"].([]any)
			return children
		}
		return []any{e}
	}
	if node["where_clause"] == nil {
		node["where_clause"] = where
	} else {
		node["where_clause"] = map[string]any{
			"class": "CONJUNCTION", "type": "CONJUNCTION_AND", "alias": "",
			"query_location": json.Number("18446744073709551615"), // no place in the text
			"children":       append(terms(node["where_clause"]), terms(where)...),
		}
	}
	return json.Marshal(top)
}

// onlyNode is the node of a decoded tree's only statement, or nil.
func onlyNode(top map[string]any) map[string]any {
	stmts, _ := top["statements"].([]any)
	if len(stmts) != 1 {
		return nil
	}
	stmt, _ := stmts[0].(map[string]any)
	node, _ := stmt["node"].(map[string]any)
	return node
}

// SameTree reports whether two outputs of json_serialize_sql (or a tree
// and its rewrite, or two statements of trees) are the same but for where
// in the text each part was (query_location), which differs between a
// text and DuckDB's printing of it.
func SameTree(a, b []byte) (bool, error) {
	var ta, tb map[string]any
	if err := decodeTree(a, &ta); err != nil {
		return false, err
	}
	if err := decodeTree(b, &tb); err != nil {
		return false, err
	}
	return reflect.DeepEqual(positionless(ta), positionless(tb)), nil
}

// positionless is v without its query_location fields.
func positionless(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = positionless(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k != "query_location" {
				out[k] = positionless(e)
			}
		}
		return out
	}
	return v
}
