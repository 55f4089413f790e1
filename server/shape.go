package server

import (
	"strings"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// sqlShape is sql with its literal values (numbers and strings) replaced
// by ?, so that a query run again with other values has the same shape:
// the admission classifier (admit.Classifier.Shape) takes a point lookup
// whose shape ran small before to be small without planning it. A number
// that sets how many rows a query returns (after LIMIT, OFFSET, TOP,
// SAMPLE, FIRST or NEXT) stays. ok is false when sql does not lex.
func sqlShape(sql string) (string, bool) {
	toks, err := duckdbsql.Lex(sql)
	if err != nil || len(toks) == 0 {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(sql))
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case t.Kind == duckdbsql.Number && i > 0 && countsRows(toks[i-1]):
			b.WriteString(t.Text)
		case t.Kind == duckdbsql.Number || t.Kind == duckdbsql.String || t.Kind == duckdbsql.Dollar:
			b.WriteByte('?')
		default:
			b.WriteString(t.Text)
		}
	}
	return b.String(), true
}

// countsRows reports whether a number after t sets a row count.
func countsRows(t token) bool {
	if t.Kind != duckdbsql.Ident {
		return false
	}
	switch strings.ToUpper(t.Text) {
	case "LIMIT", "OFFSET", "TOP", "SAMPLE", "FIRST", "NEXT":
		return true
	}
	return false
}
