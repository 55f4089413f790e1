package ingest_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
)

// benchMessages is the workload of each benchmark iteration
// (QUIVER_BENCH_MESSAGES overrides it).
func benchMessages() int {
	if n, err := strconv.Atoi(os.Getenv("QUIVER_BENCH_MESSAGES")); err == nil && n > 0 {
		return n
	}
	return 200_000
}

// kafkaSourceFor is the pipeline stage's source: a group consumer.
func kafkaSourceFor(log *slog.Logger) func([]string, string, string) (ingest.Source, error) {
	return func(brokers []string, topic, group string) (ingest.Source, error) {
		return kafka.New(kafka.Brokers(brokers...), kafka.Topic(topic), kafka.Group(group), kafka.Logger(log))
	}
}

// runStage measures one stage b.N times after running prep once, and
// reports rows/s and MB/s over the stage's own busy time.
func runStage(b *testing.B, cfg ingest.BenchConfig, stage string, prep ...string) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Messages = benchMessages()
	cfg.Partitions = 4
	cfg.NewSource = kafkaSourceFor(quiet)
	cfg.Logger = quiet
	bench, err := ingest.NewBench(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(bench.Close)
	for _, s := range prep {
		if _, err := bench.Run(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(bench.Bytes())
	b.ReportAllocs()
	b.ResetTimer()
	var rows int64
	var busy time.Duration
	for i := 0; i < b.N; i++ {
		st, err := bench.Run(ctx, stage)
		if err != nil {
			b.Fatal(err)
		}
		rows += st.Rows
		busy += st.Duration
	}
	b.ReportMetric(float64(rows)/busy.Seconds(), "rows/s")
	b.ReportMetric(float64(bench.Bytes())*float64(b.N)/1e6/busy.Seconds(), "MB/s")
}

// BenchmarkConsume reads the topic from the in-process Kafka, nothing else.
func BenchmarkConsume(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StageConsume}}, ingest.StageConsume)
}

// BenchmarkDecode turns Protobuf into Arrow with one decoder per CPU.
func BenchmarkDecode(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StageDecode}}, ingest.StageDecode)
}

// BenchmarkDecodeNormalize also builds the normalized batch.
func BenchmarkDecodeNormalize(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StageDecode}, Normalize: true}, ingest.StageDecode)
}

// BenchmarkDecodeFlat decodes the 14-column flat schema.
func BenchmarkDecodeFlat(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StageDecode}, Flat: true}, ingest.StageDecode)
}

// BenchmarkInsertFlat inserts flat batches: the case PRODUCT.md measured
// at 1.04M rows/s.
func BenchmarkInsertFlat(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StageInsert}, Flat: true}, ingest.StageInsert, ingest.StageDecode)
}

// BenchmarkNativeInsertFlat is the flat baseline.
func BenchmarkNativeInsertFlat(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StageNative}, Flat: true}, ingest.StageNative, ingest.StageInsert)
}

// BenchmarkPipelineFlat runs the flat schema end to end.
func BenchmarkPipelineFlat(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StagePipeline}, Flat: true}, ingest.StagePipeline)
}

// BenchmarkInsert inserts decoded batches with two connections.
func BenchmarkInsert(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StageInsert}}, ingest.StageInsert, ingest.StageDecode)
}

// BenchmarkNativeInsert is the baseline: DuckDB's own
// INSERT INTO t2 SELECT * FROM t over the same rows.
func BenchmarkNativeInsert(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StageNative}}, ingest.StageNative, ingest.StageInsert)
}

// BenchmarkPipeline runs Kafka → decode → DuckDB end to end (rates over
// the time from the first delivery to the last commit).
func BenchmarkPipeline(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StagePipeline}}, ingest.StagePipeline)
}

// BenchmarkPipelineNormalize adds the normalized table.
func BenchmarkPipelineNormalize(b *testing.B) {
	runStage(b, ingest.BenchConfig{Stages: []string{ingest.StagePipeline}, Normalize: true}, ingest.StagePipeline)
}

func TestRunBench(t *testing.T) {
	res, err := ingest.RunBench(context.Background(), ingest.BenchConfig{
		Messages: 5000, Partitions: 2, BatchRows: 1000, Normalize: true,
		NewSource: kafkaSourceFor(testLogger(t)), Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range res.Stages {
		names = append(names, s.Name)
		if s.Rows != 5000 || s.Duration <= 0 {
			t.Errorf("stage %s: got %d rows in %s, want 5000", s.Name, s.Rows, s.Duration)
		}
	}
	if got, want := strings.Join(names, ","), "consume,decode,insert,native,pipeline"; got != want {
		t.Errorf("stages: got %s, want %s", got, want)
	}
	if res.Pipeline == nil || res.Pipeline.NormRecords == 0 {
		t.Errorf("pipeline report: got %+v, want normalized rows", res.Pipeline)
	}
	var out strings.Builder
	if err := res.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "records_per_second:") || !strings.Contains(out.String(), "pipeline ") {
		t.Errorf("text:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}
