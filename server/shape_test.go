package server

import (
	"testing"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

func TestSQLShape(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"SELECT * FROM t WHERE id = 5", "SELECT * FROM t WHERE id = 123456", true},
		{"SELECT * FROM t WHERE name = 'ann'", "select * from t where name = 'o''brien'", false}, // case is kept
		{"SELECT * FROM t WHERE name = 'ann'", "SELECT * FROM t WHERE name = 'o''brien'", true},
		{"SELECT * FROM t WHERE id = 5 -- one", "SELECT  *\nFROM t /* two */ WHERE id = 6", true},
		{"SELECT * FROM t WHERE x > 1.5e3", "SELECT * FROM t WHERE x > .5", true},
		{"SELECT * FROM t WHERE b = E'\\x'", "SELECT * FROM t WHERE b = $$y$$", true},
		// Row counts stay.
		{"SELECT * FROM t LIMIT 10", "SELECT * FROM t LIMIT 10000000", false},
		{"SELECT * FROM t LIMIT 10 OFFSET 5", "SELECT * FROM t LIMIT 10 OFFSET 5000000", false},
		{"SELECT * FROM t USING SAMPLE 10", "SELECT * FROM t USING SAMPLE 90", false},
		{"SELECT * FROM t FETCH FIRST 1 ROWS ONLY", "SELECT * FROM t FETCH FIRST 9 ROWS ONLY", false},
		// Another table, another column, another operator, more values.
		{"SELECT * FROM t WHERE id = 5", "SELECT * FROM u WHERE id = 5", false},
		{"SELECT * FROM t WHERE id = 5", "SELECT * FROM t WHERE id > 5", false},
		{"SELECT * FROM t WHERE id IN (1, 2)", "SELECT * FROM t WHERE id IN (1, 2, 3)", false},
		// A parameter stands where a value would: the same shape.
		{"SELECT * FROM t WHERE id = ?", "SELECT * FROM t WHERE id = 5", true},
	} {
		sa, oka := sqlShape(tc.a)
		sb, okb := sqlShape(tc.b)
		if !oka || !okb {
			t.Errorf("sqlShape(%q), sqlShape(%q): not ok", tc.a, tc.b)
			continue
		}
		if (sa == sb) != tc.same {
			t.Errorf("shapes %q and %q: same %v, want %v", sa, sb, sa == sb, tc.same)
		}
	}
	for _, bad := range []string{"", "SELECT 'unterminated", "SELECT /* open"} {
		if s, ok := sqlShape(bad); ok {
			t.Errorf("sqlShape(%q) = %q, ok; want not ok", bad, s)
		}
	}
}

// FuzzSQLShape: no input panics, and a shape has no literal left but
// row counts.
func FuzzSQLShape(f *testing.F) {
	for _, s := range []string{"SELECT * FROM t WHERE id = 5", "SELECT 'a''b', $x$y$x$ LIMIT 3", "/* a /* b */ */ SELECT 1e5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		shape, ok := sqlShape(sql)
		if !ok {
			return
		}
		toks, err := duckdbsql.Lex(shape)
		if err != nil {
			t.Fatalf("the shape %q of %q does not lex: %v", shape, sql, err)
		}
		for _, tok := range toks {
			if tok.Kind == duckdbsql.String || tok.Kind == duckdbsql.Dollar {
				t.Fatalf("shape %q of %q keeps the literal %s", shape, sql, tok.Text)
			}
		}
	})
}
