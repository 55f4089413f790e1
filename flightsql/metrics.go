package flightsql

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// The Flight SQL service's metrics.
var (
	callsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_flight_calls_total",
		Help: "Flight calls by method and gRPC code.",
	}, []string{"method", "code"})
	callSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "quiver_flight_call_duration_seconds",
		Help:    "Flight call latency by method.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"method"})
	bytesSent = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_flight_result_bytes_total",
		Help: "Arrow buffer bytes of the result batches sent (before compression).",
	})
	txnsOpen = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_flight_transactions_open",
		Help: "Open Flight SQL transactions.",
	})
	txnsRolledBack = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_flight_transactions_rolled_back_total",
		Help: "Flight SQL transactions the server rolled back on its own: idle past --txn-idle-timeout, or their client connection closed.",
	}, []string{"why"})
	panicsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_flight_panics_total",
		Help: "Panics recovered while serving a Flight call, by method; the call failed with Internal and the server went on. Each one is a bug.",
	}, []string{"method"})
	preparedOpen = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_flight_prepared_statements_open",
		Help: "Prepared statements this server caches schemas and bound parameters for.",
	})
	connEndCloses = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_flight_connection_end_closes_total",
		Help: "Prepared statements, held results and transactions closed (transactions rolled back) because the client connection that held them ended.",
	})
)

func observe(method string, start time.Time, err error) {
	callsTotal.WithLabelValues(method, status.Code(err).String()).Inc()
	callSeconds.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

func metricsUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	observe(info.FullMethod, start, err)
	return resp, err
}

func metricsStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	start := time.Now()
	err := h(srv, ss)
	observe(info.FullMethod, start, err)
	return err
}
