package engine

import (
	"reflect"
	"testing"
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
