package admit

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	runningGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_admit_running_queries",
		Help: "Queries holding a run slot, by lane.",
	}, []string{"lane"})
	openGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_admit_open_results",
		Help: "Results open (running or paused for their client), by lane.",
	}, []string{"lane"})
	queuedGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_admit_queued_queries",
		Help: "Queries waiting to start, by lane.",
	}, []string{"lane"})
	admitted = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_admit_admitted_total",
		Help: "Queries admitted, by lane.",
	}, []string{"lane"})
	refused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_admit_refused_total",
		Help: "Queries that did not start, by lane and reason (timeout: the queue timeout passed; queue_full; canceled: the client gave up or its deadline passed).",
	}, []string{"lane", "reason"})
	waitSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "quiver_admit_wait_seconds",
		Help:    "Time admitted queries waited to start, by lane.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"lane"})
	classified = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_admit_classified_total",
		Help: "Lane decisions, by lane and source (history: what the same SQL did before; shape: what the same SQL with other values did; plan: DuckDB's estimate; unknown).",
	}, []string{"lane", "source"})
)

// The lanes' gauges, resolved once: grant sets them on every slot change,
// which a MySQL result does for each chunk it sends.
var (
	runningG = [2]prometheus.Gauge{runningGauge.WithLabelValues(Small.String()), runningGauge.WithLabelValues(Bulk.String())}
	openG    = [2]prometheus.Gauge{openGauge.WithLabelValues(Small.String()), openGauge.WithLabelValues(Bulk.String())}
	queuedG  = [2]prometheus.Gauge{queuedGauge.WithLabelValues(Small.String()), queuedGauge.WithLabelValues(Bulk.String())}
)

func noteAdmitted(l Lane, waited time.Duration) {
	admitted.WithLabelValues(l.String()).Inc()
	waitSeconds.WithLabelValues(l.String()).Observe(waited.Seconds())
}

func noteRefused(l Lane, reason string) {
	refused.WithLabelValues(l.String(), reason).Inc()
}

// Connection counts (Conns), by endpoint.
var (
	connsLoggedIn = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_admit_connections_logged_in",
		Help: "Client connections logged in, by endpoint.",
	}, []string{"endpoint"})
	connsPending = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_admit_connections_pending",
		Help: "Client connections still logging in (TLS, greeting, password), by endpoint.",
	}, []string{"endpoint"})
	connsRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_admit_connections_refused_total",
		Help: "Logins refused for a connection limit, by endpoint and limit (max: --max-connections, past the admins' reserve for others; user: --max-user-connections).",
	}, []string{"endpoint", "limit"})
	connsEvicted = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_admit_connections_evicted_total",
		Help: "Connections still logging in that were closed to make room for a new one (--max-handshakes), by endpoint.",
	}, []string{"endpoint"})
)
