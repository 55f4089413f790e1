package engine

import (
	"testing"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

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
		if got := explainAccess(duckdbsql.LeadingWords(tc.sql, 32)); got != tc.want {
			t.Errorf("explainAccess(%q) = %v, want %v", tc.sql, got, tc.want)
		}
	}
}
