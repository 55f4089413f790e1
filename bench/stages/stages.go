// Package stages measures the ingest pipeline one stage at a time, for
// `quiver-bench kafka`: Kafka to memory, Protobuf to Arrow, Arrow into
// DuckDB, DuckDB's native INSERT … SELECT of the same rows as the
// baseline, and the whole pipeline, over a topic of generated messages
// (bench.proto). It drives package ingest from outside, through what
// ingest exports: its Decoder for the decode stage, CreateTableSQL and
// engine's InsertArrow for the insert stage, and a Pipeline over a Kafka
// source for the pipeline stage.
package stages

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kfake"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/protoarrow"
)

//go:embed bench.proto
var benchProto []byte

// Message types of the benchmark schemas.
const (
	// NestedMessage has 14 fields, one a LIST<STRUCT<..., LIST<STRUCT>>>,
	// like the Quacfka workload.
	NestedMessage = "quiver.bench.BidRequest"
	// FlatMessage has 14 scalar fields.
	FlatMessage = "quiver.bench.Flat14"
)

// NormalizeSpec is the normalizer spec the benchmark uses: one flat row
// per deal.
const NormalizeSpec = "id, user_id, country, device, publisher_id, imps[].id AS imp_id, imps[].bid_floor AS bid_floor, " +
	"imps[].deals[].id AS deal_id, imps[].deals[].price AS price, at"

// Stage names, in the order Run measures them.
const (
	Consume  = "consume"  // Kafka to memory, nothing else
	Decode   = "decode"   // Protobuf to Arrow, Decoders goroutines
	Insert   = "insert"   // Arrow into DuckDB, Inserters connections
	Native   = "native"   // DuckDB's INSERT INTO t2 SELECT * FROM t, the baseline
	Parquet  = "parquet"  // Arrow into one Parquet file through DuckDB's writer, as the lake's files are written
	Pipeline = "pipeline" // Kafka to DuckDB through the whole pipeline
)

// all is every stage, in order.
var all = []string{Consume, Decode, Insert, Native, Parquet, Pipeline}

// Config configures a Bench. Zero values take the defaults noted.
type Config struct {
	// Messages is how many messages each stage moves (1,000,000).
	Messages int
	// Partitions of the benchmark topic (8).
	Partitions int32
	// BatchRows, Decoders and Inserters as in ingest.Config.
	BatchRows, Decoders, Inserters int
	// Flat uses FlatMessage instead of the nested NestedMessage.
	Flat bool
	// Normalize also builds (decode) and inserts (pipeline) the
	// normalized table of NormalizeSpec (nested schema only).
	Normalize bool
	// Stages to run, in this order: consume, decode, insert, native,
	// pipeline (all when empty).
	Stages []string
	// Brokers is an external Kafka to use; empty starts an in-process one.
	// The benchmark creates and fills its own topic.
	Brokers []string
	// Dir holds the databases; a temporary directory when empty.
	Dir string
	// NewSource makes the pipeline stage's source: a consumer of topic in
	// group (package ingest/kafka provides one). Required for that stage.
	NewSource func(brokers []string, topic, group string) (ingest.Source, error)
	// Logger receives progress; nil means slog.Default().
	Logger *slog.Logger
}

// Result is the measurement of one stage.
type Result struct {
	Name     string
	Rows     int64 // messages moved (main rows)
	Bytes    int64 // payload bytes moved
	Duration time.Duration
	// CPU is the process's CPU time over Duration, all threads counted
	// (with the in-process broker, the broker's too); 0 when unknown.
	CPU time.Duration

	start time.Time // when Duration began
}

// Cores is how many cores the process kept busy on average over the
// stage, or 0 when its CPU time is unknown.
func (s Result) Cores() float64 { return s.CPU.Seconds() / s.Duration.Seconds() }

// RowsPerSecond is the stage's message rate.
func (s Result) RowsPerSecond() float64 { return float64(s.Rows) / s.Duration.Seconds() }

// MBPerSecond is the stage's payload rate in MB (10^6 bytes) per second.
func (s Result) MBPerSecond() float64 { return float64(s.Bytes) / 1e6 / s.Duration.Seconds() }

// Results is what Run measured.
type Results struct {
	Config   Config
	Stages   []Result
	Pipeline *ingest.Report // the pipeline stage's report, when it ran
}

// WriteText prints one line per stage, and the pipeline's report.
func (r Results) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %12s %10s %10s %14s %10s\n", "stage", "rows", "MB", "seconds", "rows/s", "MB/s")
	for _, s := range r.Stages {
		fmt.Fprintf(&b, "%-9s %12d %10.1f %10.3f %14s %10.1f\n", s.Name, s.Rows, float64(s.Bytes)/1e6,
			s.Duration.Seconds(), ingest.FormatUnderscored(s.RowsPerSecond()), s.MBPerSecond())
	}
	if r.Pipeline != nil {
		b.WriteString("\n")
		if err := r.Pipeline.WriteText(&b); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Bench is a prepared benchmark: the schema, the messages and a filled
// topic. Run measures one stage at a time; Close frees it all.
type Bench struct {
	cfg     Config
	log     *slog.Logger
	md      protoreflect.MessageDescriptor
	values  [][]byte // the messages, produced to Kafka in this order
	bytes   int64
	brokers []string
	topic   string
	records []arrow.RecordBatch // decoded batches, kept for the insert stage
	dir     string
	cleanup []func()

	lastReport ingest.Report
}

// Message is the benchmark's message type, for a harness that runs the
// pipeline over the topic itself.
func (b *Bench) Message() protoreflect.MessageDescriptor { return b.md }

// Topic is the topic the messages were produced to.
func (b *Bench) Topic() string { return b.topic }

// Run measures each stage of the pipeline alone and the whole pipeline
// on the benchmark schema, to print them side by side with DuckDB's
// native insert rate.
func Run(ctx context.Context, cfg Config) (Results, error) {
	b, err := New(ctx, cfg)
	if err != nil {
		return Results{}, err
	}
	defer b.Close()
	res := Results{Config: b.cfg}
	for _, s := range b.cfg.Stages {
		if s == Native && !slices.Contains(b.cfg.Stages, Insert) {
			if _, err := b.Run(ctx, Insert); err != nil { // native copies the inserted table
				return res, err
			}
		}
		st, err := b.Run(ctx, s)
		if err != nil {
			return res, err
		}
		if s == Pipeline {
			rep := b.lastReport
			res.Pipeline = &rep
		}
		res.Stages = append(res.Stages, st)
	}
	return res, nil
}

// New fills in cfg's defaults, compiles the benchmark schema, makes the
// messages and produces them to a new topic.
func New(ctx context.Context, cfg Config) (*Bench, error) {
	if cfg.Messages <= 0 {
		cfg.Messages = 1_000_000
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 8
	}
	if cfg.BatchRows <= 0 {
		cfg.BatchRows = ingest.DefaultBatchRows
	}
	if cfg.Decoders <= 0 {
		cfg.Decoders = runtime.GOMAXPROCS(0) // ingest.Config's default
	}
	if cfg.Inserters <= 0 {
		cfg.Inserters = ingest.DefaultInserters
	}
	if len(cfg.Stages) == 0 {
		cfg.Stages = slices.Clone(all)
	}
	for _, s := range cfg.Stages {
		if !slices.Contains(all, s) {
			return nil, fmt.Errorf("new bench: unknown stage %q", s)
		}
	}
	if cfg.Flat && cfg.Normalize {
		return nil, errors.New("new bench: the normalizer spec is for the nested schema")
	}
	if slices.Contains(cfg.Stages, Pipeline) && cfg.NewSource == nil {
		return nil, errors.New("new bench: the pipeline stage needs NewSource")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b, err := newBench(ctx, cfg)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("new bench: %w", err)
	}
	return b, nil
}

// Config is the configuration with defaults filled in.
func (e *Bench) Config() Config { return e.cfg }

// Run measures one stage. The insert stage decodes first if decode has not
// run; native needs insert to have run.
func (e *Bench) Run(ctx context.Context, stage string) (Result, error) {
	var (
		st  Result
		err error
	)
	clock := startCPUClock()
	defer clock.Stop()
	switch stage {
	case Consume:
		st, err = e.consume(ctx)
	case Decode:
		st, err = e.decode()
	case Insert:
		st, err = e.insert(ctx)
	case Native:
		st, err = e.native(ctx)
	case Parquet:
		st, err = e.parquet(ctx)
	case Pipeline:
		st, e.lastReport, err = e.pipeline(ctx)
	default:
		err = fmt.Errorf("unknown stage %q", stage)
	}
	if err != nil {
		return st, fmt.Errorf("bench %s: %w", stage, err)
	}
	clock.Stop()
	st.CPU = clock.between(st.start, st.start.Add(st.Duration))
	e.log.Info("bench stage done", "stage", st.Name, "rows", st.Rows, "seconds", st.Duration.Seconds(),
		"rows_per_second", round2(st.RowsPerSecond()), "MB_per_second", round2(st.MBPerSecond()), "cores", round2(st.Cores()))
	return st, nil
}

// Close releases the decoded batches, stops the in-process Kafka and
// removes temporary files.
func (e *Bench) Close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.cleanup = nil
}

// Bytes is the payload size of the benchmark messages.
func (e *Bench) Bytes() int64 { return e.bytes }

// newBench does New's work; on error the caller closes what it made.
func newBench(ctx context.Context, cfg Config) (*Bench, error) {
	e := &Bench{cfg: cfg, log: cfg.Logger.With("component", "bench.stages"), topic: fmt.Sprintf("quiver-bench-%d", time.Now().UnixNano())}
	tmp, err := os.MkdirTemp("", "quiver-bench-")
	if err != nil {
		return e, err
	}
	e.cleanup = append(e.cleanup, func() { os.RemoveAll(tmp) })
	e.dir = cfg.Dir
	if e.dir == "" {
		e.dir = tmp
	}
	protoPath := filepath.Join(tmp, "bench.proto")
	if err := os.WriteFile(protoPath, benchProto, 0o644); err != nil {
		return e, err
	}
	name, gen := NestedMessage, nestedMessage
	if cfg.Flat {
		name, gen = FlatMessage, flatMessage
	}
	if e.md, err = protoarrow.Compile(ctx, protoPath, nil, name); err != nil {
		return e, err
	}
	e.values, e.bytes = messages(e.md, cfg.Messages, gen)
	e.cleanup = append(e.cleanup, func() {
		for _, r := range e.records {
			r.Release()
		}
		e.records = nil
	})
	e.brokers = cfg.Brokers
	if len(e.brokers) == 0 {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(cfg.Partitions, e.topic))
		if err != nil {
			return e, fmt.Errorf("start in-process kafka: %w", err)
		}
		e.cleanup = append(e.cleanup, c.Close)
		e.brokers = c.ListenAddrs()
	}
	return e, e.produce(ctx)
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
