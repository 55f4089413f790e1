package admit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestHasRecursiveCTE(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tree          []byte
		recursive, ok bool
	}{
		{"WITH RECURSIVE at the top", readTree(t, "recursive"), true, true},
		{"WITH RECURSIVE in a subquery, with a parameter", readTree(t, "nested_recursive_param"), true, true},
		{"CTEs that are not recursive, one in a subquery", readTree(t, "plain_ctes"), false, true},
		{"the words in a string literal", readTree(t, "string_literal"), false, true},
		{"not a SELECT", []byte(`{"error":true,"error_type":"not implemented","error_message":"Only SELECT statements can be serialized to json!"}`), false, false},
		{"not JSON", []byte(`WITH RECURSIVE`), false, false},
		{"no statements", []byte(`{"error":false,"statements":[]}`), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recursive, ok := hasRecursiveCTE(tc.tree)
			if recursive != tc.recursive || ok != tc.ok {
				t.Errorf("hasRecursiveCTE = %v, %v; want %v, %v", recursive, ok, tc.recursive, tc.ok)
			}
		})
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
		parsed := 0
		c := &Classifier{Shape: shape, Parse: func(context.Context, string) ([]byte, error) { parsed++; return recursive, nil }}
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
		if parsed != 1 {
			t.Errorf("parsed %d times, want once for the shape", parsed)
		}
	})
	t.Run("recursive with parameters, no plan", func(t *testing.T) {
		c := &Classifier{Parse: func(context.Context, string) ([]byte, error) { return recursive, nil }}
		k := Key{SQL: "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < ?) SELECT max(n) FROM r"}
		c.Observe(k, 1, time.Millisecond)
		if got := c.Lane(ctx, k, nil); got != Bulk {
			t.Errorf("got %v, want bulk", got)
		}
	})
	t.Run("recursive by its plan", func(t *testing.T) {
		c := &Classifier{Parse: func(context.Context, string) ([]byte, error) { return notSelect, nil }}
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
		parsed := 0
		c := &Classifier{Parse: func(context.Context, string) ([]byte, error) { parsed++; return notSelect, nil }}
		k := Key{SQL: "INSERT INTO t VALUES (?, 'x')"}
		for range 3 {
			if got := c.Lane(ctx, k, func() ([]byte, error) { return []byte(planConst), nil }); got != Small {
				t.Errorf("got %v, want small", got)
			}
		}
		if parsed != 1 {
			t.Errorf("parsed %d times, want once", parsed)
		}
		// Its plan still tells a recursive one.
		k = Key{SQL: "INSERT INTO t " + deep}
		if got := c.Lane(ctx, k, func() ([]byte, error) { return []byte(planRecursive), nil }); got != Bulk {
			t.Errorf("recursive by its plan after the parse: %v, want bulk", got)
		}
	})
	t.Run("plain CTEs go by their plan", func(t *testing.T) {
		c := &Classifier{Parse: func(context.Context, string) ([]byte, error) { return plain, nil }}
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
