package engine

import "github.com/prometheus/client_golang/prometheus/testutil"

// StmtCacheMax is stmtCacheMax, for the cache's tests.
const StmtCacheMax = stmtCacheMax

// KeptStatements is how many statements c keeps for reuse.
func (c *Conn) KeptStatements() int { return len(c.stmts.entries) }

// KeptGauge reads the quiver_engine_statements_kept gauge.
func KeptGauge() float64 { return testutil.ToFloat64(stmtsKept) }
