package duckdbsql_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// TestReadTree reads the trees the linked DuckDB gives, so that a DuckDB
// whose json_serialize_sql says a thing another way fails here.
func TestReadTree(t *testing.T) {
	p := newParser(t)
	ctx := context.Background()
	for _, tc := range []struct {
		sql       string
		selectOK  bool
		recursive bool
		tables    []duckdbsql.BaseTable // nil: BaseTables is not ok
		conjuncts int
	}{
		{sql: "SELECT a, b FROM t WHERE a = 1 AND b > 2 AND (c OR d)", selectOK: true,
			tables: []duckdbsql.BaseTable{{Table: "t"}}, conjuncts: 3},
		{sql: "SELECT * FROM lake.quiver.e AS x JOIN s.u ON x.id = u.id", selectOK: true,
			tables: []duckdbsql.BaseTable{{Catalog: "lake", Schema: "quiver", Table: "e", Alias: "x"}, {Schema: "s", Table: "u"}}},
		{sql: "SELECT * FROM (SELECT 1) AS s", selectOK: true},
		{sql: "SELECT * FROM read_csv('x.csv')", selectOK: true},
		{sql: "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < 3) SELECT max(n) FROM r",
			selectOK: true, recursive: true, tables: []duckdbsql.BaseTable{{Table: "r"}}},
		{sql: "SELECT (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < ?) SELECT max(n) FROM r)",
			selectOK: true, recursive: true},
		{sql: "WITH a AS (SELECT 1) SELECT 'WITH RECURSIVE' FROM a", selectOK: true, tables: []duckdbsql.BaseTable{{Table: "a"}}},
		{sql: "SELECT 1 UNION ALL SELECT 2"},
		{sql: "SELECT 1; SELECT 2"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			tree, err := p.c.SyntaxTree(ctx, tc.sql)
			if err != nil {
				t.Fatalf("SyntaxTree: %v", err)
			}
			n := tree.Select()
			if got := n != nil; got != tc.selectOK {
				t.Fatalf("Select() = %v, want a node: %v", n, tc.selectOK)
			}
			if got := tree.RecursiveCTE(); got != tc.recursive {
				t.Errorf("RecursiveCTE() = %v, want %v", got, tc.recursive)
			}
			if n == nil {
				return
			}
			tables, ok := duckdbsql.BaseTables(n.From)
			if tc.tables == nil {
				if ok {
					t.Errorf("BaseTables = %v, ok; want not ok", tables)
				}
			} else if !ok || len(tables) != len(tc.tables) || len(tables) > 0 && !reflect.DeepEqual(tables, tc.tables) {
				t.Errorf("BaseTables = %v, %v; want %v", tables, ok, tc.tables)
			}
			if got := len(duckdbsql.Conjuncts(n.Where)); got != tc.conjuncts {
				t.Errorf("%d conjuncts, want %d", got, tc.conjuncts)
			}
			for _, e := range n.SelectList {
				if len(e.Raw) == 0 {
					t.Errorf("a selected expression of class %s kept no raw JSON", e.Class)
				}
			}
		})
	}
}

// TestReadTree_Errors: what DuckDB cannot serialize is a *PlanError with
// its message; what is not its JSON is an error too.
func TestReadTree_Errors(t *testing.T) {
	p := newParser(t)
	for _, sql := range []string{"INSERT INTO t VALUES (1)", "SELEC 1"} {
		_, err := p.c.SyntaxTree(context.Background(), sql)
		var pe *duckdbsql.PlanError
		if !errors.As(err, &pe) || pe.Message == "" {
			t.Errorf("SyntaxTree(%q) = %v, want a PlanError with a message", sql, err)
		}
	}
	for _, js := range []string{"", "WITH RECURSIVE", `{"statements": 5}`} {
		if _, err := duckdbsql.ReadTree([]byte(js)); err == nil {
			t.Errorf("ReadTree(%q) = nil error", js)
		}
	}
}

// FuzzReadTree: no input panics the reader or its walks.
func FuzzReadTree(f *testing.F) {
	f.Add(`{"error":false,"statements":[{"node":{"type":"SELECT_NODE","cte_map":{"map":[{"key":"r","value":{"query":{"node":{"type":"RECURSIVE_CTE_NODE"}}}}]}}}]}`)
	f.Add(`{"error":true,"error_type":"parser","error_message":"x"}`)
	f.Fuzz(func(t *testing.T, js string) {
		tree, err := duckdbsql.ReadTree([]byte(js))
		if err != nil {
			return
		}
		tree.RecursiveCTE()
		if n := tree.Select(); n != nil {
			duckdbsql.BaseTables(n.From)
			duckdbsql.Conjuncts(n.Where)
			duckdbsql.Unread(n.Raw, "type")
			duckdbsql.WalkExprs(n.Raw, func(*duckdbsql.Expr) bool { return true })
			duckdbsql.AndWhere(tree.Raw, tree.Raw)
			duckdbsql.SameTree(tree.Raw, tree.Raw)
		}
	})
}

// TestReadExplain reads the linked DuckDB's EXPLAIN (FORMAT json): the
// operators and the estimates admission and the export read.
func TestReadExplain(t *testing.T) {
	p := newParser(t)
	ctx := context.Background()
	js, err := p.c.ExplainJSON(ctx, "SELECT count(*) FROM range(1000) WHERE range % 2 = 0 LIMIT 5")
	if err != nil {
		t.Fatal(err)
	}
	roots, err := duckdbsql.ReadExplain(js)
	if err != nil || len(roots) != 1 {
		t.Fatalf("ReadExplain = %d roots, %v; want one", len(roots), err)
	}
	var names []string
	var estimated bool
	var walk func(o *duckdbsql.Operator)
	walk = func(o *duckdbsql.Operator) {
		names = append(names, o.Name)
		if _, ok := o.Info("Estimated Cardinality"); ok {
			estimated = true
		}
		for i := range o.Children {
			walk(&o.Children[i])
		}
	}
	walk(&roots[0])
	if !slices.Contains(names, "RANGE") || !estimated {
		t.Errorf("operators %v, an estimate: %v; want a RANGE and an estimate", names, estimated)
	}
	if _, err := duckdbsql.ReadExplain([]byte("not json")); err == nil {
		t.Error("ReadExplain of text that is not JSON: nil error")
	}
}

// TestReadTree_Fields reads the fields the split planner reads, from the
// linked DuckDB's trees: an aggregate's FILTER, ORDER BY and EXPORT_STATE,
// and the clauses no field names (Unread).
func TestReadTree_Fields(t *testing.T) {
	p := newParser(t)
	ctx := context.Background()
	for _, tc := range []struct {
		sql string
		// fn is the function of the first selected expression.
		fn                           string
		filter, orderBy, exportState bool
		// nodeUnread and fromUnread are the node's and the FROM entry's
		// non-empty keys past those the planner reads.
		nodeUnread, fromUnread []string
	}{
		{sql: "SELECT lower(s) FROM t WHERE i > 1", fn: "lower"},
		{sql: "SELECT sum(i) FILTER (WHERE i > 1) FROM t", fn: "sum", filter: true},
		{sql: "SELECT list(i ORDER BY s) FROM t", fn: "list", orderBy: true},
		{sql: "SELECT sum(i) EXPORT_STATE FROM t", fn: "sum", exportState: true},
		{sql: "SELECT upper(s) FROM t ORDER BY i LIMIT 2", fn: "upper", nodeUnread: []string{"modifiers"}},
		{sql: "SELECT lower(s) FROM t GROUP BY s", fn: "lower", nodeUnread: []string{"group_expressions", "group_sets"}},
		{sql: "SELECT upper(a) FROM t AS x(a)", fn: "upper", fromUnread: []string{"column_name_alias"}},
		{sql: "SELECT lower(s) FROM t USING SAMPLE 10%", fn: "lower", nodeUnread: []string{"sample"}},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			tree, err := p.c.SyntaxTree(ctx, tc.sql)
			if err != nil {
				t.Fatalf("SyntaxTree: %v", err)
			}
			n := tree.Select()
			if n == nil || len(n.SelectList) == 0 || n.From == nil {
				t.Fatalf("no SELECT with a select list and a FROM: %s", tree.Raw)
			}
			e := n.SelectList[0]
			if e.Function != tc.fn || (e.Filter != nil) != tc.filter || (e.OrderBys != nil && len(e.OrderBys.Orders) > 0) != tc.orderBy || e.ExportState != tc.exportState {
				t.Errorf("got function %q, filter %v, order by %v, export state %v; want %q, %v, %v, %v",
					e.Function, e.Filter != nil, e.OrderBys, e.ExportState, tc.fn, tc.filter, tc.orderBy, tc.exportState)
			}
			got, ok := duckdbsql.Unread(n.Raw, "type", "select_list", "where_clause", "from_table", "aggregate_handling", "query_location")
			if !ok || !slices.Equal(got, tc.nodeUnread) {
				t.Errorf("node's unread keys: got %v, %v; want %v", got, ok, tc.nodeUnread)
			}
			got, ok = duckdbsql.Unread(n.From.Raw, "type", "alias", "query_location", "table_name", "schema_name", "catalog_name")
			if !ok || !slices.Equal(got, tc.fromUnread) {
				t.Errorf("FROM's unread keys: got %v, %v; want %v", got, ok, tc.fromUnread)
			}
		})
	}
	if _, ok := duckdbsql.Unread([]byte("[1]")); ok {
		t.Error("Unread of an array: ok, want not ok")
	}
}

// TestWalkExprs finds every expression of the linked DuckDB's trees,
// those in places no field of Expr names too.
func TestWalkExprs(t *testing.T) {
	p := newParser(t)
	ctx := context.Background()
	for _, tc := range []struct {
		sql  string
		want []string // classes met, sorted
	}{
		{"SELECT i + 1 FROM t", []string{"CONSTANT", "COLUMN_REF", "FUNCTION"}},
		{"SELECT CASE WHEN i > 1 THEN lower(s) ELSE 'x' END", []string{"CASE", "COLUMN_REF", "COLUMN_REF", "COMPARISON", "CONSTANT", "CONSTANT", "FUNCTION"}},
		{"SELECT list_transform([1], x -> x + 1)", []string{"COLUMN_REF", "COLUMN_REF", "CONSTANT", "CONSTANT", "FUNCTION", "FUNCTION", "FUNCTION", "LAMBDA"}},
		{"SELECT (SELECT max(i) FROM t)", []string{"COLUMN_REF", "FUNCTION", "SUBQUERY"}},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			tree, err := p.c.SyntaxTree(ctx, tc.sql)
			if err != nil {
				t.Fatalf("SyntaxTree: %v", err)
			}
			var got []string
			if duckdbsql.WalkExprs(tree.Select().SelectList[0].Raw, func(e *duckdbsql.Expr) bool {
				got = append(got, e.Class)
				return true
			}) {
				t.Fatal("WalkExprs stopped, want it to visit all")
			}
			want := slices.Sorted(slices.Values(tc.want))
			if slices.Sort(got); !slices.Equal(got, want) {
				t.Errorf("classes: got %v, want %v", got, want)
			}
		})
	}
	for _, raw := range []string{"", "{", `{"class": 5}`} {
		if !duckdbsql.WalkExprs([]byte(raw), func(*duckdbsql.Expr) bool { return true }) {
			t.Errorf("WalkExprs(%q) did not stop", raw)
		}
	}
}

// TestAndWhere adds conjuncts to the linked DuckDB's trees and prints
// them back with DuckDB: the text parses to the rewritten tree.
func TestAndWhere(t *testing.T) {
	p := newParser(t)
	ctx := context.Background()
	cond, err := p.c.SyntaxTree(ctx, "SELECT 1 WHERE rowid >= 5 AND rowid < 10")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sql, want string }{
		{"SELECT * FROM t", "SELECT * FROM t WHERE ((rowid >= 5) AND (rowid < 10))"},
		{"SELECT * FROM t WHERE i = 1", "SELECT * FROM t WHERE ((i = 1) AND (rowid >= 5) AND (rowid < 10))"},
		{"SELECT * FROM t WHERE i = 1 AND s = 'x'", "SELECT * FROM t WHERE ((i = 1) AND (s = 'x') AND (rowid >= 5) AND (rowid < 10))"},
		{"SELECT * FROM t WHERE i = 1 OR s = 'x'", "SELECT * FROM t WHERE (((i = 1) OR (s = 'x')) AND (rowid >= 5) AND (rowid < 10))"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			tree, err := p.c.SyntaxTree(ctx, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			mod, err := duckdbsql.AndWhere(tree.Raw, cond.Raw)
			if err != nil {
				t.Fatalf("AndWhere: %v", err)
			}
			got := p.scalar(t, "SELECT json_deserialize_sql($1::JSON)", string(mod))
			if got != tc.want {
				t.Errorf("printed: got %q, want %q", got, tc.want)
			}
			back, err := p.c.SyntaxTree(ctx, got)
			if err != nil {
				t.Fatal(err)
			}
			if same, err := duckdbsql.SameTree(back.Raw, mod); err != nil || !same {
				t.Errorf("SameTree(printed, rewritten) = %v, %v; want true", same, err)
			}
			if same, err := duckdbsql.SameTree(tree.Raw, mod); err != nil || same {
				t.Errorf("SameTree(original, rewritten) = %v, %v; want false", same, err)
			}
		})
	}
	union, err := p.c.SyntaxTree(ctx, "SELECT 1 UNION SELECT 2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		js, cond []byte
	}{
		{"not a SELECT node", union.Raw, cond.Raw},
		{"no WHERE in the condition", cond.Raw, union.Raw},
		{"not JSON", []byte("{"), cond.Raw},
	} {
		if _, err := duckdbsql.AndWhere(tc.js, tc.cond); err == nil {
			t.Errorf("AndWhere, %s: nil error", tc.name)
		}
	}
}

// TestRead_NonFinite reads the linked DuckDB's JSON of constants that are
// not finite, which it writes as bare NaN, Infinity and -Infinity: each
// reads as the string of its name, and a string that holds one of those
// words is left alone.
func TestRead_NonFinite(t *testing.T) {
	p := newParser(t)
	ctx := context.Background()
	const sql = `SELECT 1E1000 AS "Infinity", -1E1000, 'NaN', i FROM t WHERE i < 1E1000`
	tree, err := p.c.SyntaxTree(ctx, sql)
	if err != nil {
		t.Fatalf("SyntaxTree: %v", err)
	}
	n := tree.Select()
	if n == nil || len(n.SelectList) != 4 {
		t.Fatalf("no SELECT of four expressions: %s", tree.Raw)
	}
	for i, want := range []string{`"Infinity"`, `"-Infinity"`, `"NaN"`} {
		if v := n.SelectList[i].Value; v == nil || string(v.Value) != want {
			t.Errorf("constant %d: got %+v, want the value %s", i, v, want)
		}
	}
	if got := n.SelectList[0].Alias; got != "Infinity" {
		t.Errorf("alias: got %q, want Infinity", got)
	}
	if duckdbsql.WalkExprs(n.Where.Raw, func(*duckdbsql.Expr) bool { return true }) {
		t.Error("WalkExprs stopped in a WHERE clause with an infinite constant")
	}
	if _, err := duckdbsql.ReadParsed(tree.Raw); err != nil {
		t.Errorf("ReadParsed: %v", err)
	}
	plan, err := duckdbsql.ReadPlan([]byte(p.scalar(t, "SELECT json_serialize_plan($1::VARCHAR)", sql)))
	if err != nil || len(plan.Roots) != 1 {
		t.Errorf("ReadPlan: %v, %v; want one plan", plan, err)
	}
	if same, err := duckdbsql.SameTree(tree.Raw, tree.Raw); err != nil || !same {
		t.Errorf("SameTree of a tree with itself: %v, %v", same, err)
	}
}
