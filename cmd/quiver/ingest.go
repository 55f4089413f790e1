package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/quiverdata/quiver/console"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
	"github.com/quiverdata/quiver/ingest/protoarrow"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/version"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

func init() {
	register("ingest", "run the Kafka → Protobuf → Arrow → DuckDB → Parquet or Iceberg pipeline", func() command { return &ingestCmd{} })
}

// ingestCmd is quiver ingest.
type ingestCmd struct{}

func (c *ingestCmd) Run(ctx context.Context, std cli.Stdio, args []string) error {
	fs := newFlagSet("ingest")
	o := newIngestOptions(fs)
	var conf configFlags
	conf.register(fs)
	pos, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	if _, err := conf.apply(fs, false); err != nil {
		return err
	}
	if conf.print {
		return printConfig(std.Out, fs)
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	log, err := newLogger(std.Err, *o.logLevel, *o.logFormat)
	if err != nil {
		return err
	}
	logStart(log, "ingest")
	o.visit(fs)
	cfg, src, err := o.pipeline(ctx, log)
	defer o.close()
	if err != nil {
		return err
	}
	p, err := ingest.New(cfg)
	switch {
	case errors.Is(err, protoarrow.ErrSpec):
		return usagef("--normalize: %s", strings.TrimPrefix(err.Error(), ingest.ErrConfig.Error()+": new decoder: "))
	case err != nil:
		return usagef("%s", strings.TrimPrefix(err.Error(), ingest.ErrConfig.Error()+": "))
	}

	checkCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	parts, err := src.Check(checkCtx)
	cancel()
	switch {
	case errors.Is(err, kafka.ErrUnknownTopic):
		return usagef("--topic: topic %q does not exist on %s", *o.topic, *o.brokers)
	case err != nil:
		return fmt.Errorf("%w (check --brokers and that Kafka is up)", err)
	}
	log.Info("topic found", "topic", *o.topic, "partitions", parts)

	if *o.httpAddr != "" {
		// The console's ingest view reads the pipeline through pipe, so the
		// server may start before the pipeline exists.
		var pipe atomic.Pointer[ingest.Pipeline]
		pipe.Store(p)
		live := func() any {
			if p := pipe.Load(); p != nil {
				return p.Live()
			}
			return nil
		}
		stop, err := serveMetrics(*o.httpAddr, live, log, announcer(std.Err, *o.logFormat, log))
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := p.Run(ctx, src)
	if errors.Is(err, ingest.ErrConfig) {
		return usagef("%s", strings.TrimPrefix(err.Error(), ingest.ErrConfig.Error()+": "))
	}
	log.Info("ingest finished", rep.Attrs()...)
	if werr := rep.WriteText(std.Out); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}

// ingestOptions are quiver ingest's flags. quiver serve --ingest's file
// takes the same names as keys (see ingestfile.go): both are read through
// the flag set newIngestOptions declares, so the two cannot drift.
type ingestOptions struct {
	brokers      *string
	topic        *string
	group        *string
	protoFile    *string
	importPaths  *string
	message      *string
	dbPath       *string
	table        *string
	exportDir    *string
	lf           lakeFlags
	lakeBacklog  *int
	commitEvery  *time.Duration
	compactEvery *time.Duration
	targetFileMB *int64
	snapKeep     *time.Duration
	orphanAge    *time.Duration
	retention    *time.Duration
	batchRows    *int
	flushEvery   *time.Duration
	decoders     *int
	inserters    *int
	queueMsgs    *int
	queueMB      *int64
	queueBatches *int
	rotateMB     *int64
	rotateAge    *time.Duration
	normalize    *string
	normTable    *string
	deadTable    *string
	partitionBy  *string
	normPartBy   *string
	rowGroup     *int
	parquetVer   *string
	ceilingMB    *int64
	minFreeMB    *int64
	reportEvery  *time.Duration
	httpAddr     *string
	clients      *int
	instanceID   *string
	sessionTO    *time.Duration
	start        *string
	maxPoll      *int
	fetchMaxMB   *int
	fetchPartMB  *int
	idleExit     *time.Duration
	shutdownTO   *time.Duration
	threads      *int
	memLimit     *string
	logLevel     *string
	logFormat    *string
	// set holds the flags given; served says the pipeline runs inside
	// quiver serve, which gives it its database.
	set     map[string]bool
	served  bool
	closers []func() error
}

// newIngestOptions declares quiver ingest's flags on fs.
func newIngestOptions(fs *flag.FlagSet) *ingestOptions {
	o := &ingestOptions{}
	o.brokers = fs.String("brokers", "", "Kafka seed brokers, HOST:PORT[,HOST:PORT...] (required)")
	o.topic = fs.String("topic", "", "topic to consume (required)")
	o.group = fs.String("group", "", "consumer group; processes with the same group share the topic's partitions (required)")
	o.protoFile = fs.String("proto", "", ".proto file describing the messages (required)")
	o.importPaths = fs.String("import-path", "", "comma-separated directories to resolve the .proto file's imports (default: its directory)")
	o.message = fs.String("message", "", "full name of the message type, e.g. pkg.Event (required)")
	o.dbPath = fs.String("db", "", "live DuckDB database file (required)")
	o.table = fs.String("table", "", "table receiving one row per message (required)")
	o.exportDir = fs.String("export-dir", "", "directory for Parquet exports of rotated database files; enables rotation")
	o.lakeBacklog = fs.Int("lake-max-backlog", 4, "with --lake, pause consumption while more rotated files than this wait for the lake")
	o.commitEvery = fs.Duration("commit-interval", ingest.DefaultCommitInterval, "with --lake, commit what the pipeline has to the lake this often: the live segment rotates at least this often (0: only at --rotate-mb or --rotate-age)")
	o.compactEvery = fs.Duration("compact-interval", ingest.DefaultCompactInterval, "with --lake, compact the lake tables this often in the background: rewrite small files into --target-file-mb ones, expire snapshots past --snapshot-retention, delete orphan files (0: no compactor; only the process consuming partition 0 compacts)")
	o.targetFileMB = fs.Int64("target-file-mb", lake.DefaultCompactTargetBytes>>20, "with --lake, the size in MiB the compactor writes, and below which it counts a file as small")
	o.snapKeep = fs.Duration("snapshot-retention", time.Hour, "with --lake, the compactor expires snapshots older than this (a query planned on a snapshot may read it this long)")
	o.orphanAge = fs.Duration("orphan-age", time.Hour, "with --lake, the compactor deletes unreferenced data files last written longer ago than this (keep it above the longest commit)")
	o.retention = fs.Duration("retention", 0, "inside quiver serve with a lake: delete from the served tables the rows the lake holds once their Kafka timestamp is this old (0: keep them)")
	o.batchRows = fs.Int("batch-rows", ingest.DefaultBatchRows, "messages per insert batch")
	o.flushEvery = fs.Duration("flush-interval", 2*time.Second, "insert a partial batch after it waited this long")
	o.decoders = fs.Int("decoders", 0, "decoder goroutines (0: one per CPU)")
	o.inserters = fs.Int("inserters", ingest.DefaultInserters, "DuckDB insert connections")
	o.queueMsgs = fs.Int("queue-messages", 0, "messages buffered before decoding (0: batch-rows × (decoders+1))")
	o.queueMB = fs.Int64("queue-mb", 0, "MiB of messages buffered before decoding (0: 256 × (decoders+1))")
	o.queueBatches = fs.Int("queue-batches", 4, "decoded batches buffered before inserting")
	o.rotateMB = fs.Int64("rotate-mb", 4096, "rotate the database file at this size in MB; with --lake, the segment: its streamed Parquet and its database file (needs --export-dir or --lake; 0: never by size)")
	o.rotateAge = fs.Duration("rotate-age", time.Hour, "rotate the database file at this age (needs --export-dir or --lake; 0: never by age)")
	o.normalize = fs.String("normalize", "", "normalizer spec: comma-separated field paths for a flat second table, e.g. 'id, items[].sku AS sku'")
	o.normTable = fs.String("norm-table", "", "table for normalized rows (default: TABLE_norm)")
	o.deadTable = fs.String("dead-letter-table", "", "table for messages that fail to decode (default: TABLE_dead_letters)")
	o.partitionBy = fs.String("partition-by", segment.DefaultPartition, "partitioning of the exported table: hive keys name=SQL expression or column, comma-separated; with --lake also Iceberg transforms, e.g. 'day(_timestamp), region'; 'none' for none")
	o.normPartBy = fs.String("norm-partition-by", segment.DefaultPartition, "hive partitioning of the exported normalized table")
	o.rowGroup = fs.Int("row-group-size", 0, fmt.Sprintf("rows per Parquet row group (0: %d in --export-dir, DuckDB's 122880 in --lake)", segment.DefaultRowGroupSize))
	o.parquetVer = fs.String("parquet-version", segment.DefaultParquetVersion, "Parquet version of the exported and lake files: V2 (delta-encoded integers and strings; smaller files, faster scans) or V1 (PLAIN integers, for readers without V2's encodings)")
	o.ceilingMB = fs.Int64("disk-ceiling-mb", 0, "pause consumption while the database, rotated files and exports take this many MB (0: no ceiling)")
	o.minFreeMB = fs.Int64("min-free-mb", 1024, "pause consumption while the disk has less free space in MB (0: no floor)")
	o.reportEvery = fs.Duration("report-interval", 10*time.Second, "log a progress report this often")
	o.httpAddr = fs.String("http", "", "serve the web console's ingest view, /metrics and /healthz on HOST:PORT (optional; port 0 picks one)")
	o.clients = fs.Int("kafka-clients", 1, "consumer-group members in this process")
	o.instanceID = fs.String("instance-id", "", "static group membership id, so a restarted process gets its partitions back at once (default: derived from the host name and --db; 'none': dynamic membership)")
	o.sessionTO = fs.Duration("session-timeout", 0, "consumer-group session timeout (0: franz-go's 45s)")
	o.start = fs.String("start", "earliest", "where partitions with no stored offset start: earliest or latest")
	o.maxPoll = fs.Int("max-poll-records", 10_000, "records handed to the pipeline per poll")
	o.fetchMaxMB = fs.Int("fetch-max-mb", 50, "largest Kafka fetch response in MB (bounds memory buffered in the client)")
	o.fetchPartMB = fs.Int("fetch-partition-mb", kafka.DefaultFetchPartitionBytes>>20, "most one fetch brings of one partition, in MB (larger fetches cost a little less CPU per message and several times their size in memory)")
	o.idleExit = fs.Duration("idle-exit", 0, "exit cleanly after no message arrived for this long (0: run until stopped)")
	o.shutdownTO = fs.Duration("shutdown-timeout", 30*time.Second, "time allowed to commit in-flight batches and finish a running export at exit")
	o.threads = fs.Int("threads", 0, "DuckDB worker threads (0: DuckDB's default)")
	o.memLimit = fs.String("memory-limit", "", "DuckDB memory limit, e.g. 4GB")
	o.logLevel = fs.String("log-level", "info", "log level: debug, info, warn or error")
	o.logFormat = fs.String("log-format", "text", logFormatUsage)
	o.lf.register(fs)
	return o
}

// visit records which flags fs was given.
func (o *ingestOptions) visit(fs *flag.FlagSet) {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
}

// close closes what pipeline opened (the lake's catalog).
func (o *ingestOptions) close() {
	for _, c := range o.closers {
		_ = c()
	}
	o.closers = nil
}

// pipeline checks the options and returns the pipeline's configuration
// and its Kafka source. Errors a user made are usage errors.
func (o *ingestOptions) pipeline(ctx context.Context, log *slog.Logger) (cfg ingest.Config, src *kafka.Source, err error) {
	set := o.set
	for _, req := range []struct{ name, val string }{
		{"brokers", *o.brokers}, {"topic", *o.topic}, {"group", *o.group}, {"proto", *o.protoFile},
		{"message", *o.message}, {"table", *o.table},
	} {
		if strings.TrimSpace(req.val) == "" {
			return cfg, nil, usagef("--%s is required", req.name)
		}
	}
	if !o.served && strings.TrimSpace(*o.dbPath) == "" {
		return cfg, nil, usagef("--db is required")
	}
	withLake := o.lf.lake != ""
	switch {
	case withLake && *o.exportDir != "":
		return cfg, nil, usagef("--lake and --export-dir cannot be used together: the lake replaces the Parquet export")
	case withLake && *o.clients != 1:
		return cfg, nil, usagef("--lake runs one consumer per process (--kafka-clients 1); start more processes to scale out")
	case !withLake:
		for _, f := range []string{"catalog", "namespace", "lake-max-backlog", "commit-interval", "retention", "compact-interval", "target-file-mb", "snapshot-retention", "orphan-age", "s3-endpoint", "s3-region", "s3-path-style", "catalog-credential", "catalog-token"} {
			if set[f] {
				return cfg, nil, usagef("--%s needs --lake", f)
			}
		}
	}
	if *o.exportDir == "" && !withLake {
		for _, f := range []string{"rotate-mb", "rotate-age", "partition-by", "norm-partition-by", "row-group-size", "parquet-version"} {
			if set[f] {
				return cfg, nil, usagef("--%s needs --export-dir or --lake", f)
			}
		}
	}
	if _, err := segment.ParseParquetVersion(*o.parquetVer); err != nil {
		return cfg, nil, usagef("--parquet-version: %v", err)
	}
	if *o.normalize == "" && (set["norm-table"] || set["norm-partition-by"]) {
		return cfg, nil, usagef("--norm-table and --norm-partition-by need --normalize")
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"batch-rows", int64(*o.batchRows)}, {"decoders", int64(*o.decoders)}, {"inserters", int64(*o.inserters)},
		{"queue-messages", int64(*o.queueMsgs)}, {"queue-mb", *o.queueMB}, {"queue-batches", int64(*o.queueBatches)}, {"rotate-mb", *o.rotateMB},
		{"row-group-size", int64(*o.rowGroup)}, {"disk-ceiling-mb", *o.ceilingMB}, {"min-free-mb", *o.minFreeMB},
		{"kafka-clients", int64(*o.clients)}, {"max-poll-records", int64(*o.maxPoll)}, {"threads", int64(*o.threads)},
		{"fetch-max-mb", int64(*o.fetchMaxMB)}, {"fetch-partition-mb", int64(*o.fetchPartMB)}, {"target-file-mb", *o.targetFileMB}} {
		if n.v < 0 {
			return cfg, nil, usagef("--%s cannot be negative", n.name)
		}
	}
	if *o.batchRows == 0 || *o.inserters == 0 || *o.clients == 0 {
		return cfg, nil, usagef("--batch-rows, --inserters and --kafka-clients must be at least 1")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"flush-interval", *o.flushEvery}, {"rotate-age", *o.rotateAge}, {"session-timeout", *o.sessionTO}, {"idle-exit", *o.idleExit}, {"shutdown-timeout", *o.shutdownTO},
		{"commit-interval", *o.commitEvery}, {"retention", *o.retention}, {"compact-interval", *o.compactEvery},
		{"snapshot-retention", *o.snapKeep}, {"orphan-age", *o.orphanAge}} {
		if d.v < 0 {
			return cfg, nil, usagef("--%s cannot be negative", d.name)
		}
	}
	if set["retention"] && !o.served {
		return cfg, nil, usagef("--retention applies inside quiver serve (a pipeline of --ingest with a lake): quiver ingest's rotated files already leave the local disk")
	}
	if !o.served && (*o.exportDir != "" || withLake) && *o.rotateMB == 0 && *o.rotateAge == 0 {
		return cfg, nil, usagef("--export-dir and --lake need --rotate-mb or --rotate-age to be non-zero")
	}
	var partKeys []segment.PartitionKey
	var lakeParts []lake.PartitionField
	if withLake {
		if set["partition-by"] {
			if lakeParts, err = icebergPartitionFlag(*o.partitionBy); err != nil {
				return cfg, nil, err
			}
		}
	} else if partKeys, err = partitionFlag("partition-by", *o.partitionBy); err != nil {
		return cfg, nil, err
	}
	normKeys, err := partitionFlag("norm-partition-by", *o.normPartBy)
	if err != nil {
		return cfg, nil, err
	}

	var imports []string
	for _, p := range strings.Split(*o.importPaths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			imports = append(imports, p)
		}
	}
	md, err := protoarrow.Compile(ctx, *o.protoFile, imports, *o.message)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return cfg, nil, usagef("--proto: %s", oneLine(err))
		}
		return cfg, nil, usagef("--proto/--message: %s", oneLine(err))
	}

	src, err = kafka.New(
		kafka.Brokers(*o.brokers), kafka.Topic(*o.topic), kafka.Group(*o.group), kafka.Clients(*o.clients),
		kafka.InstanceID(defaultInstanceID(*o.instanceID, *o.dbPath)), kafka.StartOffset(*o.start), kafka.MaxPollRecords(*o.maxPoll),
		kafka.SessionTimeout(*o.sessionTO), kafka.FetchMaxBytes(int32(min(*o.fetchMaxMB, 1024))<<20),
		kafka.FetchMaxPartitionBytes(int32(min(*o.fetchPartMB, 1024))<<20), kafka.Logger(log),
	)
	if err != nil {
		return cfg, nil, usagef("%s", strings.TrimPrefix(err.Error(), "new kafka source: "))
	}
	cfg = ingest.Config{
		DBPath: *o.dbPath, Table: *o.table, Message: md,
		Normalize: *o.normalize, NormTable: *o.normTable, DeadLetterTable: *o.deadTable,
		BatchRows: *o.batchRows, FlushInterval: *o.flushEvery, Decoders: *o.decoders, Inserters: *o.inserters,
		QueueMessages: *o.queueMsgs, QueueBytes: *o.queueMB << 20, QueueBatches: *o.queueBatches,
		ExportDir: *o.exportDir, PartitionBy: partKeys, NormPartitionBy: normKeys, RowGroupSize: *o.rowGroup, ParquetVersion: *o.parquetVer,
		DiskCeiling: *o.ceilingMB << 20, MinFreeDisk: *o.minFreeMB << 20,
		ReportInterval: *o.reportEvery, IdleExit: *o.idleExit, ShutdownTimeout: *o.shutdownTO,
		Threads: *o.threads, MemoryLimit: *o.memLimit, Logger: log,
	}
	if !o.served && (*o.exportDir != "" || withLake) {
		cfg.Rotate = segment.Policy{MaxBytes: *o.rotateMB << 20, MaxAge: *o.rotateAge}
	}
	if withLake {
		lcfg, err := o.lf.config()
		if err != nil {
			return cfg, nil, err
		}
		octx, cancel := context.WithTimeout(ctx, o.lf.connectTimeout+5*time.Second)
		lk, err := lake.Open(octx, lcfg)
		cancel()
		if err != nil {
			return cfg, nil, fmt.Errorf("open the lake: %w", err)
		}
		o.closers = append(o.closers, lk.Close)
		if *o.lakeBacklog < 1 {
			return cfg, nil, usagef("--lake-max-backlog must be at least 1")
		}
		cfg.LakeMaxBacklog = *o.lakeBacklog
		cfg.CommitInterval = *o.commitEvery
		cfg.Retention = *o.retention
		cfg.Lake = &ingest.LakeConfig{Lake: lk, Namespace: o.lf.namespace, Group: *o.group, Topic: *o.topic, PartitionBy: lakeParts,
			Maintain: ingest.Maintenance{Interval: *o.compactEvery, TargetFileBytes: *o.targetFileMB << 20, SnapshotRetention: *o.snapKeep, OrphanAge: *o.orphanAge}}
	}
	if *o.reportEvery == 0 {
		cfg.ReportInterval = -1
	}
	return cfg, src, nil
}

// defaultInstanceID is the static membership id: the flag's value, none
// for "none", or one derived from the host name and the database path, so
// a restarted process rejoins as itself and gets its partitions back
// without waiting for the group to time the old member out.
func defaultInstanceID(flagValue, dbPath string) string {
	switch flagValue {
	case "none":
		return ""
	case "":
	default:
		return flagValue
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		abs = dbPath
	}
	sum := sha256.Sum256([]byte(abs))
	return fmt.Sprintf("quiver-%s-%x", host, sum[:6])
}

// hiveStrftime matches a hive key computed as strftime(column, 'format').
var hiveStrftime = regexp.MustCompile(`^strftime\(\s*"?([A-Za-z_][A-Za-z0-9_]*)"?\s*,\s*'([^']*)'\s*\)$`)

// icebergPartitionFlag parses --partition-by for a lake: Iceberg transforms
// ("day(_timestamp), region"), or the hive keys of the Parquet export
// mapped onto them: a column is identity, strftime(col, '%Y-%m-%d') is
// day(col), and a format with %H is hour(col).
func icebergPartitionFlag(v string) ([]lake.PartitionField, error) {
	if !strings.Contains(v, "=") {
		f, err := lake.ParsePartitionSpec(v)
		if err != nil {
			return nil, usagef("--partition-by: %s", strings.TrimPrefix(err.Error(), "iceberg: "))
		}
		if f == nil {
			f = []lake.PartitionField{}
		}
		return f, nil
	}
	keys, err := segment.ParsePartitionSpec(v)
	if err != nil {
		return nil, usagef("--partition-by: %s", strings.TrimPrefix(err.Error(), "parse partition spec "))
	}
	out := []lake.PartitionField{}
	for _, k := range keys {
		if k.Expr == "" || hiveColumn.MatchString(k.Expr) {
			col := strings.Trim(k.Expr, `"`)
			if col == "" {
				col = k.Name
			}
			out = append(out, lake.PartitionField{Column: col, Transform: lake.Identity, Name: k.Name})
			continue
		}
		m := hiveStrftime.FindStringSubmatch(k.Expr)
		if m == nil {
			return nil, usagef("--partition-by: %s=%s has no Iceberg transform: use a column, strftime(col, '%%Y-%%m-%%d') or an hour format, or day(col)/hour(col)", k.Name, k.Expr)
		}
		tr := lake.Day
		if strings.Contains(m[2], "%H") {
			tr = lake.Hour
		}
		out = append(out, lake.PartitionField{Column: m[1], Transform: tr, Name: k.Name})
	}
	return out, nil
}

// hiveColumn matches a hive key that is a plain column.
var hiveColumn = regexp.MustCompile(`^"?[A-Za-z_][A-Za-z0-9_]*"?$`)

// partitionFlag parses a --partition-by value; "none" gives an empty,
// non-nil list (no partitioning) rather than the default.
func partitionFlag(name, v string) ([]segment.PartitionKey, error) {
	keys, err := segment.ParsePartitionSpec(v)
	if err != nil {
		return nil, usagef("--%s: %s", name, strings.TrimPrefix(err.Error(), "parse partition spec "))
	}
	if keys == nil {
		keys = []segment.PartitionKey{}
	}
	return keys, nil
}

// serveMetrics serves /metrics, /healthz and, at /, the web console's
// ingest view, which shows what live returns (nil: nothing yet), until the
// returned stop runs.
func serveMetrics(addr string, live func() any, log *slog.Logger, announce func(proto, addr string)) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("--http: %v", err)
	}
	stop, err := serveMetricsOn(ln, live, log)
	if err != nil {
		ln.Close()
		return nil, err
	}
	announce("http", ln.Addr().String())
	return stop, nil
}

// serveMetricsOn is serveMetrics on a listener. A panic answering a
// request costs that request a 500, like on quiver serve's HTTP endpoint
// (server.RecoverHTTP).
func serveMetricsOn(ln net.Listener, live func() any, log *slog.Logger) (func(), error) {
	con, err := console.New(console.Options{Kind: console.KindIngest, Live: live, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("web console: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			Status string `json:"status"`
			version.Info
		}{"ok", version.Get()})
	})
	mux.Handle("/", con)
	srv := &http.Server{Handler: server.RecoverHTTP(log, mux), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// oneLine joins a multi-line error message into one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
