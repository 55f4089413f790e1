package segment

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The lake's metrics, registered with the default Prometheus registry.
var (
	exportsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_exports_total",
		Help: "Sealed segments exported to Parquet and deleted.",
	})
	exportErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_export_errors_total",
		Help: "Segment exports that failed (they are retried).",
	})
	exportSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "quiver_lake_export_duration_seconds",
		Help:    "Time to export one sealed segment.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
	})
	exportedRows = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_exported_rows_total",
		Help: "Rows written to Parquet.",
	})
	parquetFiles = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_parquet_files_total",
		Help: "Parquet files moved into the export directory.",
	})
	parquetBytes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_parquet_bytes_total",
		Help: "Bytes of Parquet moved into the export directory.",
	})
	diskUsed = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_lake_disk_used_bytes",
		Help: "Bytes taken by the live database, sealed segments and the export tree.",
	})
	diskFree = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_lake_disk_free_bytes",
		Help: "Free bytes on the file system holding the live database.",
	})
)
