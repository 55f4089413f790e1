package lakesql

import (
	"encoding/json"
	"strings"

	"github.com/apache/iceberg-go"
)

// The shapes of DuckDB's json_serialize_sql output that pruning reads.
type (
	parsed struct {
		Error      bool     `json:"error"`
		Statements []stmtJS `json:"statements"`
	}
	stmtJS struct {
		Node *nodeJS `json:"node"`
	}
	nodeJS struct {
		Type      string            `json:"type"`
		Modifiers []json.RawMessage `json:"modifiers"`
		CTEMap    struct {
			Map []json.RawMessage `json:"map"`
		} `json:"cte_map"`
		SelectList []*exprJS         `json:"select_list"`
		From       *tableRefJS       `json:"from_table"`
		Where      *exprJS           `json:"where_clause"`
		GroupBy    []json.RawMessage `json:"group_expressions"`
		Having     *exprJS           `json:"having"`
		Qualify    *exprJS           `json:"qualify"`
		Sample     json.RawMessage   `json:"sample"`
		Aggregate  string            `json:"aggregate_handling"`
	}
	tableRefJS struct {
		Type     string          `json:"type"`
		Alias    string          `json:"alias"`
		Catalog  string          `json:"catalog_name"`
		Schema   string          `json:"schema_name"`
		Table    string          `json:"table_name"`
		Left     *tableRefJS     `json:"left"`
		Right    *tableRefJS     `json:"right"`
		JoinType string          `json:"join_type"`
		RefType  string          `json:"ref_type"`
		Sample   json.RawMessage `json:"sample"`
		At       json.RawMessage `json:"at_clause"`
	}
	exprJS struct {
		Class    string    `json:"class"`
		Type     string    `json:"type"`
		Columns  []string  `json:"column_names"`
		Children []*exprJS `json:"children"`
		Left     *exprJS   `json:"left"`
		Right    *exprJS   `json:"right"`
		Input    *exprJS   `json:"input"`
		Lower    *exprJS   `json:"lower"`
		Upper    *exprJS   `json:"upper"`
		Child    *exprJS   `json:"child"`
		CastType *typeJS   `json:"cast_type"`
		TryCast  bool      `json:"try_cast"`
		Function string    `json:"function_name"`
		Distinct bool      `json:"distinct"`
		Value    *valueJS  `json:"value"`
		// raw is the whole expression, for walks that must see every
		// child.
		raw json.RawMessage
	}
	typeJS struct {
		ID   string `json:"id"`
		Info *struct {
			Width int `json:"width"`
			Scale int `json:"scale"`
		} `json:"type_info"`
	}
	valueJS struct {
		Type   typeJS          `json:"type"`
		IsNull bool            `json:"is_null"`
		Value  json.RawMessage `json:"value"`
	}
)

// a tableRef is one base table of a query's FROM clause.
type tableRef struct {
	catalog, schema, table, alias string
}

// baseTables lists the base tables of a FROM clause that joins only base
// tables; ok is false for anything else (subqueries, table functions).
func baseTables(t *tableRefJS) (refs []tableRef, ok bool) {
	if t == nil {
		return nil, true
	}
	switch t.Type {
	case "BASE_TABLE":
		if len(t.At) > 0 && string(t.At) != "null" {
			return nil, false
		}
		return []tableRef{{catalog: t.Catalog, schema: t.Schema, table: t.Table, alias: t.Alias}}, true
	case "JOIN":
		if t.RefType != "REGULAR" && t.RefType != "CROSS" {
			return nil, false
		}
		l, ok1 := baseTables(t.Left)
		r, ok2 := baseTables(t.Right)
		return append(l, r...), ok1 && ok2
	}
	return nil, false
}

// conjuncts splits a WHERE clause at its top-level ANDs.
func conjuncts(e *exprJS) []*exprJS {
	if e == nil {
		return nil
	}
	if e.Class == "CONJUNCTION" && e.Type == "CONJUNCTION_AND" {
		var out []*exprJS
		for _, c := range e.Children {
			out = append(out, conjuncts(c)...)
		}
		return out
	}
	return []*exprJS{e}
}

// pruneFilter turns the WHERE conjuncts of a query that can be checked
// against the Iceberg table sch into one Iceberg expression; the rest are
// left to DuckDB, which applies the whole WHERE clause anyway. The filter
// only chooses which files to read, so it must be implied by the WHERE
// clause: only null-rejecting comparisons of a column with a constant of a
// matching type are taken. matches says whether a column's qualifier names
// the lake table (an empty qualifier, when it is the only table).
func pruneFilter(where *exprJS, sch *iceberg.Schema, matches func(qualifier string) bool) iceberg.BooleanExpression {
	var parts []iceberg.BooleanExpression
	for _, c := range conjuncts(where) {
		e := conjunctFilter(c, sch, matches)
		if e == nil {
			continue
		}
		if _, err := iceberg.BindExpr(sch, e, false); err != nil {
			continue
		}
		parts = append(parts, e)
	}
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return parts[0]
	}
	return iceberg.NewAnd(parts[0], parts[1], parts[2:]...)
}

var comparisonOps = map[string]iceberg.Operation{
	"COMPARE_EQUAL":                iceberg.OpEQ,
	"COMPARE_LESSTHAN":             iceberg.OpLT,
	"COMPARE_LESSTHANOREQUALTO":    iceberg.OpLTEQ,
	"COMPARE_GREATERTHAN":          iceberg.OpGT,
	"COMPARE_GREATERTHANOREQUALTO": iceberg.OpGTEQ,
}

// flipped is the operation with its operands swapped: 5 < x is x > 5.
var flipped = map[iceberg.Operation]iceberg.Operation{
	iceberg.OpEQ: iceberg.OpEQ, iceberg.OpLT: iceberg.OpGT, iceberg.OpLTEQ: iceberg.OpGTEQ,
	iceberg.OpGT: iceberg.OpLT, iceberg.OpGTEQ: iceberg.OpLTEQ,
}

func conjunctFilter(e *exprJS, sch *iceberg.Schema, matches func(string) bool) iceberg.BooleanExpression {
	switch {
	case e.Class == "COMPARISON":
		op, ok := comparisonOps[e.Type]
		if !ok {
			return nil
		}
		col, val := e.Left, e.Right
		if col == nil || val == nil {
			return nil
		}
		if col.Class != "COLUMN_REF" {
			col, val, op = val, col, flipped[op]
		}
		field, ok := column(col, sch, matches)
		if !ok {
			return nil
		}
		lit, ok := literal(val, field)
		if !ok {
			return nil
		}
		return iceberg.LiteralPredicate(op, iceberg.Reference(field.Name), lit)
	case e.Class == "BETWEEN":
		field, ok := column(e.Input, sch, matches)
		if !ok {
			return nil
		}
		lo, ok1 := literal(e.Lower, field)
		hi, ok2 := literal(e.Upper, field)
		if !ok1 || !ok2 {
			return nil
		}
		ref := iceberg.Reference(field.Name)
		return iceberg.NewAnd(iceberg.LiteralPredicate(iceberg.OpGTEQ, ref, lo), iceberg.LiteralPredicate(iceberg.OpLTEQ, ref, hi))
	case e.Class == "OPERATOR" && e.Type == "COMPARE_IN" && len(e.Children) > 1:
		field, ok := column(e.Children[0], sch, matches)
		if !ok {
			return nil
		}
		lits := make([]iceberg.Literal, 0, len(e.Children)-1)
		for _, c := range e.Children[1:] {
			lit, ok := literal(c, field)
			if !ok {
				return nil
			}
			lits = append(lits, lit)
		}
		return iceberg.SetPredicate(iceberg.OpIn, iceberg.Reference(field.Name), lits)
	}
	return nil
}

// column resolves a column reference to a top-level field of sch.
func column(e *exprJS, sch *iceberg.Schema, matches func(string) bool) (iceberg.NestedField, bool) {
	if e == nil || e.Class != "COLUMN_REF" || len(e.Columns) == 0 || len(e.Columns) > 2 {
		return iceberg.NestedField{}, false
	}
	qualifier := ""
	if len(e.Columns) == 2 {
		qualifier = e.Columns[0]
	}
	if !matches(qualifier) {
		return iceberg.NestedField{}, false
	}
	return sch.FindFieldByNameCaseInsensitive(e.Columns[len(e.Columns)-1])
}

// literal converts a constant (or a cast of one) to an Iceberg literal for
// field, when the pair is one whose comparison means the same in DuckDB
// and in Iceberg's file statistics.
func literal(e *exprJS, field iceberg.NestedField) (iceberg.Literal, bool) {
	if e == nil {
		return nil, false
	}
	if e.Class == "CAST" && !e.TryCast && e.Child != nil && e.Child.Class == "CONSTANT" {
		// DATE '2026-01-01', '…'::TIMESTAMP: the text goes to Iceberg,
		// which parses it as the column's type.
		switch field.Type.(type) {
		case iceberg.DateType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		default:
			return nil, false
		}
		return constantText(e.Child, field)
	}
	if e.Class != "CONSTANT" || e.Value == nil || e.Value.IsNull {
		return nil, false
	}
	v := e.Value
	switch field.Type.(type) {
	case iceberg.Int32Type, iceberg.Int64Type:
		switch v.Type.ID {
		case "TINYINT", "SMALLINT", "INTEGER", "BIGINT":
			var n int64
			if json.Unmarshal(v.Value, &n) != nil {
				return nil, false
			}
			return iceberg.NewLiteral(n), true
		}
	case iceberg.Float32Type, iceberg.Float64Type:
		switch v.Type.ID {
		case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "DOUBLE", "FLOAT":
			var f float64
			if json.Unmarshal(v.Value, &f) != nil {
				return nil, false
			}
			return iceberg.NewLiteral(f), true
		}
	case iceberg.StringType:
		if v.Type.ID == "VARCHAR" {
			var s string
			if json.Unmarshal(v.Value, &s) != nil {
				return nil, false
			}
			return iceberg.NewLiteral(s), true
		}
	case iceberg.BooleanType:
		if v.Type.ID == "BOOLEAN" {
			var b bool
			if json.Unmarshal(v.Value, &b) != nil {
				return nil, false
			}
			return iceberg.NewLiteral(b), true
		}
	case iceberg.DateType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return constantText(e, field)
	}
	return nil, false
}

// constantText converts a VARCHAR constant to field's type through
// Iceberg's own parsing.
func constantText(e *exprJS, field iceberg.NestedField) (iceberg.Literal, bool) {
	if e.Value == nil || e.Value.IsNull || e.Value.Type.ID != "VARCHAR" {
		return nil, false
	}
	var s string
	if json.Unmarshal(e.Value.Value, &s) != nil {
		return nil, false
	}
	s = strings.TrimSpace(s)
	if _, ok := field.Type.(iceberg.DateType); !ok && len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:] // Iceberg parses ISO 8601 with a T
	}
	lit, err := iceberg.NewLiteral(s).To(field.Type)
	if err != nil {
		return nil, false
	}
	return lit, true
}

// UnmarshalJSON keeps the raw expression next to the fields read.
func (e *exprJS) UnmarshalJSON(b []byte) error {
	type plain exprJS
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.raw = append(json.RawMessage(nil), b...)
	return nil
}
