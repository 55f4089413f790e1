package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
)

// KafkaConfig configures the kafka suite.
type KafkaConfig struct {
	Messages   int
	Partitions int32
	// Flat uses the seed's flat 14-field message; else its nested one.
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
// rows (seeds/003).
func Kafka(ctx context.Context, cfg KafkaConfig) (*Report, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := ingest.NewBench(ctx, ingest.BenchConfig{
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
	stages := []string{ingest.StageConsume, ingest.StageDecode, ingest.StageInsert, ingest.StageNative, ingest.StagePipeline}
	cs := make([]Contender, len(stages))
	for i, st := range stages {
		cs[i] = Contender{Name: st, Run: func() (Sample, error) {
			res, err := b.Run(ctx, st)
			return Sample{Dur: res.Duration, Bytes: res.Bytes, Rows: res.Rows}, err
		}}
	}
	stats, err := Alternate(cfg.Reps, cs...)
	if err != nil {
		return nil, err
	}
	shape := "nested (the seed's BidRequest)"
	if cfg.Flat {
		shape = "flat, 14 fields"
	}
	r := &Report{Suite: "kafka", Reps: cfg.Reps}
	t := &Table{
		Title:   fmt.Sprintf("Kafka pipeline: %s messages, %s, %d partitions, in-process broker", fmtRows(int64(cfg.Messages)), shape, cfg.Partitions),
		Note:    "Each stage alone, then the whole pipeline (first delivery to last commit); native is DuckDB's INSERT INTO t2 SELECT * FROM t of the same rows.",
		Columns: []string{"stage", "ms", "rows/s", "MB/s", "vs native"},
	}
	native := stats[3]
	for _, s := range stats {
		r.Add("kafka", shape, s)
		t.Rows = append(t.Rows, []string{s.Name, fmtMS(s), fmtRate(s.RowsPerSec()), fmtMBps(s), fmtX(s.RowsPerSec() / native.RowsPerSec())})
		t.Bars = append(t.Bars, Bar{Group: shape, Series: s.Name, Value: s.RowsPerSec(), Unit: "rows/s"})
	}
	r.Tables = append(r.Tables, t)
	return r, nil
}
