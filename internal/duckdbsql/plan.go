package duckdbsql

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CallKind is how a plan calls a function.
type CallKind int

// The ways a plan calls a function.
const (
	// Scalar is a bound scalar function (operators included: + is one).
	Scalar CallKind = iota + 1
	// Aggregate is a bound aggregate function.
	Aggregate
	// Window is a bound aggregate run as a window function.
	Window
	// Table is a table function the plan scans (a LOGICAL_GET): seq_scan
	// for a table, read_parquet, range, …
	Table
	// Written is a function as written in SQL that the plan keeps
	// unbound: the body of a view or macro being created, a column's
	// default. It is whatever the name resolves to when the text is
	// bound later.
	Written
)

func (k CallKind) String() string {
	switch k {
	case Scalar:
		return "scalar"
	case Aggregate:
		return "aggregate"
	case Window:
		return "window"
	case Table:
		return "table"
	case Written:
		return "written"
	}
	return fmt.Sprintf("CallKind(%d)", int(k))
}

// Call is one function a plan calls.
type Call struct {
	Kind CallKind
	// Name is the function's name, lower-cased.
	Name string
	// Catalog and Schema say where a bound function was found (system
	// and main for DuckDB's own); for a written one, what the SQL said.
	Catalog, Schema string
	// Named are a table function's named parameters, as DuckDB bound
	// them: constants only.
	Named map[string]any
	// Files are the files a file-reading table function was bound to
	// read (read_parquet's), when its bind data lists them.
	Files []string
}

// Plan is what DuckDB's json_serialize_plan says of a text: the operators
// of its statements' plans and every function they call.
type Plan struct {
	// Roots is each statement's top operator, e.g. LOGICAL_INSERT.
	Roots []string
	// Operators are the kinds of every operator of every plan, each once.
	Operators []string
	// Calls are the functions called, in the order met.
	Calls []Call
}

// PlanError is json_serialize_plan's report of a statement it could not
// plan or serialize: a binder error, or an operator or function that
// does not support serialization.
type PlanError struct {
	Type, Message string
}

func (e *PlanError) Error() string {
	if e.Type == "" {
		return e.Message
	}
	return e.Type + ": " + e.Message
}

// ReadPlan reads the output of DuckDB's json_serialize_plan. A plan that
// DuckDB reported as an error is a *PlanError.
func ReadPlan(js []byte) (*Plan, error) {
	var top map[string]any
	if err := decodeTree(js, &top); err != nil {
		return nil, err
	}
	plans, ok := top["plans"].([]any)
	if !ok {
		return nil, fmt.Errorf("read plan: no plans in %.200s", js)
	}
	p := &Plan{}
	seen := map[string]bool{}
	for _, root := range plans {
		m, ok := root.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("read plan: a plan is a %T", root)
		}
		typ, _ := m["type"].(string)
		p.Roots = append(p.Roots, typ)
		p.walk(m, seen)
	}
	return p, nil
}

// walk collects the operators and calls of the JSON tree v. It visits
// every value, wherever it sits, so a call in a place this reader does not
// know (a lambda's body, a default, bind data) is still found.
func (p *Plan) walk(v any, seen map[string]bool) {
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			p.walk(x, seen)
		}
	case map[string]any:
		if typ, ok := v["type"].(string); ok && strings.HasPrefix(typ, "LOGICAL_") {
			if !seen[typ] {
				seen[typ] = true
				p.Operators = append(p.Operators, typ)
			}
			if typ == "LOGICAL_GET" {
				p.Calls = append(p.Calls, tableCall(v))
			}
		}
		if c, ok := boundCall(v); ok {
			p.Calls = append(p.Calls, c)
		}
		if name, ok := v["function_name"].(string); ok {
			schema, _ := v["schema"].(string)
			catalog, _ := v["catalog"].(string)
			p.Calls = append(p.Calls, Call{Kind: Written, Name: strings.ToLower(name), Catalog: catalog, Schema: schema})
		}
		if v["type"] == "BASE_TABLE" {
			// A table named as written: DuckDB may resolve a name that
			// is no table to a table function of no arguments (FROM
			// duckdb_logs), so the name counts as a call too.
			if name, ok := v["table_name"].(string); ok {
				schema, _ := v["schema_name"].(string)
				catalog, _ := v["catalog_name"].(string)
				p.Calls = append(p.Calls, Call{Kind: Written, Name: strings.ToLower(name), Catalog: catalog, Schema: schema})
			}
		}
		for _, x := range v {
			p.walk(x, seen)
		}
	}
}

// boundCall reads a bound function, aggregate or window expression.
func boundCall(m map[string]any) (Call, bool) {
	var kind CallKind
	switch m["expression_class"] {
	case "BOUND_FUNCTION":
		kind = Scalar
	case "BOUND_AGGREGATE":
		kind = Aggregate
	case "BOUND_WINDOW":
		kind = Window
	default:
		return Call{}, false
	}
	name, ok := m["name"].(string)
	if !ok {
		// A window function of DuckDB's own (row_number, lag, …) is an
		// expression type, not a function.
		return Call{}, false
	}
	catalog, _ := m["catalog_name"].(string)
	schema, _ := m["schema_name"].(string)
	return Call{Kind: kind, Name: strings.ToLower(name), Catalog: catalog, Schema: schema}, true
}

// tableCall reads a LOGICAL_GET: the table function it scans, its named
// parameters, and the files its bind data lists.
func tableCall(m map[string]any) Call {
	name, _ := m["name"].(string)
	catalog, _ := m["catalog_name"].(string)
	schema, _ := m["schema_name"].(string)
	c := Call{Kind: Table, Name: strings.ToLower(name), Catalog: catalog, Schema: schema}
	if named, ok := m["named_parameters"].([]any); ok {
		c.Named = map[string]any{}
		for _, kv := range named {
			kv, _ := kv.(map[string]any)
			key, _ := kv["key"].(string)
			c.Named[strings.ToLower(key)] = constant(kv["value"])
		}
	}
	if data, ok := m["function_data"].(map[string]any); ok {
		if files, ok := data["files"].([]any); ok {
			for _, f := range files {
				if s, ok := f.(string); ok {
					c.Files = append(c.Files, s)
				} else {
					// A file list this reader cannot read is no list:
					// whoever checks files sees one it cannot vouch for.
					c.Files = append(c.Files, fmt.Sprint(f))
				}
			}
		}
	}
	return c
}

// constant is a serialized DuckDB Value's value: {"type": …, "is_null":
// …, "value": …}; nil for NULL or what is not a value.
func constant(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if null, _ := m["is_null"].(bool); null {
		return nil
	}
	return m["value"]
}

// ReadParsed reads the output of DuckDB's json_serialize_sql: the calls
// the statements make as written (all of kind Written). A statement
// DuckDB cannot parse, or one that is not a SELECT, is a *PlanError.
func ReadParsed(js []byte) (*Plan, error) {
	var top map[string]any
	if err := decodeTree(js, &top); err != nil {
		return nil, err
	}
	p := &Plan{}
	p.walk(top["statements"], map[string]bool{})
	return p, nil
}

// decodeTree decodes a JSON tree DuckDB gave, with its numbers kept as
// written (and those that are not finite as strings); an error DuckDB
// reported in it is a *PlanError.
func decodeTree(js []byte, top *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(quoteNonFinite(js)))
	dec.UseNumber()
	if err := dec.Decode(top); err != nil {
		return fmt.Errorf("read DuckDB's JSON: %w", err)
	}
	if failed, _ := (*top)["error"].(bool); failed {
		typ, _ := (*top)["error_type"].(string)
		msg, _ := (*top)["error_message"].(string)
		return &PlanError{Type: typ, Message: msg}
	}
	return nil
}

// ReplaceParams takes the output of DuckDB's json_serialize_sql and puts
// an expression in place of every parameter (?, $1, $name), for a
// statement whose plan DuckDB cannot serialize while its parameters are
// unbound. The expression is the first of the select list of sample,
// json_serialize_sql's output for a one-expression SELECT, so that it is
// written as DuckDB writes it. Give it a scalar subquery, (SELECT NULL):
// unlike a NULL constant, it is not folded away when bound, so the
// functions the parameter goes to stay in the plan. The result is
// json_deserialize_sql's input. A parse error DuckDB reported is a
// *PlanError.
func ReplaceParams(js, sample []byte) ([]byte, error) {
	var top, smp map[string]any
	if err := decodeTree(js, &top); err != nil {
		return nil, err
	}
	if err := decodeTree(sample, &smp); err != nil {
		return nil, err
	}
	expr, err := firstSelected(smp)
	if err != nil {
		return nil, err
	}
	var replace func(v any) any
	replace = func(v any) any {
		switch v := v.(type) {
		case []any:
			for i := range v {
				v[i] = replace(v[i])
			}
		case map[string]any:
			if v["class"] == "PARAMETER" {
				return expr
			}
			for k, x := range v {
				v[k] = replace(x)
			}
		}
		return v
	}
	return json.Marshal(replace(top))
}

// firstSelected is the first expression of the first statement's select
// list of a parse tree.
func firstSelected(top map[string]any) (any, error) {
	stmts, _ := top["statements"].([]any)
	if len(stmts) > 0 {
		stmt, _ := stmts[0].(map[string]any)
		node, _ := stmt["node"].(map[string]any)
		list, _ := node["select_list"].([]any)
		if len(list) > 0 {
			return list[0], nil
		}
	}
	return nil, errors.New("read DuckDB's JSON: no select list in the sample")
}
