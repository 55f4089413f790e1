package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/protoarrow"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/lake"
)

// readmeBrokers is the Kafka address the docs' ingest examples name.
const readmeBrokers = "127.0.0.1:9092"

// readmeEventProto is the event.proto the docs' ingest examples read.
const readmeEventProto = `syntax = "proto3";
package acme;
message Event {
  int64 id = 1;
  string name = 2;
}
`

// TestReadme_IngestAsWritten runs each of the docs' quiver ingest
// commands that reads the Kafka at 127.0.0.1:9092 exactly as written, in
// a scratch directory holding the event.proto it names, against an
// in-process Kafka on that address whose topic holds 3,000 messages. Once
// the group's offsets reach the end of the topic, the ingest is stopped
// as SIGTERM would stop it, and every message must be in its table once:
// the DuckDB file's, or the lake's. Commands that write one lake from
// databases of their own (./data/a.duckdb, ./data/b.duckdb: several
// processes in one group) run together, and the lake must hold every
// message once. The commands for other hosts must parse.
func TestReadme_IngestAsWritten(t *testing.T) {
	var local, remote []string
	var group [][]string // the several-process commands
	for _, c := range readme.Commands(t, "quiver ingest ") {
		switch {
		case !strings.Contains(c, "--brokers "+readmeBrokers):
			remote = append(remote, c)
		case strings.Contains(c, "--lake") && !strings.Contains(c, "--db ./data/events.duckdb"):
			group = append(group, strings.Fields(c))
		default:
			local = append(local, c)
		}
	}
	if len(group) < 2 {
		t.Errorf("the docs show %d ingest commands of several processes into one lake, want at least 2", len(group))
	}
	if len(local) < 2 {
		t.Fatalf("the docs show %d ingest commands on %s, want at least 2 (a DuckDB file and the lake)", len(local), readmeBrokers)
	}
	for _, line := range remote {
		fs := newFlagSet("ingest")
		newIngestOptions(fs)
		var conf configFlags
		conf.register(fs)
		if _, err := parseFlags(discard(), fs, strings.Fields(line)[2:]); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	const n = 3000
	runs := make(map[string][][]string)
	for _, line := range local {
		name := "duckdb"
		if strings.Contains(line, "--lake") {
			name = "lake"
		}
		runs[name] = [][]string{strings.Fields(line)}
	}
	if len(group) > 0 {
		runs["lake, several processes"] = group
	}
	for name, cmds := range runs {
		t.Run(name, func(t *testing.T) {
			for _, c := range cmds {
				t.Logf("docs: %s", strings.Join(c, " "))
			}
			os.RemoveAll(readmeLake)
			t.Cleanup(func() { os.RemoveAll(readmeLake) })
			t.Chdir(t.TempDir())
			if err := os.MkdirAll("data", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile("event.proto", []byte(readmeEventProto), 0o644); err != nil {
				t.Fatal(err)
			}
			port, _ := strconv.Atoi(readmeBrokers[strings.LastIndex(readmeBrokers, ":")+1:])
			cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(2, "events"))
			if err != nil {
				t.Fatalf("kafka on %s: %v", readmeBrokers, err)
			}
			t.Cleanup(cl.Close)
			produceReadmeEvents(t, n)

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, len(cmds))
			for _, c := range cmds {
				go func() { done <- (&ingestCmd{}).Run(ctx, discard(), c[2:]) }()
			}
			waitGroupAt(t, "quiver", n, done)
			cancel()
			for range cmds {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("ingest: %v", err)
					}
				case <-time.After(time.Minute):
					t.Fatal("ingest did not stop in a minute")
				}
			}

			var got int64
			if strings.HasPrefix(name, "lake") {
				got = lakeRows(t)
			} else {
				got = duckdbRows(t, "./data/events.duckdb")
			}
			if got != n {
				t.Errorf("%d rows, want %d", got, n)
			}
		})
	}
}

// produceReadmeEvents writes n acme.Event messages, ids 0..n-1, to the topic
// events at readmeBrokers.
func produceReadmeEvents(t *testing.T, n int) {
	t.Helper()
	md, err := protoarrow.Compile(context.Background(), "event.proto", nil, "acme.Event")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(readmeBrokers), kgo.DefaultProduceTopic("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(i)))
		m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString("event "+strconv.Itoa(i)))
		v, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// waitGroupAt waits, for at most two minutes, until the group's offsets
// committed to Kafka add up to n: the pipeline commits them there only
// after its own store holds the rows. It fails at once if the ingest
// ends first.
func waitGroupAt(t *testing.T, group string, n int64, done <-chan error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(readmeBrokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var at int64
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := adm.FetchOffsets(ctx, group)
		cancel()
		if err == nil {
			at = 0
			resp.Each(func(o kadm.OffsetResponse) { at += o.At })
			if at >= n {
				return
			}
		}
		select {
		case err := <-done:
			t.Fatalf("ingest ended before it consumed the topic: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("the group's offsets reached %d of %d in two minutes", at, n)
}

// duckdbRows counts the rows of table events in the database file.
func duckdbRows(t *testing.T, path string) int64 {
	t.Helper()
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	got, err := conn.QueryInt64(ctx, "SELECT count(*) FROM events")
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// lakeRows is the row count of quiver.events in the docs' lake, from its
// current snapshot.
func lakeRows(t *testing.T) int64 {
	t.Helper()
	ctx := context.Background()
	lk, err := lake.Open(ctx, lake.Config{Warehouse: "file://" + readmeLake})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	tb, err := lk.Table(ctx, "quiver", "events", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	it, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := it.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		t.Fatal("the lake's table has no snapshot")
	}
	got, err := strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64)
	if err != nil {
		t.Fatalf("total-records: %v", err)
	}
	return got
}
