package duckdbsql_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

func TestLex_Kinds(t *testing.T) {
	tests := []struct {
		sql  string
		want []duckdbsql.Kind
		vals []string
	}{
		{"SELECT 'a''b', \"x\"\"y\"", []duckdbsql.Kind{duckdbsql.Ident, duckdbsql.String, duckdbsql.Punct, duckdbsql.Quoted}, []string{"SELECT", "a'b", "", `x"y`}},
		{"E'a\\'b' e'\\n'", []duckdbsql.Kind{duckdbsql.String, duckdbsql.String}, []string{"a'b", "n"}},
		{"X'ff' DATE'2020-01-01'", []duckdbsql.Kind{duckdbsql.Ident, duckdbsql.String, duckdbsql.Ident, duckdbsql.String}, []string{"X", "ff", "DATE", "2020-01-01"}},
		{"$$a;b$$ $tag$ $x$ ; $tag$", []duckdbsql.Kind{duckdbsql.Dollar, duckdbsql.Dollar}, []string{"a;b", " $x$ ; "}},
		{"? $1 $name $n_2", []duckdbsql.Kind{duckdbsql.Param, duckdbsql.Param, duckdbsql.Param, duckdbsql.Param}, nil},
		{"a$b$ 1.5e3 .5", []duckdbsql.Kind{duckdbsql.Ident, duckdbsql.Number, duckdbsql.Number}, nil},
		{"/* a /* b */ c */ x -- y\n z --w\rq", []duckdbsql.Kind{duckdbsql.Ident, duckdbsql.Ident, duckdbsql.Ident}, []string{"x", "z", "q"}},
		{"a::int+-1", []duckdbsql.Kind{duckdbsql.Ident, duckdbsql.Punct, duckdbsql.Punct, duckdbsql.Ident, duckdbsql.Punct, duckdbsql.Punct, duckdbsql.Number}, nil},
		{"héllo 'ü'", []duckdbsql.Kind{duckdbsql.Ident, duckdbsql.String}, []string{"héllo", "ü"}},
	}
	for _, tt := range tests {
		toks, err := duckdbsql.Lex(tt.sql)
		if err != nil {
			t.Errorf("Lex(%q): %v", tt.sql, err)
			continue
		}
		var kinds []duckdbsql.Kind
		for i, tok := range toks {
			kinds = append(kinds, tok.Kind)
			if tok.Text != tt.sql[tok.Pos:tok.End] {
				t.Errorf("Lex(%q)[%d]: Text %q, want sql[%d:%d] %q", tt.sql, i, tok.Text, tok.Pos, tok.End, tt.sql[tok.Pos:tok.End])
			}
			if tt.vals != nil && i < len(tt.vals) && tt.vals[i] != "" && tok.Value != tt.vals[i] {
				t.Errorf("Lex(%q)[%d]: Value %q, want %q", tt.sql, i, tok.Value, tt.vals[i])
			}
		}
		if !reflect.DeepEqual(kinds, tt.want) {
			t.Errorf("Lex(%q) kinds = %v, want %v", tt.sql, kinds, tt.want)
		}
	}
}

func TestLex_Unterminated(t *testing.T) {
	for _, sql := range []string{"'abc", `"abc`, "/* a /* b */", "$x$ abc", "E'\\'", "SELECT $$"} {
		if _, err := duckdbsql.Lex(sql); err == nil {
			t.Errorf("Lex(%q): no error, want an unterminated one", sql)
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		sql  string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1; SELECT 2", []string{"SELECT 1;", " SELECT 2"}},
		{"SELECT 1;;  SELECT 2;  ", []string{"SELECT 1;;", "  SELECT 2;  "}},
		{"; ; SELECT 1", []string{"; ; SELECT 1"}},
		{"SELECT ';' ; SELECT $$;$$; /* ; */ SELECT 3 -- ;", []string{"SELECT ';' ;", " SELECT $$;$$;", " /* ; */ SELECT 3 -- ;"}},
		{"SELECT 1 /* /* ; */ ; */", []string{"SELECT 1 /* /* ; */ ; */"}},
		{"-- only\n", nil},
	}
	for _, tt := range tests {
		stmts, err := duckdbsql.Split(tt.sql)
		if err != nil {
			t.Errorf("Split(%q): %v", tt.sql, err)
			continue
		}
		var got []string
		joined := ""
		for _, s := range stmts {
			got = append(got, s.Text)
			joined += s.Text
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.sql, got, tt.want)
		}
		if len(stmts) > 0 && joined != tt.sql {
			t.Errorf("Split(%q) joined = %q, want the text back", tt.sql, joined)
		}
	}
}

func TestLeadingWords(t *testing.T) {
	tests := []struct {
		sql  string
		n    int
		want []string
	}{
		{"EXPLAIN SELECT 1", 2, []string{"EXPLAIN", "SELECT"}},
		{"  explain\n\tanalyze insert", 2, []string{"EXPLAIN", "ANALYZE"}},
		{"/* x */ EXPLAIN /* y */ ANALYZE", 2, []string{"EXPLAIN", "ANALYZE"}},
		{"/* a /* nested */ comment */ EXPLAIN", 1, []string{"EXPLAIN"}},
		{"-- c\nEXPLAIN (ANALYZE) SELECT", 2, []string{"EXPLAIN", "("}},
		{"use main", 1, []string{"USE"}},
		{"/* unterminated", 1, nil},
		{"-- only a comment", 1, nil},
		{"", 2, nil},
		{"SET", 2, []string{"SET"}},
	}
	for _, tt := range tests {
		if got := duckdbsql.LeadingWords(tt.sql, tt.n); !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("LeadingWords(%q, %d) = %q, want %q", tt.sql, tt.n, got, tt.want)
		}
	}
}

func TestExplainTargets(t *testing.T) {
	tests := []struct {
		sql  string
		want []duckdbsql.Explained
	}{
		{"EXPLAIN SELECT 1", []duckdbsql.Explained{{Text: "SELECT 1"}}},
		{"explain analyze SELECT 1", []duckdbsql.Explained{{Text: "SELECT 1", Analyze: true}}},
		{"EXPLAIN (FORMAT json) SELECT 1", []duckdbsql.Explained{{Text: "(FORMAT json) SELECT 1"}, {Text: "SELECT 1"}}},
		{"EXPLAIN (ANALYZE, FORMAT json) DELETE FROM t", []duckdbsql.Explained{{Text: "(ANALYZE, FORMAT json) DELETE FROM t"}, {Text: "DELETE FROM t", Analyze: true}}},
		{"EXPLAIN (SELECT 1)", []duckdbsql.Explained{{Text: "(SELECT 1)"}}},
		{"/* x */ EXPLAIN /* (a) */ SELECT 2", []duckdbsql.Explained{{Text: "SELECT 2"}}},
	}
	for _, tt := range tests {
		got, ok := duckdbsql.ExplainTargets(tt.sql)
		if !ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ExplainTargets(%q) = %+v, %v; want %+v", tt.sql, got, ok, tt.want)
		}
	}
	for _, sql := range []string{"SELECT 1", "EXPLAIN", "EXPLAIN ANALYZE", "EXPLAIN 'x"} {
		if got, ok := duckdbsql.ExplainTargets(sql); ok {
			t.Errorf("ExplainTargets(%q) = %+v, want not ok", sql, got)
		}
	}
}

func FuzzLeadingWords(f *testing.F) {
	for _, s := range []string{"EXPLAIN ANALYZE x", "/* a */ -- b\n USE", "/*", "--", "(("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		words := duckdbsql.LeadingWords(sql, 2)
		if len(words) > 2 {
			t.Fatalf("got %d words, want at most 2", len(words))
		}
		for _, w := range words {
			if strings.TrimSpace(w) == "" {
				t.Fatalf("empty word in %q", words)
			}
		}
	})
}
