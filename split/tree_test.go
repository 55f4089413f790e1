package split

import (
	"context"
	"slices"
	"testing"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// TestScan reads the shapes of queries from DuckDB's syntax trees: a
// plain scan gives its table and functions; any clause past a projection
// and a filter of one table, however DuckDB writes it, gives none.
func TestScan(t *testing.T) {
	_, c := open(t, 10)
	ctx := context.Background()
	for _, tt := range []struct {
		sql   string
		ok    bool
		table duckdbsql.BaseTable
		fns   []string
	}{
		{sql: "SELECT id, upper(s) FROM t WHERE grp = 1", ok: true, table: duckdbsql.BaseTable{Table: "t"}, fns: []string{"upper"}},
		{sql: "SELECT CASE WHEN id + 1 > 1 THEN lower(s) END FROM memory.main.t AS x", ok: true,
			table: duckdbsql.BaseTable{Catalog: "memory", Schema: "main", Table: "t", Alias: "x"}, fns: []string{"+", "lower"}},
		{sql: "SELECT list_transform([id], v -> v * 2) FROM t", ok: true, table: duckdbsql.BaseTable{Table: "t"}, fns: []string{"*", "list_transform", "list_value"}},
		{sql: "SELECT sum(id) FILTER (WHERE id > 1) FROM t"},
		{sql: "SELECT list(id ORDER BY s) FROM t"},
		{sql: "SELECT count(DISTINCT id) FROM t"},
		{sql: "SELECT sum(id) EXPORT_STATE FROM t"},
		{sql: "SELECT a FROM t AS x(a)"},
		{sql: "SELECT id FROM t AT (VERSION => 1)"},
		{sql: "SELECT id FROM t WHERE EXISTS (SELECT 1)"},
		{sql: "SELECT id FROM t WHERE lower(s) IN (SELECT 'x')"},
		{sql: "SELECT id FROM t ORDER BY id"},
		{sql: "SELECT grp FROM t GROUP BY ALL"},
		{sql: "SELECT id FROM t USING SAMPLE 5"},
		{sql: "SELECT 1"},
		{sql: "SELECT * FROM t; SELECT 1"},
	} {
		t.Run(tt.sql, func(t *testing.T) {
			tree, err := c.SyntaxTree(ctx, tt.sql)
			if err != nil {
				t.Fatalf("SyntaxTree: %v", err)
			}
			sc, ok := scan(tree)
			if ok != tt.ok {
				t.Fatalf("scan: got ok %v, want %v (shape %+v)", ok, tt.ok, sc)
			}
			if ok && (sc.table != tt.table || !slices.Equal(sc.functions, tt.fns)) {
				t.Errorf("scan: got table %+v calling %v, want %+v calling %v", sc.table, sc.functions, tt.table, tt.fns)
			}
		})
	}
}
