package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
	"github.com/quiverdata/quiver/ingest/protoarrow"
)

const testTopic = "events"

// startCluster starts an in-process Kafka with one topic.
func startCluster(t testing.TB, partitions int32) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, testTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// produce writes values to the topic, value i to partition i % partitions,
// with record timestamps one second apart from base.
func produce(t testing.TB, addrs []string, partitions int32, values [][]byte, base time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	errc := make(chan error, 1)
	for i, v := range values {
		r := &kgo.Record{Value: v, Partition: int32(i) % partitions, Timestamp: base.Add(time.Duration(i) * time.Second)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

// compile compiles testdata/events.proto and returns one of its messages.
func compile(t testing.TB, name string) protoreflect.MessageDescriptor {
	t.Helper()
	md, err := protoarrow.Compile(context.Background(), "testdata/events.proto", nil, name)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// flatValue is message i of the flat schema; every field derives from i.
func flatValue(t testing.TB, md protoreflect.MessageDescriptor, i int) []byte {
	m := dynamicpb.NewMessage(md)
	f := md.Fields()
	m.Set(f.ByName("id"), protoreflect.ValueOfInt64(int64(i)))
	m.Set(f.ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("name-%d", i)))
	m.Set(f.ByName("price"), protoreflect.ValueOfFloat64(float64(i)*0.5))
	m.Set(f.ByName("ok"), protoreflect.ValueOfBool(i%2 == 0))
	m.Set(f.ByName("qty"), protoreflect.ValueOfInt32(int32(i%1000)))
	m.Set(f.ByName("color"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(i%3)))
	ts := dynamicpb.NewMessage(f.ByName("at").Message())
	ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1_700_000_000+int64(i)))
	m.Set(f.ByName("at"), protoreflect.ValueOfMessage(ts))
	if i%5 == 0 {
		m.Set(f.ByName("blob"), protoreflect.ValueOfBytes([]byte{byte(i), 1, 2}))
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flatValues returns messages from..to-1 of the flat schema.
func flatValues(t testing.TB, md protoreflect.MessageDescriptor, from, to int) [][]byte {
	out := make([][]byte, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, flatValue(t, md, i))
	}
	return out
}

// testConfig is a pipeline config for small, fast tests.
func testConfig(t testing.TB, md protoreflect.MessageDescriptor, dir string) ingest.Config {
	return ingest.Config{
		DBPath:         filepath.Join(dir, "live.duckdb"),
		Table:          "events",
		Message:        md,
		BatchRows:      1000,
		FlushInterval:  100 * time.Millisecond,
		Decoders:       2,
		Inserters:      2,
		IdleExit:       1500 * time.Millisecond,
		ReportInterval: -1,
		Logger:         testLogger(t),
	}
}

// testLogger logs through t at warn level (info with -v and QUIVER_TEST_LOG).
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

// newSource returns a Kafka source on the test topic.
func newSource(t testing.TB, addrs []string, group string, opts ...kafka.Opt) *kafka.Source {
	t.Helper()
	src, err := kafka.New(append([]kafka.Opt{kafka.Brokers(addrs...), kafka.Topic(testTopic), kafka.Group(group),
		kafka.Logger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// runUntilIdle runs a pipeline until it has been idle for cfg.IdleExit.
func runUntilIdle(t testing.TB, cfg ingest.Config, src ingest.Source) ingest.Report {
	t.Helper()
	p, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := p.Run(ctx, src)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return rep
}

// query opens an in-memory database, attaches the given files read-only
// (as db0, db1, ...) and returns every row of sql as strings.
func query(t testing.TB, attach []string, sql string) [][]string {
	t.Helper()
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", ExternalAccess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, f := range attach {
		if _, err := c.Exec(ctx, fmt.Sprintf("ATTACH %s AS db%d (READ_ONLY)", engine.QuoteString(f), i)); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := c.Query(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		rec := rows.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, rec.NumCols())
			for j, col := range rec.Columns() {
				row[j] = valueStr(col, i)
			}
			out = append(out, row)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func valueStr(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	return a.ValueStr(i)
}

// one runs a query returning a single value.
func one(t testing.TB, attach []string, sql string) string {
	t.Helper()
	rows := query(t, attach, sql)
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("%s: got %v, want one value", sql, rows)
	}
	return rows[0][0]
}

func kafkaClients(n int) kafka.Opt { return kafka.Clients(n) }
