package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/quiverdata/quiver/engine"
)

// queryOne prepares sql on c, binds args, and returns the first column of
// the first row as text.
func queryOne(t *testing.T, c *engine.Conn, sql string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	st, err := c.Prepare(ctx, sql)
	if err != nil {
		t.Fatalf("prepare %s: %v", sql, err)
	}
	defer st.Close()
	if err := st.BindValues(args...); err != nil {
		t.Fatalf("bind %s: %v", sql, err)
	}
	rows, err := st.Query(ctx)
	if err != nil {
		t.Fatalf("query %s: %v", sql, err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("query %s: no row (%v)", sql, rows.Err())
	}
	return rows.RecordBatch().Column(0).ValueStr(0)
}

func TestConn_PrepareReusesStatement(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, engine.Options{})
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const q = "SELECT ?::INTEGER + 1"
	if got, want := queryOne(t, c, q, 1), "2"; got != want {
		t.Fatalf("first run: got %s, want %s", got, want)
	}
	if got, want := c.KeptStatements(), 1; got != want {
		t.Fatalf("kept after the first run: got %d, want %d", got, want)
	}
	st, err := c.Prepare(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.KeptStatements(), 0; got != want {
		t.Errorf("kept while the statement is in use: got %d, want %d", got, want)
	}
	// The same text prepared while the kept one is in use is a statement
	// of its own.
	if got, want := queryOne(t, c, q, 41), "42"; got != want {
		t.Errorf("second statement of the text: got %s, want %s", got, want)
	}
	st.Close()
	if got, want := c.KeptStatements(), 1; got != want {
		t.Errorf("kept after both closed: got %d, want %d", got, want)
	}
	// A kept statement's bound values are cleared: run unbound, it fails
	// as a fresh one would, instead of running with the last values.
	st, err = c.Prepare(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, err := st.Exec(ctx); err == nil {
		t.Errorf("kept statement run without values: got %d rows and no error, want an error", n)
	}
}

func TestConn_PrepareAfterChange(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, engine.Options{ExternalAccess: true})
	// Each change is one DuckDB does not rebind a prepared statement
	// for by itself; the kept statement must not outlive it.
	tests := []struct {
		name, setup, query, change string
		other                      bool // the change runs on another connection
		want                       string
	}{
		{"macro replaced", "CREATE MACRO m(x) AS x + 1", "SELECT m(1)", "CREATE OR REPLACE MACRO m(x) AS x + 100", true, "101"},
		{"view replaced", "CREATE VIEW v AS SELECT 1 AS a", "SELECT a FROM v", "CREATE OR REPLACE VIEW v AS SELECT 5 AS a", true, "5"},
		{"temporary table shadows", "CREATE TABLE t2 AS SELECT 1 AS a", "SELECT a FROM t2", "CREATE TEMP TABLE t2 AS SELECT 42 AS a", false, "42"},
		{"variable set", "SET VARIABLE x = 1", "SELECT getvariable('x')", "SET VARIABLE x = 2", false, "2"},
		{"setting changed", "SET TimeZone = 'UTC'", "SELECT current_setting('TimeZone')", "SET TimeZone = 'Europe/Paris'", false, "Europe/Paris"},
		{"table recreated", "CREATE TABLE t4 AS SELECT 1 AS a", "SELECT typeof(a) FROM t4", "DROP TABLE t4; CREATE TABLE t4 AS SELECT 'x' AS a", true, "VARCHAR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			other, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(other.Close)
			if _, err := c.Exec(ctx, tc.setup); err != nil {
				t.Fatalf("setup: %v", err)
			}
			// A SET keeps the cache off until its connection goes back
			// to the pool, which hands the same one out again.
			c.Release()
			c, err = db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			if !tc.other {
				other = c
			}
			queryOne(t, c, tc.query)
			if got, want := c.KeptStatements(), 1; got != want {
				t.Fatalf("kept before the change: got %d, want %d", got, want)
			}
			if _, err := other.Exec(ctx, tc.change); err != nil {
				t.Fatalf("change: %v", err)
			}
			if got := queryOne(t, c, tc.query); got != tc.want {
				t.Errorf("after the change: got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestConn_PrepareCacheBounded(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, engine.Options{})
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	before := engine.KeptGauge()
	for i := range engine.StmtCacheMax + 10 {
		want := fmt.Sprint(i)
		if got := queryOne(t, c, fmt.Sprintf("SELECT %d", i)); got != want {
			t.Fatalf("SELECT %d: got %s, want %s", i, got, want)
		}
	}
	if got, want := c.KeptStatements(), engine.StmtCacheMax; got != want {
		t.Errorf("kept: got %d, want %d", got, want)
	}
	if got, want := engine.KeptGauge()-before, float64(engine.StmtCacheMax); got != want {
		t.Errorf("gauge rose by %v, want %v", got, want)
	}
	// Statements the cache does not keep.
	for _, q := range []string{"CREATE TABLE k (a INTEGER)", "EXPLAIN SELECT 1", "SELECT 1; SELECT 2", "CHECKPOINT"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.Close()
	if got, want := engine.KeptGauge(), before; got != want {
		t.Errorf("gauge after the connection closed: got %v, want %v", got, want)
	}
	if got, want := c.KeptStatements(), 0; got != want {
		t.Errorf("kept after the connection closed: got %d, want %d", got, want)
	}
}
