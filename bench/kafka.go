package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/bench/stages"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
)

// KafkaConfig configures the kafka suite.
type KafkaConfig struct {
	Messages   int
	Partitions int32
	// Flat uses the flat 14-field message; else the nested BidRequest.
	Flat bool
	// Brokers is an external Kafka; empty runs an in-process cluster.
	Brokers []string
	// Decoders and Inserters are the pipeline's decoder goroutines and
	// DuckDB insert connections (0: quiver ingest's defaults).
	Decoders, Inserters int
	// FetchPartitionBytes and FetchMaxBytes are the pipeline consumer's
	// per-partition and per-response fetch sizes (0: the defaults).
	FetchPartitionBytes, FetchMaxBytes int32
	Reps                               int
}

// Kafka times each stage of the Kafka → Protobuf → Arrow → DuckDB pipeline
// alone, then the whole pipeline, beside DuckDB's native insert of the same
// rows.
func Kafka(ctx context.Context, cfg KafkaConfig) (*report.Report, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := stages.New(ctx, stages.Config{
		Messages: cfg.Messages, Partitions: cfg.Partitions, Flat: cfg.Flat, Brokers: cfg.Brokers, Logger: quiet,
		Decoders: cfg.Decoders, Inserters: cfg.Inserters,
		NewSource: func(brokers []string, topic, group string) (ingest.Source, error) {
			return kafka.New(kafka.Brokers(brokers...), kafka.Topic(topic), kafka.Group(group), kafka.Logger(quiet),
				kafka.FetchMaxPartitionBytes(cfg.FetchPartitionBytes), kafka.FetchMaxBytes(cfg.FetchMaxBytes))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("prepare kafka bench: %w", err)
	}
	defer b.Close()
	names := []string{stages.Consume, stages.Decode, stages.Insert, stages.Native, stages.Parquet, stages.Pipeline}
	cs := make([]report.Contender, len(names))
	for i, st := range names {
		cs[i] = report.Contender{Name: st, Run: func() (report.Sample, error) {
			res, err := b.Run(ctx, st)
			return report.Sample{Dur: res.Duration, Bytes: res.Bytes, Rows: res.Rows, CPU: res.CPU}, err
		}}
	}
	stats, err := report.Alternate(cfg.Reps, cs...)
	if err != nil {
		return nil, err
	}
	shape := "nested (a BidRequest)"
	if cfg.Flat {
		shape = "flat, 14 fields"
	}
	inProcess := len(cfg.Brokers) == 0
	broker, who := "in-process broker", "the process (broker included)"
	if !inProcess {
		broker, who = "external broker", "quiver's process (not the broker)"
	}
	r := &report.Report{Suite: "kafka", Reps: cfg.Reps}
	t := &report.Table{
		Title: fmt.Sprintf("Kafka pipeline: %s messages, %s, %d partitions, %s", report.FmtRows(int64(cfg.Messages)), shape, cfg.Partitions, broker),
		Note: "Each stage alone, then the whole pipeline (first delivery to last commit); native is DuckDB's INSERT INTO t2 SELECT * FROM t of the same rows; " +
			"parquet writes the decoded batches to one Parquet file (V2, zstd level 1, as the lake's files) with one COPY over an Arrow scan, without storing them in DuckDB; " +
			"cores is the CPU time " + who + " used over the stage's time.",
		Columns: []string{"stage", "ms", "rows/s", "MB/s", "cores", "vs native"},
	}
	native, pipeline := stats[slices.Index(names, stages.Native)], stats[slices.Index(names, stages.Pipeline)]
	for _, s := range stats {
		r.Add("kafka", shape, s)
		t.Rows = append(t.Rows, []string{s.Name, report.FmtMS(s), report.FmtRate(s.RowsPerSec()), report.FmtMBps(s), fmtCores(s.Cores()), report.FmtX(s.RowsPerSec() / native.RowsPerSec())})
		t.Bars = append(t.Bars, report.Bar{Group: shape, Series: s.Name, Value: s.RowsPerSec(), Unit: "rows/s"})
	}
	t.Footer = kafkaBound(pipeline, stats[slices.Index(names, stages.Consume)], runtime.NumCPU(), inProcess)
	r.Tables = append(r.Tables, t)
	return r, nil
}

// kafkaBound says what bound the pipeline: the
// broker when the pipeline came within 0.8× of consuming alone, the CPU
// when it kept 90% of the cores busy.
func kafkaBound(pipeline, consume report.Stat, cores int, inProcess bool) string {
	vsConsume := pipeline.RowsPerSec() / consume.RowsPerSec()
	busy := pipeline.Cores()
	switch {
	case vsConsume >= 0.8:
		return fmt.Sprintf("Bound by the broker: the pipeline ran at %.2f× the rate of consuming alone.", vsConsume)
	case busy >= 0.9*float64(cores) && inProcess:
		return fmt.Sprintf("Bound by the CPU: the pipeline kept %.2f of %d cores busy (broker included) at %.2f× the rate of consuming alone.", busy, cores, vsConsume)
	case busy >= 0.9*float64(cores):
		return fmt.Sprintf("Bound by quiver's CPU: the pipeline kept %.2f of %d cores busy at %.2f× the rate of consuming alone.", busy, cores, vsConsume)
	case busy == 0:
		return fmt.Sprintf("The pipeline ran at %.2f× the rate of consuming alone; its CPU time was not measured.", vsConsume)
	}
	return fmt.Sprintf("Neither the broker nor the CPU bound it: %.2f of %d cores busy, %.2f× the rate of consuming alone; the stages waited on each other.", busy, cores, vsConsume)
}

func fmtCores(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}
