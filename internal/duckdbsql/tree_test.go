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
