package stages_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/quiverdata/quiver/bench/stages"
)

// benchMessages is the workload of each benchmark iteration
// (QUIVER_BENCH_MESSAGES overrides it).
func benchMessages() int {
	if n, err := strconv.Atoi(os.Getenv("QUIVER_BENCH_MESSAGES")); err == nil && n > 0 {
		return n
	}
	return 200_000
}

// runStage measures one stage b.N times after running prep once, and
// reports rows/s and MB/s over the stage's own busy time.
func runStage(b *testing.B, cfg stages.Config, stage string, prep ...string) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Messages = benchMessages()
	cfg.Partitions = 4
	cfg.NewSource = kafkaSourceFor(quiet)
	cfg.Logger = quiet
	bench, err := stages.New(ctx, cfg)
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
	runStage(b, stages.Config{Stages: []string{stages.Consume}}, stages.Consume)
}

// BenchmarkDecode turns Protobuf into Arrow with one decoder per CPU.
func BenchmarkDecode(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Decode}}, stages.Decode)
}

// BenchmarkDecodeNormalize also builds the normalized batch.
func BenchmarkDecodeNormalize(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Decode}, Normalize: true}, stages.Decode)
}

// BenchmarkDecodeFlat decodes the 14-column flat schema.
func BenchmarkDecodeFlat(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Decode}, Flat: true}, stages.Decode)
}

// BenchmarkInsertFlat inserts flat batches: the case PRODUCT.md measured
// at 1.04M rows/s.
func BenchmarkInsertFlat(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Insert}, Flat: true}, stages.Insert, stages.Decode)
}

// BenchmarkNativeInsertFlat is the flat baseline.
func BenchmarkNativeInsertFlat(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Native}, Flat: true}, stages.Native, stages.Insert)
}

// BenchmarkPipelineFlat runs the flat schema end to end.
func BenchmarkPipelineFlat(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Pipeline}, Flat: true}, stages.Pipeline)
}

// BenchmarkInsert inserts decoded batches with two connections.
func BenchmarkInsert(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Insert}}, stages.Insert, stages.Decode)
}

// BenchmarkNativeInsert is the baseline: DuckDB's own
// INSERT INTO t2 SELECT * FROM t over the same rows.
func BenchmarkNativeInsert(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Native}}, stages.Native, stages.Insert)
}

// BenchmarkPipeline runs Kafka → decode → DuckDB end to end (rates over
// the time from the first delivery to the last commit).
func BenchmarkPipeline(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Pipeline}}, stages.Pipeline)
}

// BenchmarkPipelineNormalize adds the normalized table.
func BenchmarkPipelineNormalize(b *testing.B) {
	runStage(b, stages.Config{Stages: []string{stages.Pipeline}, Normalize: true}, stages.Pipeline)
}
