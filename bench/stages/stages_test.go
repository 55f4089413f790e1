package stages_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/bench/stages"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
)

// kafkaSourceFor is the pipeline stage's source: a group consumer.
func kafkaSourceFor(log *slog.Logger) func([]string, string, string) (ingest.Source, error) {
	return func(brokers []string, topic, group string) (ingest.Source, error) {
		return kafka.New(kafka.Brokers(brokers...), kafka.Topic(topic), kafka.Group(group), kafka.Logger(log))
	}
}

// testLogger logs warnings to t (everything when QUIVER_TEST_LOG is set).
func testLogger(t testing.TB) *slog.Logger {
	lvl := slog.LevelWarn
	if os.Getenv("QUIVER_TEST_LOG") != "" {
		lvl = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: lvl}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestRun(t *testing.T) {
	res, err := stages.Run(context.Background(), stages.Config{
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
	if got, want := strings.Join(names, ","), "consume,decode,insert,native,parquet,pipeline"; got != want {
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
