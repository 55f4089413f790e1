package duckdbsql_test

import (
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

func TestMeasure(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want duckdbsql.Complexity
	}{
		{"SELECT 1", duckdbsql.Complexity{}},
		{"SELECT " + strings.Repeat("+", 2000) + "1", duckdbsql.Complexity{Depth: 2000}},
		{"SELECT " + strings.Repeat("+ ", 300) + "1", duckdbsql.Complexity{Depth: 300}},
		{"SELECT 1 +-+- 1", duckdbsql.Complexity{Depth: 1}},
		{"SELECT 1 +-+-+ 1", duckdbsql.Complexity{Depth: 5}},
		{"SELECT 1" + strings.Repeat(" + 1", 300), duckdbsql.Complexity{Depth: 300}},
		{"SELECT a || ', ' || b", duckdbsql.Complexity{Depth: 2}},
		{"SELECT 1::INT::INT, j->>'a'", duckdbsql.Complexity{Depth: 2}},
		{"SELECT a + b, c + d", duckdbsql.Complexity{Depth: 1}},
		{"SELECT 1 WHERE a + 1 > 2 AND b + 1 > 2", duckdbsql.Complexity{Depth: 2, Terms: 1}},
		{"SELECT a >= -b", duckdbsql.Complexity{Depth: 2}},
		{"SELECT NOT NOT true", duckdbsql.Complexity{Depth: 2}},
		{"SELECT a IS NOT NULL", duckdbsql.Complexity{Depth: 2}},
		{"SELECT (((1)))", duckdbsql.Complexity{Depth: 3}},
		{"SELECT -(-(1))", duckdbsql.Complexity{Depth: 4}},
		{"SELECT abs(abs(abs(1)))", duckdbsql.Complexity{Depth: 3}},
		{"SELECT [1, [2, {'a': 3}]]", duckdbsql.Complexity{Depth: 4}},
		{"SELECT (1) + (2) + (3) + (4)", duckdbsql.Complexity{Depth: 4}},
		{"SELECT CASE WHEN a THEN CASE WHEN b THEN 1 END END", duckdbsql.Complexity{Depth: 2}},
		{"SELECT CASE WHEN a THEN 1 END, CASE WHEN b THEN 2 END", duckdbsql.Complexity{Depth: 1}},
		{"SELECT 1 IN (1, 2, 3)", duckdbsql.Complexity{Depth: 2}},
		{"SELECT 1 WHERE a AND b OR c", duckdbsql.Complexity{Terms: 2}},
		{"SELECT 1 WHERE a BETWEEN 1 AND 2", duckdbsql.Complexity{Depth: 1, Terms: 1}},
		{"SELECT 1 UNION ALL SELECT 2; SELECT 1 UNION SELECT 2 EXCEPT SELECT 3", duckdbsql.Complexity{Terms: 2}},
		{"SELECT 1 INTERSECT SELECT 1", duckdbsql.Complexity{Terms: 1}},
		{"WITH a AS (SELECT 1), b AS MATERIALIZED (SELECT 2), c AS NOT MATERIALIZED (SELECT 3) SELECT 1",
			duckdbsql.Complexity{Depth: 2, Subqueries: 1, Terms: 3}},
		{"SELECT a AS b, c AS d FROM t AS u", duckdbsql.Complexity{}},
		{"SELECT (SELECT (SELECT 1))", duckdbsql.Complexity{Depth: 2, Subqueries: 2}},
		{"SELECT 1 WHERE EXISTS (SELECT 1 WHERE x IN (SELECT 2))", duckdbsql.Complexity{Depth: 3, Subqueries: 2}},
		{"SELECT (SELECT 1), (SELECT 2), (VALUES (3))", duckdbsql.Complexity{Depth: 2, Subqueries: 1}},
		{"SELECT * FROM (SELECT * FROM (FROM t)) JOIN (SELECT 1) USING (a), LATERAL (SELECT 2)", duckdbsql.Complexity{Depth: 2}},
		{"SELECT * FROM (SELECT (SELECT 1) FROM (SELECT 1))", duckdbsql.Complexity{Depth: 2, Subqueries: 1}},
		// Strings, names and comments hold no structure.
		{"SELECT '((((+++', \"(((+++\", $$((($$ -- ((((+++\n", duckdbsql.Complexity{}},
		{"SELECT 1 /* ((( /* nested */ +++ */", duckdbsql.Complexity{}},
		{"SELECT 'AND OR UNION' AS \"AND\"", duckdbsql.Complexity{}},
		// Unbalanced: a closer with nothing open is ignored, and SQL the
		// lexer cannot finish is measured as far as it reads.
		{"SELECT ')' )))) (", duckdbsql.Complexity{Depth: 1}},
		{"SELECT END END CASE", duckdbsql.Complexity{Depth: 1}},
		{"SELECT ((1 'unterminated ((((", duckdbsql.Complexity{Depth: 2}},
		{"", duckdbsql.Complexity{}},
	} {
		name := tc.sql
		if len(name) > 40 {
			name = name[:40] + "…"
		}
		t.Run(name, func(t *testing.T) {
			if got := duckdbsql.Measure(tc.sql); got != tc.want {
				t.Errorf("Measure(%q) = %+v, want %+v", tc.sql, got, tc.want)
			}
		})
	}
}

// TestMeasure_Large measures statements of a few megabytes in each of the
// shapes, which a measure slower than linear would not finish.
func TestMeasure_Large(t *testing.T) {
	const n = 1 << 20
	for _, tc := range []struct {
		sql  string
		want duckdbsql.Complexity
	}{
		{"SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n), duckdbsql.Complexity{Depth: n}},
		{"SELECT " + strings.Repeat("+", n) + "1", duckdbsql.Complexity{Depth: n}},
		{"SELECT 1" + strings.Repeat(" OR 1", n), duckdbsql.Complexity{Terms: n}},
		{"SELECT 1 IN (1" + strings.Repeat(", 1", n) + ")", duckdbsql.Complexity{Depth: 2}},
	} {
		if got := duckdbsql.Measure(tc.sql); got != tc.want {
			t.Errorf("Measure(%.30q…) = %+v, want %+v", tc.sql, got, tc.want)
		}
	}
}

// FuzzMeasure: Measure never panics, stays within the text's tokens, is
// at least the deepest bracket nesting and the longest group of operator
// characters the lexer sees, and wrapping a statement whose brackets
// never close more than they opened in brackets makes it exactly one
// level deeper and no simpler.
func FuzzMeasure(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "SELECT ++++1", "SELECT -(-(1))", "SELECT CASE WHEN a THEN (1 END)",
		"WITH a AS NOT MATERIALIZED (SELECT 1) SELECT 1 UNION SELECT 2",
		"SELECT 'x' ; SELECT a AND b OR NOT c", "))) END ((( CASE", "SELECT /* ((", "SELECT $$ ((",
		"SELECT E'\\'' || [1, {'a': (2)}]", "SELECT (SELECT 1 FROM (SELECT (WITH a AS (SELECT 1) FROM a)))",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		got := duckdbsql.Measure(sql)
		toks, err := duckdbsql.Lex(sql)
		if got.Depth < 0 || got.Terms < 0 || got.Depth > len(sql) || got.Terms > len(sql) {
			t.Fatalf("Measure(%q) = %+v, outside 0..%d", sql, got, len(sql))
		}
		if err != nil {
			return
		}
		if got.Depth > len(toks) || got.Terms > len(toks) {
			t.Fatalf("Measure(%q) = %+v, more than its %d tokens", sql, got, len(toks))
		}
		brackets, deepest, group, longest, balanced := 0, 0, 0, 0, true
		for i, tok := range toks {
			switch {
			case tok.Is("(") || tok.Is("[") || tok.Is("{"):
				brackets++
			case tok.Is(")") || tok.Is("]") || tok.Is("}"):
				brackets--
				balanced = balanced && brackets >= 0
				brackets = max(brackets, 0)
			}
			deepest = max(deepest, brackets)
			if tok.Kind == duckdbsql.Punct && len(tok.Text) == 1 && strings.Contains("+-*/<>=~!@#^&|`%:", tok.Text) {
				if group > 0 && toks[i-1].End == tok.Pos {
					group++
				} else {
					group = 1
				}
			} else {
				group = 0
			}
			if group > 4 {
				longest = max(longest, group)
			}
		}
		if got.Depth < deepest || got.Depth < longest {
			t.Fatalf("Measure(%q).Depth = %d, want at least %d (brackets) and %d (operator characters)", sql, got.Depth, deepest, longest)
		}
		if got.Subqueries > got.Depth {
			t.Fatalf("Measure(%q) = %+v: more subqueries than levels", sql, got)
		}
		if !balanced {
			return
		}
		wrapped := duckdbsql.Measure("(" + sql + "\n)")
		if wrapped.Depth != got.Depth+1 || wrapped.Terms < got.Terms ||
			wrapped.Subqueries < got.Subqueries || wrapped.Subqueries > got.Subqueries+1 {
			t.Fatalf("Measure of %q in brackets = %+v, want depth %d, terms at least %d and subqueries %d or one more",
				sql, wrapped, got.Depth+1, got.Terms, got.Subqueries)
		}
	})
}
