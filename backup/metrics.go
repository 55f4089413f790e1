package backup

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The backups' metrics, registered with the default Prometheus registry.
var (
	backupsTaken = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_backup_taken_total",
		Help: "Backups taken and stored complete.",
	})
	backupsFailed = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_backup_failed_total",
		Help: "Backups that failed; they left no complete backup.",
	})
	backupBytes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_backup_stored_bytes_total",
		Help: "Bytes of backup files stored.",
	})
	backupSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "quiver_backup_duration_seconds",
		Help:    "How long each successful backup took, snapshot and upload.",
		Buckets: prometheus.ExponentialBuckets(0.1, 4, 8),
	})
	backupLastSuccess = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_backup_last_success_timestamp_seconds",
		Help: "Unix time of the last successful backup's snapshot.",
	})
)
