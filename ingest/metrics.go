package ingest

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The pipeline's metrics, registered with the default Prometheus registry.
// The rates and file gauges mirror the report (see Report).
var (
	recordsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_records_total",
		Help: "Main-table rows committed (one per decoded message).",
	})
	normRecordsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_norm_records_total",
		Help: "Normalized-table rows committed.",
	})
	deadLettersTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_dead_letters_total",
		Help: "Messages that failed to decode, committed to the dead-letter table.",
	})
	bytesTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_bytes_total",
		Help: "Message payload bytes committed.",
	})
	batchesTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_batches_total",
		Help: "Batches committed.",
	})
	decodeSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "quiver_ingest_decode_duration_seconds",
		Help:    "Time to decode one batch into Arrow.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	commitSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "quiver_ingest_commit_duration_seconds",
		Help:    "Time to insert and commit one batch, waiting for its turn included.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	queuedMessages = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_queued_messages",
		Help: "Messages accepted from the source and not yet decoded.",
	})
	queuedBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_queued_bytes",
		Help: "Bytes of the messages accepted from the source and not yet decoded.",
	})
	pausedGauge = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_paused",
		Help: "1 while consumption is paused: the disk guard, or the lake is behind or failing.",
	})
	pausesTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_pauses_total",
		Help: "Pauses of consumption that ended (disk guard or lake).",
	})
	recordsPerSecond = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_records_per_second",
		Help: "Main rows per second since start (the report's records_per_second).",
	})
	totalRowsPerSecond = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_total_rows_per_second",
		Help: "Main and normalized rows per second since start.",
	})
	transferRate = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_transfer_rate_bytes_per_second",
		Help: "Payload bytes per second since start.",
	})
	duckdbFiles = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_duckdb_files_total",
		Help: "DuckDB files rotated out.",
	})
	duckdbFileBytes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_duckdb_files_bytes_total",
		Help: "Size of the DuckDB files rotated out.",
	})
	fileAvgDuration = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_file_avg_duration_seconds",
		Help: "Average time a rotated DuckDB file was live.",
	})
	nextOffset = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_ingest_next_offset",
		Help: "Next offset to consume per partition, as committed to DuckDB.",
	}, []string{"topic", "partition"})
	lakeCommits = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_commits_total",
		Help: "Sealed segments committed to the Iceberg lake.",
	})
	lakeCommitSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "quiver_ingest_lake_commit_duration_seconds",
		Help:    "Time to upload and commit one sealed segment to the lake.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
	})
	lakeCommitErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_commit_errors_total",
		Help: "Failed attempts to commit a segment to the lake (each is retried).",
	})
	lakeDroppedRanges = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_dropped_ranges_total",
		Help: "Partition ranges dropped because the lake already had them from another writer.",
	})
	lakeRemovedUploads = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_removed_uploads_total",
		Help: "Data files deleted because the commit that uploaded them never landed (a crash or a failure between upload and commit).",
	})
	lakeCompactions = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_compactions_total",
		Help: "Compactions the pipeline's compactor committed to its lake tables.",
	})
	lakeCompactedFiles = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_compacted_files_total",
		Help: "Small data files the compactor rewrote into large ones.",
	})
	lakeMaintainErrors = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_maintenance_errors_total",
		Help: "Compactor rounds that failed on a table (retried at the next round).",
	})
	lakeDataFiles = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_ingest_lake_data_files",
		Help: "Data files of a lake table, as its compactor last saw them.",
	}, []string{"table"})
	lakeDataBytes = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_ingest_lake_data_bytes",
		Help: "Bytes of data files of a lake table, as its compactor last saw them.",
	}, []string{"table"})
	retainedDeletes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_retention_deleted_rows_total",
		Help: "Rows a pipeline inside the server deleted from the served database because the lake holds them and they passed the retention.",
	})
	lakeStreamedRows = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_streamed_rows_total",
		Help: "Main-table rows written straight into the lake's Parquet files, without storing them in DuckDB, counted when their segment's stream is sealed.",
	})
	lakeUploadedAsIs = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_lake_streamed_files_uploaded_total",
		Help: "Streamed Parquet files uploaded to the lake as they were written (the others are rewritten: rows of partitions not committed, or several table partitions in one file).",
	})
	lakeBacklog = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_lake_backlog_segments",
		Help: "Sealed segments waiting to be committed to the lake (or exported).",
	})
	segmentsSealed = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_segments_sealed_total",
		Help: "Live DuckDB files sealed for export or the lake (as quiver_ingest_duckdb_files_total).",
	})
	segmentsExported = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_segments_exported_total",
		Help: "Sealed segments exported to Parquet or committed to the lake, and deleted.",
	})
	highWatermark = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_ingest_high_watermark",
		Help: "High watermark per assigned partition, as the source last saw it.",
	}, []string{"topic", "partition"})
	consumerLag = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_ingest_consumer_lag",
		Help: "Messages per assigned partition not yet committed to DuckDB: high watermark less next offset.",
	}, []string{"topic", "partition"})
	diskFreeBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_ingest_disk_free_bytes",
		Help: "Free bytes on the file system holding the live database, measured every two seconds.",
	})
	errorsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_ingest_errors_total",
		Help: "Errors the pipeline logged or hit (its status shows the last one), retried ones included.",
	})
)
