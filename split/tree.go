package split

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/quiverdata/quiver/engine"
)

// tree is a statement's syntax tree as json_serialize_sql gives it,
// decoded with numbers kept as their text.
type tree struct {
	text string
	v    map[string]any
}

// serialize parses sql with DuckDB's parser.
func serialize(ctx context.Context, c *engine.Conn, sql string) (tree, error) {
	out, err := queryStrings(ctx, c, "SELECT json_serialize_sql($1::VARCHAR)", sql)
	if err != nil {
		return tree{}, err
	}
	return decodeTree(out[0])
}

func decodeTree(text string) (tree, error) {
	v, err := decodeJSON(text)
	if err != nil {
		return tree{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return tree{}, errors.New("json_serialize_sql gave no object")
	}
	if failed, _ := m["error"].(bool); failed {
		msg, _ := m["error_message"].(string)
		return tree{}, fmt.Errorf("serialize sql: %s", msg)
	}
	return tree{text: text, v: m}, nil
}

func decodeJSON(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode syntax tree: %w", err)
	}
	return v, nil
}

// tableRef is a table name as written: catalog and schema may be empty.
type tableRef struct {
	catalog, schema, name string
}

// sql is the name quoted for DuckDB.
func (t tableRef) sql() string {
	var parts []string
	for _, p := range []string{t.catalog, t.schema, t.name} {
		if p != "" {
			parts = append(parts, engine.QuoteIdent(p))
		}
	}
	return strings.Join(parts, ".")
}

// scanShape is what a pure scan of one table refers to.
type scanShape struct {
	table tableRef
	// functions are the distinct lower-case names of the functions called.
	functions []string
}

// scan checks the tree is one SELECT that only projects and filters one
// base table, and returns the table and the functions it calls. Any part
// of the tree it does not know must be empty, so a clause DuckDB adds later
// makes a query unsplittable rather than wrongly split.
func (t tree) scan() (scanShape, bool) {
	var sc scanShape
	stmts, ok := t.v["statements"].([]any)
	if !ok || len(stmts) != 1 {
		return sc, false
	}
	stmt, ok := stmts[0].(map[string]any)
	if !ok {
		return sc, false
	}
	node, ok := stmt["node"].(map[string]any)
	if !ok {
		return sc, false
	}
	for k, v := range stmt {
		if k != "node" && k != "named_param_map" && !empty(v) {
			return sc, false
		}
	}
	fns := map[string]bool{}
	for k, v := range node {
		switch k {
		case "type":
			if v != "SELECT_NODE" {
				return sc, false
			}
		case "select_list":
			list, ok := v.([]any)
			if !ok || len(list) == 0 || !plainExpr(list, fns) {
				return sc, false
			}
		case "where_clause":
			if v != nil && !plainExpr(v, fns) {
				return sc, false
			}
		case "from_table":
			if sc.table, ok = baseTable(v); !ok {
				return sc, false
			}
		case "aggregate_handling":
			if v != "STANDARD_HANDLING" {
				return sc, false
			}
		case "query_location":
		default:
			// modifiers (DISTINCT, ORDER BY, LIMIT), cte_map,
			// group_expressions, group_sets, having, sample, qualify.
			if !empty(v) {
				return sc, false
			}
		}
	}
	if sc.table.name == "" {
		return sc, false
	}
	for name := range fns {
		sc.functions = append(sc.functions, name)
	}
	sort.Strings(sc.functions)
	return sc, true
}

// baseTable reads a FROM clause that names one table, with no sample,
// time travel or column aliases.
func baseTable(v any) (tableRef, bool) {
	var t tableRef
	from, ok := v.(map[string]any)
	if !ok || from["type"] != "BASE_TABLE" {
		return t, false
	}
	for k, v := range from {
		switch k {
		case "type", "alias", "query_location":
		case "table_name":
			t.name, ok = v.(string)
		case "schema_name":
			t.schema, ok = v.(string)
		case "catalog_name":
			t.catalog, ok = v.(string)
		default: // sample, at_clause, column_name_alias
			ok = empty(v)
		}
		if !ok {
			return t, false
		}
	}
	return t, t.name != ""
}

// plainClasses are the expression classes of a pure scan. A FUNCTION is
// checked further: by its fields here, by its kind in duckdb_functions().
var plainClasses = map[string]bool{
	"COLUMN_REF": true, "CONSTANT": true, "FUNCTION": true, "OPERATOR": true,
	"COMPARISON": true, "CONJUNCTION": true, "CASE": true, "CAST": true,
	"BETWEEN": true, "COLLATE": true, "PARAMETER": true, "STAR": true,
	"LAMBDA": true, "LAMBDA_REF": true, "POSITIONAL_REFERENCE": true,
}

// plainExpr reports whether every expression in v is of a plain class: no
// subquery, window function, or aggregate's FILTER, ORDER BY or DISTINCT.
// It adds the names of the functions called to fns.
func plainExpr(v any, fns map[string]bool) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if !plainExpr(e, fns) {
				return false
			}
		}
	case map[string]any:
		if typ, _ := x["type"].(string); strings.HasSuffix(typ, "_NODE") {
			return false // a query inside an expression
		}
		if class, ok := x["class"]; ok {
			name, _ := class.(string)
			if !plainClasses[name] {
				return false
			}
			if name == "FUNCTION" && !plainFunction(x, fns) {
				return false
			}
		}
		for _, e := range x {
			if !plainExpr(e, fns) {
				return false
			}
		}
	}
	return true
}

func plainFunction(f map[string]any, fns map[string]bool) bool {
	name, _ := f["function_name"].(string)
	if name == "" || f["filter"] != nil || f["distinct"] == true || f["export_state"] == true {
		return false
	}
	if ob, ok := f["order_bys"].(map[string]any); ok && !empty(ob["orders"]) {
		return false
	}
	fns[strings.ToLower(name)] = true
	return true
}

// empty reports whether a tree value holds nothing: null, false, "", or
// an array or object of empty values.
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

// rewrite returns the SQL of t with the part's row-id range added to its
// WHERE clause. The conjuncts come from DuckDB's parser too, and the
// result is parsed again and must give the rewritten tree exactly (but for
// source positions): otherwise ErrNotSplittable.
func rewrite(ctx context.Context, c *engine.Conn, t tree, pt part) (string, error) {
	var conds []string
	if pt.Lo != nil {
		conds = append(conds, fmt.Sprintf("rowid >= %d", *pt.Lo))
	}
	if pt.Hi != nil {
		conds = append(conds, fmt.Sprintf("rowid < %d", *pt.Hi))
	}
	if len(conds) == 0 {
		return "", errors.New("row-id part has neither bound")
	}
	ct, err := serialize(ctx, c, "SELECT 1 WHERE "+strings.Join(conds, " AND "))
	if err != nil {
		return "", fmt.Errorf("parse row-id range: %w", err)
	}
	rangeWhere, _ := selectNode(ct)["where_clause"].(map[string]any)
	if rangeWhere == nil {
		return "", errors.New("parse row-id range: no WHERE clause")
	}
	// A fresh copy of t's tree to change.
	v, err := decodeJSON(t.text)
	if err != nil {
		return "", err
	}
	mod := tree{v: v.(map[string]any)}
	node := selectNode(mod)
	if node == nil {
		return "", ErrNotSplittable
	}
	node["where_clause"] = and(node["where_clause"], rangeWhere)
	b, err := json.Marshal(mod.v)
	if err != nil {
		return "", fmt.Errorf("encode syntax tree: %w", err)
	}
	out, err := queryStrings(ctx, c, "SELECT s, json_serialize_sql(s) FROM (SELECT json_deserialize_sql($1::JSON) AS s)", string(b))
	if err != nil {
		return "", fmt.Errorf("%w: print the rewritten query: %v", ErrNotSplittable, err)
	}
	back, err := decodeTree(out[1])
	if err != nil {
		return "", fmt.Errorf("%w: parse the rewritten query: %v", ErrNotSplittable, err)
	}
	if !reflect.DeepEqual(positionless(back.v), positionless(mod.v)) {
		return "", fmt.Errorf("%w: DuckDB does not print this query back faithfully", ErrNotSplittable)
	}
	return out[0], nil
}

// selectNode is the node of a tree's only statement, or nil.
func selectNode(t tree) map[string]any {
	stmts, _ := t.v["statements"].([]any)
	if len(stmts) != 1 {
		return nil
	}
	stmt, _ := stmts[0].(map[string]any)
	node, _ := stmt["node"].(map[string]any)
	return node
}

// and conjoins a WHERE clause (nil when there is none) with the range
// conditions, flat as DuckDB's parser builds an AND of several terms.
func and(where any, rng map[string]any) any {
	terms := func(e any) []any {
		if m, ok := e.(map[string]any); ok && m["type"] == "CONJUNCTION_AND" {
			children, _ := m["children"].([]any)
			return children
		}
		return []any{e}
	}
	if where == nil {
		return rng
	}
	children := append(append([]any{}, terms(where)...), terms(rng)...)
	return map[string]any{
		"class": "CONJUNCTION", "type": "CONJUNCTION_AND", "alias": "",
		"query_location": json.Number("18446744073709551615"), "children": children,
	}
}

// positionless is v without query_location fields, which say where in the
// text an expression was and differ between the original and the printed
// SQL.
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
