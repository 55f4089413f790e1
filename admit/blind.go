package admit

import (
	"math"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// Some statements cost what no estimate shows. DuckDB plans a recursive
// CTE as if it ran a thousand rows, whatever its depth: WITH RECURSIVE
// counting to 3,000,000 was estimated at 1,001 rows and ran 29 s. A cross
// product or a nested-loop join has no estimate of its own, and the
// estimates of its inputs (two scans of 100,000 rows) say nothing of the
// 10^10 pairs it makes. Such a statement is never small by its estimate,
// or by its history or shape: the next run may recurse deeper.

// recursivePlan reports whether a plan runs a recursive CTE (DuckDB's
// REC_CTE operator): a view or an INSERT … SELECT that json_serialize_sql
// does not show.
func recursivePlan(nodes []duckdbsql.Operator) bool {
	for i := range nodes {
		if nodes[i].Name == "REC_CTE" || nodes[i].Name == "REC_KEY_CTE" || recursivePlan(nodes[i].Children) {
			return true
		}
	}
	return false
}

// productJoins are the operators that may return every pair of their
// inputs' rows, and carry no estimate of their own.
var productJoins = map[string]bool{
	"CROSS_PRODUCT": true, "NESTED_LOOP_JOIN": true, "BLOCKWISE_NL_JOIN": true,
	"PIECEWISE_MERGE_JOIN": true, "IE_JOIN": true,
}

// widestStep returns the most rows any step of the plan may make: an
// operator's estimate, or for a join that may pair every row of its
// inputs (productJoins), the product of its inputs' rows. ok is false
// when an input of such a join has no estimate.
func widestStep(n *duckdbsql.Operator) (int64, bool) {
	widest := int64(0)
	if est, ok := n.Info("Estimated Cardinality"); ok {
		widest = est
	}
	if productJoins[n.Name] {
		pairs := int64(1)
		for i := range n.Children {
			r, ok := outRows(&n.Children[i])
			if !ok {
				return 0, false
			}
			if r > 0 && pairs > math.MaxInt64/r {
				pairs = math.MaxInt64
			} else {
				pairs *= max(r, 1)
			}
		}
		widest = max(widest, pairs)
	}
	for i := range n.Children {
		w, ok := widestStep(&n.Children[i])
		if !ok {
			return 0, false
		}
		widest = max(widest, w)
	}
	return widest, true
}
