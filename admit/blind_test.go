package admit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// The trees in testdata/trees are json_serialize_sql's output of DuckDB
// 1.5 for the statements their names say.

func readTree(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "trees", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parsed is a Classifier's Parse that gives DuckDB's tree js, read as
// the server reads it, and counts its calls in n when n is not nil.
func parsed(js []byte, n *int) func(context.Context, string) (*duckdbsql.Tree, error) {
	return func(context.Context, string) (*duckdbsql.Tree, error) {
		if n != nil {
			*n++
		}
		return duckdbsql.ReadTree(js)
	}
}

// Plans as DuckDB 1.5 prints them for EXPLAIN (FORMAT json), cut to what
// the classifier reads.
const (
	planRecursive = `[{"name":"UNGROUPED_AGGREGATE","children":[{"name":"PROJECTION","children":[{"name":"REC_CTE","children":[{"name":"PROJECTION","children":[{"name":"DUMMY_SCAN","children":[],"extra_info":{}}],"extra_info":{"Estimated Cardinality":"1"}},{"name":"PROJECTION","children":[{"name":"FILTER","children":[{"name":"REC_CTE_SCAN","children":[],"extra_info":{"Estimated Cardinality":"1"}}],"extra_info":{"Estimated Cardinality":"1"}}],"extra_info":{"Estimated Cardinality":"1"}}],"extra_info":{"Estimated Cardinality":"1001"}}],"extra_info":{"Estimated Cardinality":"1001"}}],"extra_info":{}}]`
	planCross     = `[{"name":"UNGROUPED_AGGREGATE","children":[{"name":"CROSS_PRODUCT","children":[{"name":"RANGE","children":[],"extra_info":{"Estimated Cardinality":"100000"}},{"name":"RANGE","children":[],"extra_info":{"Estimated Cardinality":"100000"}}],"extra_info":{}}],"extra_info":{}}]`
	planSmallX    = `[{"name":"CROSS_PRODUCT","children":[{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"30"}},{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"40"}}],"extra_info":{}}]`
)

// TestClassifier_Blind checks that statements whose cost no estimate
// sees are bulk: a recursive CTE by its syntax tree, whatever its shape's
// runs did before and with parameters (no plan); by its plan where there
// is no tree; and a cross product that pairs more rows than a small scan.
func TestClassifier_Blind(t *testing.T) {
	ctx := context.Background()
	recursive, plain := readTree(t, "recursive"), readTree(t, "plain_ctes")
	notSelect := []byte(`{"error":true,"error_type":"not implemented","error_message":"Only SELECT statements can be serialized to json!"}`)
	shape := func(sql string) (string, bool) { // numbers taken out
		var b strings.Builder
		for i := 0; i < len(sql); i++ {
			if sql[i] >= '0' && sql[i] <= '9' {
				if i == 0 || sql[i-1] < '0' || sql[i-1] > '9' {
					b.WriteByte('?')
				}
				continue
			}
			b.WriteByte(sql[i])
		}
		return b.String(), true
	}
	const deep = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < 3000000) SELECT max(n) FROM r"
	const shallow = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < 10) SELECT max(n) FROM r"

	t.Run("recursive by its tree, after its shape ran small", func(t *testing.T) {
		calls := 0
		c := &Classifier{Shape: shape, Parse: parsed(recursive, &calls)}
		for range 3 {
			c.Observe(Key{SQL: shallow}, 1, time.Millisecond)
		}
		if got := c.Lane(ctx, Key{SQL: deep}, func() ([]byte, error) { return []byte(planConst), nil }); got != Bulk {
			t.Errorf("deep recursion after shallow runs: %v, want bulk", got)
		}
		if got := c.Lane(ctx, Key{SQL: shallow}, nil); got != Bulk {
			t.Errorf("shallow recursion seen small before: %v, want bulk", got)
		}
		c.Observe(Key{SQL: shallow}, 1, time.Millisecond)
		if got, ok := c.Known(Key{SQL: shallow}); !ok || got != Bulk {
			t.Errorf("Known after another small run: %v, %v; want bulk", got, ok)
		}
		if calls != 1 {
			t.Errorf("parsed %d times, want once for the shape", calls)
		}
	})
	t.Run("recursive with parameters, no plan", func(t *testing.T) {
		c := &Classifier{Parse: parsed(recursive, nil)}
		k := Key{SQL: "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < ?) SELECT max(n) FROM r"}
		c.Observe(k, 1, time.Millisecond)
		if got := c.Lane(ctx, k, nil); got != Bulk {
			t.Errorf("got %v, want bulk", got)
		}
	})
	t.Run("recursive by its plan", func(t *testing.T) {
		c := &Classifier{Parse: parsed(notSelect, nil)}
		k := Key{SQL: "INSERT INTO t " + deep}
		if got := c.Lane(ctx, k, func() ([]byte, error) { return []byte(planRecursive), nil }); got != Bulk {
			t.Errorf("got %v, want bulk", got)
		}
		c.Observe(k, 1, time.Millisecond)
		if got, ok := c.Known(k); !ok || got != Bulk {
			t.Errorf("Known after a small run: %v, %v; want bulk", got, ok)
		}
	})
	t.Run("a statement other than a SELECT is parsed once", func(t *testing.T) {
		calls := 0
		c := &Classifier{Parse: parsed(notSelect, &calls)}
		k := Key{SQL: "INSERT INTO t VALUES (?, 'x')"}
		for range 3 {
			if got := c.Lane(ctx, k, func() ([]byte, error) { return []byte(planConst), nil }); got != Small {
				t.Errorf("got %v, want small", got)
			}
		}
		if calls != 1 {
			t.Errorf("parsed %d times, want once", calls)
		}
		// Its plan still tells a recursive one.
		k = Key{SQL: "INSERT INTO t " + deep}
		if got := c.Lane(ctx, k, func() ([]byte, error) { return []byte(planRecursive), nil }); got != Bulk {
			t.Errorf("recursive by its plan after the parse: %v, want bulk", got)
		}
	})
	t.Run("plain CTEs go by their plan", func(t *testing.T) {
		c := &Classifier{Parse: parsed(plain, nil)}
		if got := c.Lane(ctx, Key{SQL: "WITH a AS (SELECT 1) SELECT * FROM a"}, func() ([]byte, error) { return []byte(planConst), nil }); got != Small {
			t.Errorf("got %v, want small", got)
		}
	})
	t.Run("cross products", func(t *testing.T) {
		c := &Classifier{}
		if got := c.Lane(ctx, Key{SQL: "x"}, func() ([]byte, error) { return []byte(planCross), nil }); got != Bulk {
			t.Errorf("10^10 pairs: %v, want bulk", got)
		}
		if got := c.Lane(ctx, Key{SQL: "y"}, func() ([]byte, error) { return []byte(planSmallX), nil }); got != Small {
			t.Errorf("1,200 pairs: %v, want small", got)
		}
	})
}
