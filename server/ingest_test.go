package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
	"github.com/quiverdata/quiver/ingest/protoarrow"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

const ingestTopic = "events"

// ingestCluster starts an in-process Kafka with one topic of parts
// partitions.
func ingestCluster(t *testing.T, parts int32) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, ingestTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// produceFlat writes Flat messages with ids [from, to), round robin over
// parts partitions.
func produceFlat(t *testing.T, addrs []string, md protoreflect.MessageDescriptor, parts int32, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(ingestTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := md.Fields()
	for i := from; i < to; i++ {
		m := dynamicpb.NewMessage(md)
		m.Set(f.ByName("id"), protoreflect.ValueOfInt64(int64(i)))
		m.Set(f.ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("n%d", i)))
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		cl.Produce(ctx, &kgo.Record{Value: b, Partition: int32(i) % parts}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// ingestPipeline is a served pipeline of the Flat messages on addrs.
func ingestPipeline(t *testing.T, addrs []string, md protoreflect.MessageDescriptor) server.IngestPipeline {
	t.Helper()
	src, err := kafka.New(kafka.Brokers(addrs...), kafka.Topic(ingestTopic), kafka.Group("serve"),
		kafka.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return server.IngestPipeline{Name: "test:1", Source: src, Config: ingest.Config{
		Table: "events", Message: md, BatchRows: 500, FlushInterval: 50 * time.Millisecond,
		Decoders: 1, Inserters: 2, ReportInterval: -1,
	}}
}

// waitCount polls query over Flight until it returns want, for up to a
// minute, and returns the last count (-1 when it never answered).
func waitCount(t *testing.T, c *client.Client, query string, want int64) int64 {
	t.Helper()
	got := int64(-1)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if n, err := tryInt(c, query); err == nil {
			got = n
			if got == want {
				return got
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return got
}

// tryInt runs a query returning one BIGINT.
func tryInt(c *client.Client, query string) (int64, error) {
	r, err := c.Query(context.Background(), query)
	if err != nil {
		return 0, err
	}
	defer r.Release()
	var v int64
	for r.Next() {
		if r.RecordBatch().NumRows() > 0 {
			v = r.RecordBatch().Column(0).(*array.Int64).Value(0)
		}
	}
	return v, r.Err()
}

// TestServer_Ingest runs a Kafka pipeline inside the server: its rows are
// visible over Flight and MySQL as they commit, each once, the console
// lists the pipeline, and a restart on the same database goes on exactly
// where the last run stopped.
func TestServer_Ingest(t *testing.T) {
	addrs := ingestCluster(t, 3)
	md, err := protoarrow.Compile(context.Background(), "../ingest/testdata/events.proto", nil, "quiver.test.Flat")
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "served.duckdb")
	produceFlat(t, addrs, md, 3, 0, 3000)

	start := func() *server.Server {
		return testutil.StartServer(t, server.Config{DB: dbPath, MySQLAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
			Ingest: []server.IngestPipeline{ingestPipeline(t, addrs, md)}})
	}
	srv := start()
	c := testutil.Dial(t, srv, client.Config{})
	if got := waitCount(t, c, "SELECT count(*) FROM events", 3000); got != 3000 {
		t.Fatalf("rows over Flight: got %d, want 3000", got)
	}
	my, err := sql.Open("mysql", "root@tcp("+srv.MySQLAddr+")/main")
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	var n int64
	if err := my.QueryRow("SELECT count(DISTINCT id) FROM events").Scan(&n); err != nil || n != 3000 {
		t.Errorf("distinct ids over MySQL: got %d, %v; want 3000", n, err)
	}

	resp, err := http.Get("http://" + srv.HTTPAddr + "/api/live")
	if err != nil {
		t.Fatal(err)
	}
	var live struct {
		Pipelines []struct {
			Name string `json:"name"`
			Live struct {
				Table    string `json:"table"`
				Messages int64  `json:"messages_total"`
			} `json:"live"`
		} `json:"pipelines"`
	}
	err = json.NewDecoder(resp.Body).Decode(&live)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Pipelines) != 1 || live.Pipelines[0].Name != "test:1" || live.Pipelines[0].Live.Table != "events" || live.Pipelines[0].Live.Messages != 3000 {
		t.Errorf("console pipelines: got %+v, want test:1 into events with 3000 messages", live.Pipelines)
	}

	// A restart resumes from the offsets stored with the rows.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv.Shutdown(ctx)
	cancel()
	produceFlat(t, addrs, md, 3, 3000, 4500)
	srv = start()
	c = testutil.Dial(t, srv, client.Config{})
	if got := waitCount(t, c, "SELECT count(*) FROM events", 4500); got != 4500 {
		t.Fatalf("rows after a restart: got %d, want 4500", got)
	}
	if got := queryInt(t, c, "SELECT count(*) FROM (SELECT DISTINCT _partition, _offset FROM events)"); got != 4500 {
		t.Errorf("distinct (partition, offset) after a restart: got %d, want 4500", got)
	}
}

// TestServer_IngestRefused checks that a pipeline the served database
// cannot take stops the start with its name.
func TestServer_IngestRefused(t *testing.T) {
	addrs := ingestCluster(t, 1)
	md, err := protoarrow.Compile(context.Background(), "../ingest/testdata/events.proto", nil, "quiver.test.Flat")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*[]server.IngestPipeline)
		wants string
	}{
		{"rotation", func(ps *[]server.IngestPipeline) { (*ps)[0].Config.ExportDir = t.TempDir() }, "test:1"},
		{"same topic twice", func(ps *[]server.IngestPipeline) {
			second := ingestPipeline(t, addrs, md)
			second.Name, second.Config.Table = "test:9", "other"
			*ps = append(*ps, second)
		}, "already consumed by pipeline test:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := []server.IngestPipeline{ingestPipeline(t, addrs, md)}
			tc.edit(&ps)
			srv, err := server.Start(context.Background(), server.Config{DB: ":memory:", FlightAddr: "127.0.0.1:0",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Announce: func(string, string) {}, Ingest: ps})
			if err == nil {
				srv.Shutdown(context.Background())
				t.Fatal("got a started server, want an error")
			}
			if !strings.Contains(err.Error(), tc.wants) {
				t.Errorf("got %v, want it to name %q", err, tc.wants)
			}
		})
	}
}

// TestServer_IngestLake runs a pipeline inside the server that also feeds
// a file:// lake the server serves: every row reaches the lake once,
// through commits every interval, and the retention then deletes the
// local rows the lake holds, and only those.
func TestServer_IngestLake(t *testing.T) {
	addrs := ingestCluster(t, 2)
	md, err := protoarrow.Compile(context.Background(), "../ingest/testdata/events.proto", nil, "quiver.test.Flat")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	warehouse := lake.Config{Warehouse: "file://" + filepath.Join(dir, "lake")}
	lk, err := lake.Open(context.Background(), warehouse)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Close() })
	produceFlat(t, addrs, md, 2, 0, 2000)

	pl := ingestPipeline(t, addrs, md)
	pl.Config.Lake = &ingest.LakeConfig{Lake: lk, Namespace: "quiver", Group: "serve", Topic: ingestTopic}
	pl.Config.CommitInterval = 200 * time.Millisecond
	pl.Config.Retention = time.Hour
	srv := testutil.StartServer(t, server.Config{DB: filepath.Join(dir, "served.duckdb"),
		Lake: &server.LakeConfig{Iceberg: warehouse}, Ingest: []server.IngestPipeline{pl}})
	c := testutil.Dial(t, srv, client.Config{})
	if got := waitCount(t, c, "SELECT count(*) FROM lake.quiver.events", 2000); got != 2000 {
		t.Fatalf("rows in the lake: got %d, want 2000", got)
	}
	produceFlat(t, addrs, md, 2, 2000, 3000)
	if got := waitCount(t, c, "SELECT count(*) FROM lake.quiver.events", 3000); got != 3000 {
		t.Fatalf("rows in the lake after more: got %d, want 3000", got)
	}
	if got := queryInt(t, c, "SELECT count(*) FROM (SELECT DISTINCT _kafka_partition, _offset FROM lake.quiver.events)"); got != 3000 {
		t.Errorf("distinct (partition, offset) in the lake: got %d, want 3000", got)
	}
	// The records are new: an hour's retention keeps them all.
	if got := queryInt(t, c, "SELECT count(*) FROM events"); got != 3000 {
		t.Errorf("local rows within the retention: got %d, want 3000", got)
	}
}

// TestServer_IngestRetention checks that rows the lake holds leave the
// served tables once older than the retention, while the lake keeps
// every row once.
func TestServer_IngestRetention(t *testing.T) {
	addrs := ingestCluster(t, 2)
	md, err := protoarrow.Compile(context.Background(), "../ingest/testdata/events.proto", nil, "quiver.test.Flat")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	warehouse := lake.Config{Warehouse: "file://" + filepath.Join(dir, "lake")}
	lk, err := lake.Open(context.Background(), warehouse)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Close() })
	produceFlat(t, addrs, md, 2, 0, 1500)
	pl := ingestPipeline(t, addrs, md)
	pl.Config.Lake = &ingest.LakeConfig{Lake: lk, Namespace: "quiver", Group: "serve", Topic: ingestTopic}
	pl.Config.CommitInterval = 100 * time.Millisecond
	pl.Config.Retention = time.Millisecond
	srv := testutil.StartServer(t, server.Config{DB: filepath.Join(dir, "served.duckdb"),
		Lake: &server.LakeConfig{Iceberg: warehouse}, Ingest: []server.IngestPipeline{pl}})
	c := testutil.Dial(t, srv, client.Config{})
	if got := waitCount(t, c, "SELECT count(*) FROM lake.quiver.events", 1500); got != 1500 {
		t.Fatalf("rows in the lake: got %d, want 1500", got)
	}
	if got := waitCount(t, c, "SELECT count(*) FROM events", 0); got != 0 {
		t.Errorf("local rows past the retention: got %d, want 0", got)
	}
	produceFlat(t, addrs, md, 2, 1500, 2500)
	if got := waitCount(t, c, "SELECT count(*) FROM lake.quiver.events", 2500); got != 2500 {
		t.Fatalf("rows in the lake after more: got %d, want 2500", got)
	}
	if got := queryInt(t, c, "SELECT count(*) FROM (SELECT DISTINCT _kafka_partition, _offset FROM lake.quiver.events)"); got != 2500 {
		t.Errorf("distinct (partition, offset) in the lake: got %d, want 2500", got)
	}
}
