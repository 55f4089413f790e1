package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/engine"
)

// TestConn_TooComplex: a statement beyond the limits on its shape is
// refused as invalid, before DuckDB's parser or the prepare hook sees it,
// on every way text reaches the parser; statements at the limits, and
// long ones of shapes that parse in linear time, run.
func TestConn_TooComplex(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, engine.Options{})
	hooked := 0
	db.SetPrepareHook(func(context.Context, *engine.Conn, string) error { hooked++; return nil })
	c := testConn(t, db)

	deep := "SELECT " + strings.Repeat("+", 2000) + "1"
	long := "SELECT 1 WHERE true" + strings.Repeat(" OR false", engine.MaxStatementTerms+1)
	for _, tc := range []struct {
		name, sql, msg string
	}{
		{"operators", deep, fmt.Sprintf("statement too complex: nesting depth 2000 exceeds the limit of %d", engine.MaxStatementDepth)},
		{"brackets", "SELECT " + strings.Repeat("(", engine.MaxStatementDepth+1) + "1" + strings.Repeat(")", engine.MaxStatementDepth+1), fmt.Sprintf("nesting depth %d", engine.MaxStatementDepth+1)},
		{"NOT", "SELECT " + strings.Repeat("NOT ", 300) + "true", "nesting depth 300"},
		{"OR chain", long, fmt.Sprintf("statement too complex: %d AND, OR", engine.MaxStatementTerms+1)},
		{"in a script", "SELECT 1; " + deep, "nesting depth 2000"},
		{"subqueries", "SELECT " + strings.Repeat("(SELECT ", engine.MaxSubqueryDepth+1) + "1" + strings.Repeat(")", engine.MaxSubqueryDepth+1),
			fmt.Sprintf("subqueries nested %d deep in expressions exceed the limit of %d", engine.MaxSubqueryDepth+1, engine.MaxSubqueryDepth)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how string, err error) {
				t.Helper()
				if !errors.Is(err, engine.ErrTooComplex) || engine.KindOf(err) != engine.KindInvalid || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("%s: got %v (kind %v), want an invalid statement error containing %q", how, err, engine.KindOf(err), tc.msg)
				}
			}
			_, err := c.Exec(ctx, tc.sql)
			check("Exec", err)
			_, err = c.Query(ctx, tc.sql)
			check("Query", err)
			_, _, err = c.PrepareLast(ctx, tc.sql, nil)
			check("PrepareLast", err)
			_, err = c.ExplainJSON(ctx, tc.sql)
			check("ExplainJSON", err)
			_, err = c.SyntaxTree(ctx, tc.sql)
			check("SyntaxTree", err)
			if n := c.CountStatements(tc.sql); n != 0 {
				t.Errorf("CountStatements: got %d, want 0", n)
			}
		})
	}
	if hooked != 0 {
		t.Errorf("the prepare hook ran %d times for refused statements, want 0", hooked)
	}

	for _, tc := range []struct {
		name, sql string
		want      int64
	}{
		{"operators at the limit", "SELECT " + strings.Repeat("-(", engine.MaxStatementDepth/2) + "1" + strings.Repeat(")", engine.MaxStatementDepth/2) + "::BIGINT", 1},
		{"run at the limit", "SELECT (1" + strings.Repeat(" +", engine.MaxStatementDepth-1) + "1)::BIGINT", 2},
		{"ORs at the limit", "SELECT count(*)::BIGINT FROM range(3) r(i) WHERE i = 1" + strings.Repeat(" OR i = 2", engine.MaxStatementTerms-1), 2},
		{"subqueries at the limit", "SELECT " + strings.Repeat("(SELECT ", engine.MaxSubqueryDepth) + "1" + strings.Repeat(")", engine.MaxSubqueryDepth) + "::BIGINT", 1},
		{"derived tables", "SELECT count(*)::BIGINT FROM " + strings.Repeat("(SELECT * FROM ", 60) + "range(3)" + strings.Repeat(")", 60), 3},
		{"IN list", "SELECT count(*)::BIGINT FROM range(10) r(i) WHERE i IN (1" + strings.Repeat(", 2", 5000) + ")", 2},
		{"sum of 100 terms", "SELECT (1" + strings.Repeat(" + 1", 99) + ")::BIGINT", 100},
		{"sum of 1,000 terms as a list", "SELECT list_sum([1" + strings.Repeat(", 1", 999) + "])::BIGINT", 1000},
		{"UNION ALL", "SELECT count(*)::BIGINT FROM (SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 999) + ")", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.QueryInt64(ctx, tc.sql)
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// TestOptions_Shape: a database's own limits replace the defaults, and a
// zero field keeps its default.
func TestOptions_Shape(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, engine.Options{Shape: engine.ShapeLimits{Depth: 300, Terms: 10}})
	c := testConn(t, db)
	deeper := "SELECT (" + strings.Repeat("(", engine.MaxStatementDepth+10) + "1" + strings.Repeat(")", engine.MaxStatementDepth+10) + ")::BIGINT"
	if got, err := c.QueryInt64(ctx, deeper); err != nil || got != 1 {
		t.Errorf("depth %d under a limit of 300: got %d, %v", engine.MaxStatementDepth+11, got, err)
	}
	if _, err := c.Exec(ctx, "SELECT 1 WHERE true"+strings.Repeat(" OR false", 11)); !errors.Is(err, engine.ErrTooComplex) ||
		!strings.Contains(err.Error(), "11 AND, OR, UNION, EXCEPT, INTERSECT and WITH terms exceed the limit of 10") {
		t.Errorf("11 ORs under a limit of 10: got %v", err)
	}
	nested := "SELECT " + strings.Repeat("(SELECT ", engine.MaxSubqueryDepth+1) + "1" + strings.Repeat(")", engine.MaxSubqueryDepth+1)
	if _, err := c.Exec(ctx, nested); !errors.Is(err, engine.ErrTooComplex) {
		t.Errorf("subqueries past the default: got %v, want ErrTooComplex", err)
	}
}
