package mysqlwire

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The MySQL endpoint's metrics, registered with the default Prometheus
// registry.
var (
	connectionsOpen = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_mysql_connections_open",
		Help: "MySQL client connections currently open, authenticated or not.",
	})
	connectionsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_mysql_connections_total",
		Help: "MySQL client connections accepted.",
	})
	connectionsRefused = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_mysql_connections_refused_total",
		Help: "MySQL logins refused for a connection limit: error 1040 (--max-connections) or 1203 (--max-user-connections).",
	})
	authFailures = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_mysql_auth_failures_total",
		Help: "MySQL logins refused for a wrong user name or password.",
	})
	queriesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_mysql_queries_total",
		Help: "Statements run, by protocol command (query, prepare, execute).",
	}, []string{"command"})
	queryErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_mysql_query_errors_total",
		Help: "Statements that ended in an error packet or an aborted result, by MySQL error number.",
	}, []string{"code"})
	queryDuration = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "quiver_mysql_query_duration_seconds",
		Help:    "Time from receiving a statement to sending its last row.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	})
	rowsSent = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_mysql_rows_sent_total",
		Help: "Result rows sent to MySQL clients.",
	})
	protocolPanics = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_mysql_protocol_panics_total",
		Help: "Malformed packets on which the vitess protocol code panicked; it recovers and closes that connection.",
	})
	handlerPanics = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_mysql_panics_total",
		Help: "Panics recovered in the MySQL command handler; each one is a bug.",
	})
)

// Label values for queriesTotal.
const (
	cmdQuery   = "query"
	cmdPrepare = "prepare"
	cmdExecute = "execute"
)
