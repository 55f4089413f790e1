package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
	"io"
)

// readmeLake is the lake directory the README's replica example names.
const readmeLake = "/tmp/quiver-lake"

// writeReadmeLake makes quiver.events in the README's lake: rows rows of
// an id and 64 random hex characters, which compress little, so that a
// scan spans several 1 MiB parts.
func writeReadmeLake(t *testing.T, rows int) {
	t.Helper()
	os.RemoveAll(readmeLake)
	t.Cleanup(func() { os.RemoveAll(readmeLake) })
	if err := os.MkdirAll(readmeLake, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lk, err := lake.Open(ctx, lake.Config{Warehouse: "file://" + readmeLake})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.String},
	}, nil)
	tb, err := lk.Table(ctx, "quiver", "events", schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One commit, so one data file, per 10,000 rows.
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	buf := make([]byte, 32)
	for from := 0; from < rows; from += 10_000 {
		to := min(from+10_000, rows)
		for i := from; i < to; i++ {
			rand.Read(buf)
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append(hex.EncodeToString(buf))
		}
		rec := b.NewRecordBatch()
		rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		_, err := tb.Commit(ctx, rdr, lake.Offsets{Group: "readme", Topic: "events",
			Ranges: map[int32]lake.Range{0: {Start: int64(from), End: int64(to), First: from == 0}}})
		rdr.Release()
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadme_LakeReplicasAsWritten runs the README's three replicas and
// its two queries exactly as written, over a lake made at the path it
// names: every replica serves the lake, a scan is split into endpoints
// that list all three, and the queries print the count and write every
// row to Parquet.
func TestReadme_LakeReplicasAsWritten(t *testing.T) {
	var serves, queries []string
	for _, c := range readme.Commands(t, "quiver serve") {
		if strings.Contains(c, "--lake file://"+readmeLake) {
			serves = append(serves, c)
		}
	}
	for _, c := range readme.Commands(t, "quiver query --server 127.0.0.1:3134") {
		queries = append(queries, c)
	}
	if len(serves) != 3 || len(queries) != 2 {
		t.Fatalf("the README shows %d lake replicas and %d queries of them, want 3 and 2", len(serves), len(queries))
	}
	const rows = 60_000
	writeReadmeLake(t, rows)
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var flights []string
	var dones []chan error
	for _, line := range serves {
		started := make(chan *server.Server, 1)
		done := make(chan error, 1)
		args := strings.Fields(line)[2:]
		go func() {
			done <- (&serveCmd{started: func(s *server.Server) { started <- s }}).Run(ctx, discard(), args)
		}()
		select {
		case srv := <-started:
			flights = append(flights, srv.FlightAddr)
		case err := <-done:
			t.Fatalf("%s: %v", line, err)
		case <-time.After(60 * time.Second):
			t.Fatal("serve did not start in 60 s")
		}
		dones = append(dones, done)
	}
	t.Cleanup(func() {
		cancel()
		for _, d := range dones {
			<-d
		}
	})

	c, err := client.Dial(ctx, client.Config{Addr: flights[0], User: "etl", Password: "etlpw"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.SQL().Execute(c.Context(ctx), "SELECT * FROM lake.quiver.events")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) < 3 {
		t.Errorf("endpoints: got %d, want at least 3", len(info.Endpoint))
	}
	for i, ep := range info.Endpoint {
		if len(ep.Location) != 3 || ep.Location[0].Uri != "grpc+tcp://"+flights[i%3] {
			t.Errorf("endpoint %d locations: %v", i, ep.Location)
		}
	}

	var out bytes.Buffer
	for _, q := range queries {
		out.Reset()
		if err := (queryCmd{}).Run(ctx, cli.Stdio{In: strings.NewReader(""), Out: &out, Err: io.Discard}, readme.ShellWords(t, q)[2:]); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if strings.Contains(q, "count(*)") && !strings.Contains(out.String(), "60000") {
			t.Errorf("%s printed %q, want the count 60000", q, out.String())
		}
	}
	db, err := engine.Open(ctx, engine.Options{ExternalAccess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if n, err := conn.QueryInt64(ctx, "SELECT count(DISTINCT id) FROM 'events.parquet'"); err != nil || n != rows {
		t.Errorf("events.parquet: %d distinct ids, %v; want %d", n, err, rows)
	}
}
