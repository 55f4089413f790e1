package ingest

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/mempool"
)

// DefaultInserters is the DuckDB insert connections a pipeline uses by
// default. Batches commit one at a time, in order, so an inserter whose
// batch is inserted waits for its turn to commit; the others go on
// inserting meanwhile. On the 2-core build machine the flat pipeline ran
// at 0.41-0.42x of DuckDB's native insert with 2 inserters, 0.44-0.45x
// with 3 and 0.45-0.46x with 4 (`quiver-bench kafka --inserters N`); 6
// and 8 gained nothing more. Each inserter holds one decoded batch.
const DefaultInserters = 4

// Names of the columns the pipeline adds to every main and normalized row,
// and of its bookkeeping tables.
const (
	// ColPartition is the Kafka partition a row came from (INTEGER).
	ColPartition = "_partition"
	// ColOffset is the Kafka offset a row came from (BIGINT). With
	// ColPartition it identifies the message: no two main rows share both.
	ColOffset = "_offset"
	// ColTimestamp is the Kafka record timestamp (TIMESTAMPTZ).
	ColTimestamp = "_timestamp"
	// OffsetsTable is the append-only log of committed positions: the
	// position of a partition is max(next_offset) over its rows.
	OffsetsTable = "_quiver_offsets"
	// SegmentTable holds the live file's segment id and opening time.
	SegmentTable = "_quiver_segment"
	// StreamTable lists, in lake mode, the Parquet files a segment's main
	// rows were streamed to (part, rows): the commit checks they are all
	// there before it uploads them.
	StreamTable = "_quiver_main_stream"
)

// DefaultBatchRows is DuckDB's row group size, the smallest batch that
// inserts at full speed.
const DefaultBatchRows = engine.RowGroupSize

// ErrConfig wraps every error Validate returns, so a command line can
// report them as usage errors.
var ErrConfig = errors.New("invalid ingest configuration")

// Config configures a Pipeline. Zero values take the defaults noted on each
// field; New validates it.
type Config struct {
	// DBPath is the live DuckDB file. Required, unless DB is set.
	DBPath string
	// DB, when set, is the database the pipeline writes into instead of
	// opening DBPath: quiver serve --ingest's served database, which
	// queries read while batches commit. The pipeline neither opens nor
	// closes it and never rotates it (see the package documentation,
	// "Inside the server"); DBPath then defaults to DB's path and is only
	// where the disk guard looks.
	DB *engine.DB
	// Table receives one row per decoded message. Required.
	Table string
	// Message is the Protobuf message type the values hold. Required.
	Message protoreflect.MessageDescriptor

	// Normalize is a normalizer spec (see protoarrow.WithNormalizer); when
	// set, a flat projection goes to NormTable in the same transaction.
	Normalize string
	// NormTable defaults to Table + "_norm".
	NormTable string
	// DeadLetterTable receives messages that fail to decode; it defaults
	// to Table + "_dead_letters".
	DeadLetterTable string

	// BatchRows is the messages per batch (DefaultBatchRows).
	BatchRows int
	// FlushInterval cuts a batch that has waited this long for more
	// messages (2s).
	FlushInterval time.Duration
	// Decoders is the decode concurrency (GOMAXPROCS).
	Decoders int
	// Inserters is the number of DuckDB insert connections
	// (DefaultInserters).
	Inserters int
	// QueueMessages caps the messages accepted but not yet decoded
	// (BatchRows × (Decoders+1)); at least BatchRows.
	QueueMessages int
	// QueueBytes caps the bytes of those messages (a batch's worth of
	// bytes, 256 MiB, × (Decoders+1)); whichever cap is reached first
	// holds the source back, so large messages cannot fill memory.
	QueueBytes int64
	// QueueBatches caps the decoded batches waiting for an inserter (4).
	QueueBatches int

	// ExportDir enables rotation and Parquet export when set.
	ExportDir string
	// Lake, when set, commits rotated files to Iceberg tables, exactly
	// once across processes, instead of exporting them to ExportDir.
	Lake *LakeConfig
	// CommitInterval is how often rows are committed to the lake: the
	// live segment rotates at least this often in quiver ingest --lake
	// (0: only by Rotate), and a pipeline inside the server commits its
	// new rows from the served tables (0: DefaultCommitInterval).
	CommitInterval time.Duration
	// Retention, for a pipeline inside the server with a lake, deletes
	// from the served tables the rows the lake holds once their Kafka
	// timestamp is this old (0: keep every row).
	Retention time.Duration
	// LakeMaxBacklog pauses consumption while more sealed files than this
	// wait for the lake (the object store or catalog is down or slow), and
	// resumes it once half of them are committed (4).
	LakeMaxBacklog int
	// Rotate says when the live file rotates; it needs ExportDir or Lake.
	// With either and a zero policy, files rotate at 4 GiB or 1 hour.
	Rotate segment.Policy
	// PartitionBy is the hive layout of Table's Parquet files
	// (segment.DefaultPartition when nil; an empty non-nil slice means none).
	PartitionBy []segment.PartitionKey
	// NormPartitionBy is the layout of NormTable's files (as PartitionBy).
	NormPartitionBy []segment.PartitionKey
	// RowGroupSize is the rows per Parquet row group; 0 means each
	// destination's default: segment.DefaultRowGroupSize in the export
	// directory, DuckDB's own (122,880) in the lake.
	RowGroupSize int
	// ParquetVersion is the Parquet version of the files written to the
	// export directory and the lake: V1 or V2 (segment.DefaultParquetVersion
	// when empty).
	ParquetVersion string

	// DiskCeiling pauses consumption while the live file, sealed files and
	// export tree take this many bytes (0: no ceiling).
	DiskCeiling int64
	// MinFreeDisk pauses consumption while the file system holding the
	// database has less free space (0: no floor).
	MinFreeDisk int64

	// ReportInterval is how often a report is logged (10s; <0: never).
	ReportInterval time.Duration
	// OnReport, if set, receives every periodic report.
	OnReport func(Report)
	// IdleExit stops the pipeline cleanly once no message has arrived for
	// this long (0: never).
	IdleExit time.Duration
	// ShutdownTimeout bounds the drain after the source stops, and the
	// wait for a running export (30s).
	ShutdownTimeout time.Duration

	// Threads and MemoryLimit are passed to DuckDB (0/"": its defaults).
	Threads     int
	MemoryLimit string

	// Allocator builds the decoded Arrow batches; nil means a recycling
	// allocator (batches are released once committed, and the same sizes
	// come back batch after batch).
	Allocator memory.Allocator
	// Logger receives the pipeline's logs; nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with defaults filled in and paths made absolute.
func (c Config) withDefaults() (Config, error) {
	if c.BatchRows <= 0 {
		c.BatchRows = DefaultBatchRows
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = 2 * time.Second
	}
	if c.Decoders <= 0 {
		c.Decoders = runtime.GOMAXPROCS(0)
	}
	if c.Inserters <= 0 {
		c.Inserters = DefaultInserters
	}
	if c.QueueMessages <= 0 {
		c.QueueMessages = c.BatchRows * (c.Decoders + 1)
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = maxBatchBytes * int64(c.Decoders+1)
	}
	if c.QueueBatches <= 0 {
		c.QueueBatches = 4
	}
	if c.Normalize != "" && c.NormTable == "" {
		c.NormTable = c.Table + "_norm"
	}
	if c.DeadLetterTable == "" {
		c.DeadLetterTable = c.Table + "_dead_letters"
	}
	if (c.ExportDir != "" || c.Lake != nil) && c.DB == nil && !c.Rotate.Enabled() {
		c.Rotate = segment.Policy{MaxBytes: 4 << 30, MaxAge: time.Hour}
	}
	if c.CommitInterval <= 0 && c.DB != nil {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.Lake != nil && c.DB == nil && c.CommitInterval > 0 && (c.Rotate.MaxAge == 0 || c.Rotate.MaxAge > c.CommitInterval) {
		// In quiver ingest --lake a commit is a rotated segment: the
		// segment rotates at least every interval, and the compactor
		// makes large files of the small ones (see compactor.go).
		c.Rotate.MaxAge = c.CommitInterval
	}
	if c.LakeMaxBacklog <= 0 {
		c.LakeMaxBacklog = 4
	}
	if c.PartitionBy == nil {
		c.PartitionBy, _ = segment.ParsePartitionSpec(segment.DefaultPartition)
	}
	if c.NormPartitionBy == nil {
		c.NormPartitionBy, _ = segment.ParsePartitionSpec(segment.DefaultPartition)
	}
	if c.ReportInterval == 0 {
		c.ReportInterval = 10 * time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Allocator == nil {
		c.Allocator = mempool.New()
	}
	var err error
	if c.ParquetVersion, err = segment.ParseParquetVersion(c.ParquetVersion); err != nil {
		return c, fmt.Errorf("%w: --parquet-version: %v", ErrConfig, err)
	}
	if c.DB != nil && c.DBPath == "" {
		c.DBPath = c.DB.Path()
	}
	if c.DBPath != "" && !strings.HasSuffix(c.DBPath, ":memory:") {
		if c.DBPath, err = filepath.Abs(c.DBPath); err != nil {
			return c, fmt.Errorf("%w: --db: %v", ErrConfig, err)
		}
	}
	if c.ExportDir != "" {
		if c.ExportDir, err = filepath.Abs(c.ExportDir); err != nil {
			return c, fmt.Errorf("%w: --export-dir: %v", ErrConfig, err)
		}
	}
	return c, nil
}

// validate reports the first problem with a defaulted config.
func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.DB != nil {
		switch {
		case c.ExportDir != "" || c.Rotate.Enabled():
			return bad("ingest inside the server writes into the served database, which never rotates: it takes no export directory or rotation")
		case c.Lake != nil && (c.DBPath == "" || strings.HasSuffix(c.DBPath, ":memory:")):
			return bad("a lake fed from inside the server needs a database file (quiver serve --db FILE): the lake's commits resume from the rows it keeps")
		}
	}
	switch {
	case c.DB == nil && (c.DBPath == "" || strings.HasSuffix(c.DBPath, ":memory:")):
		return bad("a database file is required (rotation and crash recovery need one)")
	case c.Table == "":
		return bad("a table name is required")
	case c.Message == nil:
		return bad("a message type is required")
	case strings.HasPrefix(c.Table, "_quiver"):
		return bad("table name %q is reserved", c.Table)
	case c.NormTable == c.Table || c.DeadLetterTable == c.Table || (c.NormTable != "" && c.NormTable == c.DeadLetterTable):
		return bad("the main, normalized and dead-letter tables must have different names")
	case c.QueueMessages < c.BatchRows:
		return bad("queue of %d messages cannot hold one batch of %d", c.QueueMessages, c.BatchRows)
	case c.QueueBytes < maxBatchBytes:
		return bad("queue of %d MiB cannot hold one batch of up to %d MiB", c.QueueBytes>>20, maxBatchBytes>>20)
	case c.Rotate.Enabled() && c.ExportDir == "" && c.Lake == nil:
		return bad("rotation needs an export directory or a lake for the rotated files")
	case c.Lake != nil && c.ExportDir != "":
		return bad("a lake and an export directory cannot be used together")
	case c.Lake != nil && (c.Lake.Lake == nil || c.Lake.Namespace == "" || c.Lake.Group == "" || c.Lake.Topic == ""):
		return bad("a lake needs an open catalog, a namespace, a group and a topic")
	case c.Lake != nil && (c.Lake.Maintain.Interval < 0 || c.Lake.Maintain.TargetFileBytes < 0 || c.Lake.Maintain.SnapshotRetention < 0 || c.Lake.Maintain.OrphanAge < 0):
		return bad("compaction intervals, sizes and ages cannot be negative")
	case c.Retention < 0:
		return bad("the retention cannot be negative")
	case c.Retention > 0 && (c.DB == nil || c.Lake == nil):
		return bad("a retention needs a pipeline inside the server with a lake: only rows the lake holds are deleted")
	case c.Rotate.MaxBytes < 0 || c.Rotate.MaxAge < 0 || c.DiskCeiling < 0 || c.MinFreeDisk < 0:
		return bad("sizes and durations cannot be negative")
	}
	if c.DB != nil {
		return nil
	}
	if fi, err := os.Stat(filepath.Dir(c.DBPath)); err != nil || !fi.IsDir() {
		return bad("directory of database %s does not exist", c.DBPath)
	}
	if c.ExportDir != "" {
		if rel, err := filepath.Rel(c.ExportDir, c.DBPath); err == nil && !strings.HasPrefix(rel, "..") {
			return bad("the database cannot live inside the export directory")
		}
	}
	return nil
}
