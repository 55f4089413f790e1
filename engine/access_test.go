package engine

import (
	"reflect"
	"testing"

	"github.com/quiverdata/quiver/auth"
)

func TestLeadingWords(t *testing.T) {
	tests := []struct {
		sql  string
		n    int
		want []string
	}{
		{"EXPLAIN SELECT 1", 2, []string{"EXPLAIN", "SELECT"}},
		{"  explain\n\tanalyze insert", 2, []string{"EXPLAIN", "ANALYZE"}},
		{"/* x */ EXPLAIN /* y */ ANALYZE", 2, []string{"EXPLAIN", "ANALYZE"}},
		{"-- c\nEXPLAIN (ANALYZE) SELECT", 2, []string{"EXPLAIN", "("}},
		{"use main", 1, []string{"USE"}},
		{"/* unterminated", 1, nil},
		{"-- only a comment", 1, nil},
		{"", 2, nil},
		{"SET", 2, []string{"SET"}},
	}
	for _, tt := range tests {
		if got := leadingWords(tt.sql, tt.n); !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("leadingWords(%q, %d) = %q, want %q", tt.sql, tt.n, got, tt.want)
		}
	}
}

func FuzzLeadingWords(f *testing.F) {
	for _, s := range []string{"EXPLAIN ANALYZE x", "/* a */ -- b\n USE", "/*", "--", "(("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		words := leadingWords(sql, 2)
		if len(words) > 2 {
			t.Fatalf("got %d words, want at most 2", len(words))
		}
		for _, w := range words {
			if w == "" {
				t.Fatalf("empty word in %q", words)
			}
		}
	})
}

func TestExplainAccess(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want auth.Access
	}{
		{"EXPLAIN SELECT 1", auth.AccessRead},
		{"EXPLAIN COPY t TO '/x'", auth.AccessRead}, // only planned
		{"EXPLAIN ANALYZE SELECT 1", auth.AccessWrite},
		{"explain analyze insert into t values (1)", auth.AccessWrite},
		{"EXPLAIN (ANALYZE, FORMAT json) SELECT 1", auth.AccessWrite},
		{"EXPLAIN (FORMAT json) SELECT 1", auth.AccessRead},
		{"EXPLAIN (FORMAT json, ANALYZE) DELETE FROM t", auth.AccessWrite},
		{"EXPLAIN ANALYZE COPY (SELECT 1) TO '/tmp/x.csv'", auth.AccessAdmin},
		{"EXPLAIN ANALYZE CHECKPOINT", auth.AccessAdmin},
		{"EXPLAIN ANALYZE CALL pragma_version()", auth.AccessAdmin},
		{"EXPLAIN ANALYZE LOAD parquet", auth.AccessAdmin},
		{"EXPLAIN (ANALYZE) PRAGMA version", auth.AccessAdmin},
		{"EXPLAIN ANALYZE", auth.AccessAdmin},
		{"EXPLAIN (ANALYZE", auth.AccessAdmin},
		{"", auth.AccessAdmin},
	} {
		if got := explainAccess(leadingWords(tc.sql, 32)); got != tc.want {
			t.Errorf("explainAccess(%q) = %v, want %v", tc.sql, got, tc.want)
		}
	}
}
