package lakesql

import (
	"context"
	"testing"

	"github.com/quiverdata/quiver/engine"
)

// TestCatalog_PlainExpr reads expressions of the linked DuckDB's syntax
// trees: an aggregate, a window or a subquery anywhere in one, however
// deep, makes a scan unsplittable.
func TestCatalog_PlainExpr(t *testing.T) {
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	c := &Catalog{aggregates: map[string]bool{"sum": true, "count_star": true}}
	for _, tt := range []struct {
		expr string
		want bool
	}{
		{"a + 1", true},
		{"lower(s) LIKE 'x%'", true},
		{"CASE WHEN a > 1 THEN upper(s) ELSE NULL END", true},
		{"list_transform([a], x -> x * 2)", true},
		{"sum(a)", false},
		{"1 + SUM(a)", false},
		{"CASE WHEN a > 1 THEN sum(a) END", false},
		{"count(*)", false},
		{"row_number() OVER ()", false},
		{"a IN (SELECT 1)", false},
		{"coalesce(a, (SELECT 1))", false},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			tree, err := conn.SyntaxTree(ctx, "SELECT "+tt.expr+" FROM t")
			if err != nil {
				t.Fatalf("SyntaxTree: %v", err)
			}
			n := tree.Select()
			if n == nil || len(n.SelectList) != 1 {
				t.Fatalf("no SELECT of one expression: %s", tree.Raw)
			}
			if got := c.plainExpr(n.SelectList[0]); got != tt.want {
				t.Errorf("plainExpr: got %v, want %v", got, tt.want)
			}
		})
	}
}
