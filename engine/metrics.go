package engine

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The engine's metrics, registered with the default Prometheus registry.
var (
	connsOpen = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_engine_connections_open",
		Help: "DuckDB connections currently open, pooled or in use.",
	})
	statementsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_engine_statements_total",
		Help: "Statements executed.",
	})
	copiesPiped = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_engine_copies_piped_total",
		Help: "COPY (query) TO statements run piped: a query DuckDB would run on one thread, streamed into a COPY that encodes on every thread.",
	})
	statementErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_engine_statement_errors_total",
		Help: "Statements that failed to execute.",
	})
	checkpointWaitSeconds = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_engine_checkpoint_wait_seconds_total",
		Help: "Time force checkpoints waited for other connections' write transactions to end before they ran.",
	})
	checkpointWaitsTimedOut = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_engine_checkpoint_waits_canceled_total",
		Help: "Force checkpoints canceled (query timeout, client gone) while they waited for other connections' write transactions.",
	})
	stmtCacheHits = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_engine_statement_cache_hits_total",
		Help: "Statements prepared from a connection's kept statement of the same text instead of by DuckDB.",
	})
	stmtsKept = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_engine_statements_kept",
		Help: "Prepared statements connections keep for reuse by their text.",
	})
	rowsStreamed = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_engine_rows_streamed_total",
		Help: "Result rows converted to Arrow and handed to a client.",
	})
)
