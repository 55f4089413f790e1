package main

import (
	"context"
	"crypto/sha256"
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
	"github.com/quiverdata/quiver/lake"
)

func init() {
	register("ingest", "Run the Kafka → Protobuf → Arrow → DuckDB → Parquet pipeline.", func() command { return &ingestCmd{} })
}

// ingestCmd is quiver ingest.
type ingestCmd struct{}

func (c *ingestCmd) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("ingest")
	var (
		brokers      = fs.String("brokers", "", "Kafka seed brokers, HOST:PORT[,HOST:PORT...] (required)")
		topic        = fs.String("topic", "", "topic to consume (required)")
		group        = fs.String("group", "", "consumer group; processes with the same group share the topic's partitions (required)")
		protoFile    = fs.String("proto", "", ".proto file describing the messages (required)")
		importPaths  = fs.String("import-path", "", "comma-separated directories to resolve the .proto file's imports (default: its directory)")
		message      = fs.String("message", "", "full name of the message type, e.g. pkg.Event (required)")
		dbPath       = fs.String("db", "", "live DuckDB database file (required)")
		table        = fs.String("table", "", "table receiving one row per message (required)")
		exportDir    = fs.String("export-dir", "", "directory for Parquet exports of rotated database files; enables rotation")
		lf           lakeFlags
		lakeBacklog  = fs.Int("lake-max-backlog", 4, "with --lake, pause consumption while more rotated files than this wait for the lake")
		batchRows    = fs.Int("batch-rows", ingest.DefaultBatchRows, "messages per insert batch")
		flushEvery   = fs.Duration("flush-interval", 2*time.Second, "insert a partial batch after it waited this long")
		decoders     = fs.Int("decoders", 0, "decoder goroutines (0: one per CPU)")
		inserters    = fs.Int("inserters", ingest.DefaultInserters, "DuckDB insert connections")
		queueMsgs    = fs.Int("queue-messages", 0, "messages buffered before decoding (0: batch-rows × (decoders+1))")
		queueMB      = fs.Int64("queue-mb", 0, "MiB of messages buffered before decoding (0: 256 × (decoders+1))")
		queueBatches = fs.Int("queue-batches", 4, "decoded batches buffered before inserting")
		rotateMB     = fs.Int64("rotate-mb", 4096, "rotate the database file at this size in MB; with --lake, the segment: its streamed Parquet and its database file (needs --export-dir or --lake; 0: never by size)")
		rotateAge    = fs.Duration("rotate-age", time.Hour, "rotate the database file at this age (needs --export-dir or --lake; 0: never by age)")
		normalize    = fs.String("normalize", "", "normalizer spec: comma-separated field paths for a flat second table, e.g. 'id, items[].sku AS sku'")
		normTable    = fs.String("norm-table", "", "table for normalized rows (default: TABLE_norm)")
		deadTable    = fs.String("dead-letter-table", "", "table for messages that fail to decode (default: TABLE_dead_letters)")
		partitionBy  = fs.String("partition-by", segment.DefaultPartition, "partitioning of the exported table: hive keys name=SQL expression or column, comma-separated; with --lake also Iceberg transforms, e.g. 'day(_timestamp), region'; 'none' for none")
		normPartBy   = fs.String("norm-partition-by", segment.DefaultPartition, "hive partitioning of the exported normalized table")
		rowGroup     = fs.Int("row-group-size", 0, fmt.Sprintf("rows per Parquet row group (0: %d in --export-dir, DuckDB's 122880 in --lake)", segment.DefaultRowGroupSize))
		parquetVer   = fs.String("parquet-version", segment.DefaultParquetVersion, "Parquet version of the exported and lake files: V2 (delta-encoded integers and strings; smaller files, faster scans) or V1 (PLAIN integers, for readers without V2's encodings)")
		ceilingMB    = fs.Int64("disk-ceiling-mb", 0, "pause consumption while the database, rotated files and exports take this many MB (0: no ceiling)")
		minFreeMB    = fs.Int64("min-free-mb", 1024, "pause consumption while the disk has less free space in MB (0: no floor)")
		reportEvery  = fs.Duration("report-interval", 10*time.Second, "log a progress report this often")
		httpAddr     = fs.String("http", "", "serve the web console's ingest view, /metrics and /healthz on HOST:PORT (optional; port 0 picks one)")
		clients      = fs.Int("kafka-clients", 1, "consumer-group members in this process")
		instanceID   = fs.String("instance-id", "", "static group membership id, so a restarted process gets its partitions back at once (default: derived from the host name and --db; 'none': dynamic membership)")
		sessionTO    = fs.Duration("session-timeout", 0, "consumer-group session timeout (0: franz-go's 45s)")
		start        = fs.String("start", "earliest", "where partitions with no stored offset start: earliest or latest")
		maxPoll      = fs.Int("max-poll-records", 10_000, "records handed to the pipeline per poll")
		fetchMaxMB   = fs.Int("fetch-max-mb", 50, "largest Kafka fetch response in MB (bounds memory buffered in the client)")
		fetchPartMB  = fs.Int("fetch-partition-mb", kafka.DefaultFetchPartitionBytes>>20, "most one fetch brings of one partition, in MB (larger fetches cost a little less CPU per message and several times their size in memory)")
		idleExit     = fs.Duration("idle-exit", 0, "exit cleanly after no message arrived for this long (0: run until stopped)")
		shutdownTO   = fs.Duration("shutdown-timeout", 30*time.Second, "time allowed to commit in-flight batches and finish a running export at exit")
		threads      = fs.Int("threads", 0, "DuckDB worker threads (0: DuckDB's default)")
		memLimit     = fs.String("memory-limit", "", "DuckDB memory limit, e.g. 4GB")
		logLevel     = fs.String("log-level", "info", "log level: debug, info, warn or error")
	)
	lf.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	log, err := newLogger(*logLevel)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, req := range []struct{ name, val string }{
		{"brokers", *brokers}, {"topic", *topic}, {"group", *group}, {"proto", *protoFile},
		{"message", *message}, {"db", *dbPath}, {"table", *table},
	} {
		if strings.TrimSpace(req.val) == "" {
			return usagef("--%s is required", req.name)
		}
	}
	withLake := lf.lake != ""
	switch {
	case withLake && *exportDir != "":
		return usagef("--lake and --export-dir cannot be used together: the lake replaces the Parquet export")
	case withLake && *clients != 1:
		return usagef("--lake runs one consumer per process (--kafka-clients 1); start more processes to scale out")
	case !withLake:
		for _, f := range []string{"catalog", "namespace", "lake-max-backlog", "s3-endpoint", "s3-region", "s3-path-style", "catalog-credential", "catalog-token"} {
			if set[f] {
				return usagef("--%s needs --lake", f)
			}
		}
	}
	if *exportDir == "" && !withLake {
		for _, f := range []string{"rotate-mb", "rotate-age", "partition-by", "norm-partition-by", "row-group-size", "parquet-version"} {
			if set[f] {
				return usagef("--%s needs --export-dir or --lake", f)
			}
		}
	}
	if _, err := segment.ParseParquetVersion(*parquetVer); err != nil {
		return usagef("--parquet-version: %v", err)
	}
	if *normalize == "" && (set["norm-table"] || set["norm-partition-by"]) {
		return usagef("--norm-table and --norm-partition-by need --normalize")
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"batch-rows", int64(*batchRows)}, {"decoders", int64(*decoders)}, {"inserters", int64(*inserters)},
		{"queue-messages", int64(*queueMsgs)}, {"queue-mb", *queueMB}, {"queue-batches", int64(*queueBatches)}, {"rotate-mb", *rotateMB},
		{"row-group-size", int64(*rowGroup)}, {"disk-ceiling-mb", *ceilingMB}, {"min-free-mb", *minFreeMB},
		{"kafka-clients", int64(*clients)}, {"max-poll-records", int64(*maxPoll)}, {"threads", int64(*threads)},
		{"fetch-max-mb", int64(*fetchMaxMB)}, {"fetch-partition-mb", int64(*fetchPartMB)}} {
		if n.v < 0 {
			return usagef("--%s cannot be negative", n.name)
		}
	}
	if *batchRows == 0 || *inserters == 0 || *clients == 0 {
		return usagef("--batch-rows, --inserters and --kafka-clients must be at least 1")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"flush-interval", *flushEvery}, {"rotate-age", *rotateAge}, {"session-timeout", *sessionTO}, {"idle-exit", *idleExit}, {"shutdown-timeout", *shutdownTO}} {
		if d.v < 0 {
			return usagef("--%s cannot be negative", d.name)
		}
	}
	if (*exportDir != "" || withLake) && *rotateMB == 0 && *rotateAge == 0 {
		return usagef("--export-dir and --lake need --rotate-mb or --rotate-age to be non-zero")
	}
	var partKeys []segment.PartitionKey
	var lakeParts []lake.PartitionField
	if withLake {
		if set["partition-by"] {
			if lakeParts, err = icebergPartitionFlag(*partitionBy); err != nil {
				return err
			}
		}
	} else if partKeys, err = partitionFlag("partition-by", *partitionBy); err != nil {
		return err
	}
	normKeys, err := partitionFlag("norm-partition-by", *normPartBy)
	if err != nil {
		return err
	}

	var imports []string
	for _, p := range strings.Split(*importPaths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			imports = append(imports, p)
		}
	}
	md, err := protoarrow.Compile(ctx, *protoFile, imports, *message)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return usagef("--proto: %s", oneLine(err))
		}
		return usagef("--proto/--message: %s", oneLine(err))
	}

	src, err := kafka.New(
		kafka.Brokers(*brokers), kafka.Topic(*topic), kafka.Group(*group), kafka.Clients(*clients),
		kafka.InstanceID(defaultInstanceID(*instanceID, *dbPath)), kafka.StartOffset(*start), kafka.MaxPollRecords(*maxPoll),
		kafka.SessionTimeout(*sessionTO), kafka.FetchMaxBytes(int32(min(*fetchMaxMB, 1024))<<20),
		kafka.FetchMaxPartitionBytes(int32(min(*fetchPartMB, 1024))<<20), kafka.Logger(log),
	)
	if err != nil {
		return usagef("%s", strings.TrimPrefix(err.Error(), "new kafka source: "))
	}
	cfg := ingest.Config{
		DBPath: *dbPath, Table: *table, Message: md,
		Normalize: *normalize, NormTable: *normTable, DeadLetterTable: *deadTable,
		BatchRows: *batchRows, FlushInterval: *flushEvery, Decoders: *decoders, Inserters: *inserters,
		QueueMessages: *queueMsgs, QueueBytes: *queueMB << 20, QueueBatches: *queueBatches,
		ExportDir: *exportDir, PartitionBy: partKeys, NormPartitionBy: normKeys, RowGroupSize: *rowGroup, ParquetVersion: *parquetVer,
		DiskCeiling: *ceilingMB << 20, MinFreeDisk: *minFreeMB << 20,
		ReportInterval: *reportEvery, IdleExit: *idleExit, ShutdownTimeout: *shutdownTO,
		Threads: *threads, MemoryLimit: *memLimit, Logger: log,
	}
	if *exportDir != "" || withLake {
		cfg.Rotate = segment.Policy{MaxBytes: *rotateMB << 20, MaxAge: *rotateAge}
	}
	if withLake {
		lcfg, err := lf.config()
		if err != nil {
			return err
		}
		octx, cancel := context.WithTimeout(ctx, lf.connectTimeout+5*time.Second)
		lk, err := lake.Open(octx, lcfg)
		cancel()
		if err != nil {
			return fmt.Errorf("open the lake: %w", err)
		}
		defer lk.Close()
		if *lakeBacklog < 1 {
			return usagef("--lake-max-backlog must be at least 1")
		}
		cfg.LakeMaxBacklog = *lakeBacklog
		cfg.Lake = &ingest.LakeConfig{Lake: lk, Namespace: lf.namespace, Group: *group, Topic: *topic, PartitionBy: lakeParts}
	}
	if *reportEvery == 0 {
		cfg.ReportInterval = -1
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
		return usagef("--topic: topic %q does not exist on %s", *topic, *brokers)
	case err != nil:
		return fmt.Errorf("%w (check --brokers and that Kafka is up)", err)
	}
	log.Info("topic found", "topic", *topic, "partitions", parts)

	if *httpAddr != "" {
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
		stop, err := serveMetrics(*httpAddr, live, log)
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
	if werr := rep.WriteText(os.Stdout); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
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
func serveMetrics(addr string, live func() any, log *slog.Logger) (func(), error) {
	con, err := console.New(console.Options{Kind: console.KindIngest, Live: live, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("web console: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("--http: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/", con)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "quiver: http listening on %s\n", ln.Addr())
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
