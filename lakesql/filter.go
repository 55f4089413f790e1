package lakesql

import (
	"encoding/json"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// pruneFilter turns the WHERE conjuncts of a query that can be checked
// against the Iceberg table sch into one Iceberg expression; the rest are
// left to DuckDB, which applies the whole WHERE clause anyway. The filter
// only chooses which files to read, so it must be implied by the WHERE
// clause: only null-rejecting comparisons of a column with a constant of a
// matching type are taken. matches says whether a column's qualifier names
// the lake table (an empty qualifier, when it is the only table).
func pruneFilter(where *duckdbsql.Expr, sch *iceberg.Schema, matches func(qualifier string) bool) iceberg.BooleanExpression {
	var parts []iceberg.BooleanExpression
	for _, c := range duckdbsql.Conjuncts(where) {
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

func conjunctFilter(e *duckdbsql.Expr, sch *iceberg.Schema, matches func(string) bool) iceberg.BooleanExpression {
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
func column(e *duckdbsql.Expr, sch *iceberg.Schema, matches func(string) bool) (iceberg.NestedField, bool) {
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
func literal(e *duckdbsql.Expr, field iceberg.NestedField) (iceberg.Literal, bool) {
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
func constantText(e *duckdbsql.Expr, field iceberg.NestedField) (iceberg.Literal, bool) {
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
