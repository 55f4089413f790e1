package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/ingest/protoarrow"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// TestIngestFile_Keys checks that the keys of an ingest file are quiver
// ingest's flags: every flag is a key or excluded for a reason, and every
// exclusion names a flag that exists.
func TestIngestFile_Keys(t *testing.T) {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	newIngestOptions(fs)
	keys := map[string]bool{}
	for _, k := range ingestFileKeys() {
		keys[k] = true
	}
	fs.VisitAll(func(f *flag.Flag) {
		_, excluded := servedExcluded[f.Name]
		if keys[f.Name] == excluded {
			t.Errorf("flag --%s: key %v, excluded %v; want exactly one", f.Name, keys[f.Name], excluded)
		}
	})
	for name := range servedExcluded {
		if fs.Lookup(name) == nil {
			t.Errorf("excluded key %q is not a flag of quiver ingest", name)
		}
	}
	for _, want := range []string{"brokers", "topic", "group", "proto", "message", "table", "batch-rows", "flush-interval", "normalize"} {
		if !keys[want] {
			t.Errorf("key %q missing", want)
		}
	}
}

// TestIngestFile_Errors checks that a bad ingest file is refused with the
// file, the line and the key.
func TestIngestFile_Errors(t *testing.T) {
	const good = "[[pipeline]]\nbrokers = \"127.0.0.1:1\"\ntopic = \"t\"\ngroup = \"g\"\nproto = \"x.proto\"\nmessage = \"a.B\"\ntable = \"t\"\n"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"unknown key", good + "batch-size = 10\n", []string{":8:", `unknown key "batch-size"`, "batch-rows"}},
		{"bad number", good + "batch-rows = \"many\"\n", []string{":8:", `key "batch-rows"`, "invalid"}},
		{"bad duration", "# pipelines\n" + good + "flush-interval = 5\n", []string{":9:", `key "flush-interval"`}},
		{"excluded key", good + "db = \"x.duckdb\"\n", []string{":8:", `key "db" does not apply`, "served database"}},
		{"twice", good + "topic = \"u\"\n", []string{":8:", `key "topic" is given twice`}},
		{"outside a table", "topic = \"t\"\n" + good, []string{":1:", `key "topic" is outside a [[pipeline]] table`}},
		{"other table", "[pipelines]\n", []string{":1:", "unknown table [pipelines]"}},
		{"syntax", good + "batch-rows = = 1\n", []string{":8:"}},
		{"no pipeline", "# nothing\n", []string{"no [[pipeline]] table"}},
		{"missing key", "[[pipeline]]\ntopic = \"t\"\n", []string{":1: pipeline:", "brokers is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ingest.toml")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ingestPipelines(context.Background(), path, testLog())
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, want a usage error", err)
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestServe_IngestFile runs quiver serve --ingest with a file of one
// pipeline: the topic's messages are queryable through the server.
func TestServe_IngestFile(t *testing.T) {
	srv := serveIngest(t, 2500, "--http", "")
	c := testutil.Dial(t, srv, client.Config{})
	var got int64
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, err = testutil.CountRows(context.Background(), c, "SELECT * FROM events"); err == nil && got == 2500 {
			break
		}
	}
	if got != 2500 {
		t.Fatalf("rows: got %d (%v), want 2500", got, err)
	}
}

// serveIngest starts quiver serve --ingest on a fresh Kafka topic events
// holding n Flat messages, with the extra arguments, and stops it when the
// test ends.
func serveIngest(t *testing.T, n int, extra ...string) *server.Server {
	t.Helper()
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	dir := t.TempDir()
	proto, err := filepath.Abs("../../ingest/testdata/events.proto")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(proto)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.proto"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "ingest.toml")
	text := "[[pipeline]]\nbrokers = [\"" + cl.ListenAddrs()[0] + "\"]\ntopic = \"events\"\ngroup = \"serve\"\n" +
		"proto = \"events.proto\"\nmessage = \"quiver.test.Flat\"\ntable = \"events\"\nbatch-rows = 1_000\nflush-interval = \"100ms\"\nmin-free-mb = 0\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	produceFlatCLI(t, cl.ListenAddrs(), proto, n)

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *server.Server, 1)
	done := make(chan error, 1)
	args := append([]string{"--db", filepath.Join(dir, "q.duckdb"), "--flight", "127.0.0.1:0", "--mysql", "", "--ingest", file, "--log-level", "error"}, extra...)
	go func() {
		done <- (&serveCmd{started: func(s *server.Server) { started <- s }}).Run(ctx, discard(), args)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
	})
	select {
	case srv := <-started:
		return srv
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("serve did not start")
	}
	return nil
}

// produceFlatCLI writes n quiver.test.Flat messages with ids 0..n-1 to the
// topic events.
func produceFlatCLI(t *testing.T, brokers []string, protoPath string, n int) {
	t.Helper()
	md, err := protoarrow.Compile(context.Background(), protoPath, nil, "quiver.test.Flat")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range n {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(i)))
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

func testLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
