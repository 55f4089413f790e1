package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/protoarrow"
)

// compileText compiles a .proto source written to dir and returns message
// acme.E.
func compileText(t *testing.T, dir, name, src string) protoreflect.MessageDescriptor {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := protoarrow.Compile(context.Background(), path, nil, "acme.E")
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// eValues encodes messages from..to-1 of md, setting every int64 field to
// i and every string field to a text of i.
func eValues(t *testing.T, md protoreflect.MessageDescriptor, from, to int) [][]byte {
	var out [][]byte
	for i := from; i < to; i++ {
		m := dynamicpb.NewMessage(md)
		fs := md.Fields()
		for j := 0; j < fs.Len(); j++ {
			switch f := fs.Get(j); f.Kind() {
			case protoreflect.Int64Kind:
				m.Set(f, protoreflect.ValueOfInt64(int64(i)))
			case protoreflect.StringKind:
				m.Set(f, protoreflect.ValueOfString("v"+strings.Repeat("x", i%3)))
			}
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestPipeline_LakeSchemaEvolution checks that a field added to the .proto
// adds a column to the lake's table, and that an incompatible change is
// refused at start with an error naming the field, committing nothing.
func TestPipeline_LakeSchemaEvolution(t *testing.T) {
	const parts = 2
	addrs := startCluster(t, parts)
	dir := t.TempDir()
	lk := openTestLake(t, filepath.Join(dir, "lake"))
	base := time.Date(2025, 2, 24, 20, 0, 0, 0, time.UTC)
	run := func(md protoreflect.MessageDescriptor, db string) error {
		cfg := lakeConfig(t, testConfig(t, md, dir), lk, "schema")
		cfg.DBPath = filepath.Join(dir, db)
		p, err := ingest.New(cfg)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err = p.Run(ctx, newSource(t, addrs, "schema"))
		return err
	}

	v1 := compileText(t, dir, "v1.proto", `syntax = "proto3"; package acme; message E { int64 id = 1; string name = 2; }`)
	produce(t, addrs, parts, eValues(t, v1, 0, 100), base)
	if err := run(v1, "live.duckdb"); err != nil {
		t.Fatal(err)
	}
	v2 := compileText(t, dir, "v2.proto", `syntax = "proto3"; package acme; message E { int64 id = 1; string name = 2; int64 extra = 3; }`)
	produce(t, addrs, parts, eValues(t, v2, 100, 200), base.Add(100*time.Second))
	if err := run(v2, "live.duckdb"); err != nil {
		t.Fatalf("after adding a field: %v", err)
	}

	tb, err := lk.Table(context.Background(), "quiver", "events", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ice, err := tb.Iceberg(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before := ice.Metadata().CurrentSnapshot().SnapshotID
	at, err := ice.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 200 {
		t.Errorf("rows: got %d, want 200", at.NumRows())
	}
	idx := at.Schema().FieldIndices("extra")
	if len(idx) == 0 {
		t.Fatalf("no column extra after the field was added: %s", at.Schema())
	}
	var set int64
	for _, chunk := range at.Column(idx[0]).Data().Chunks() {
		col := chunk.(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) && col.Value(i) >= 100 {
				set++
			}
		}
	}
	if set != 100 {
		t.Errorf("rows with extra set: got %d, want the 100 new ones", set)
	}

	// id changes from int64 to string: refused, naming the field.
	v3 := compileText(t, dir, "v3.proto", `syntax = "proto3"; package acme; message E { string id = 1; string name = 2; int64 extra = 3; }`)
	produce(t, addrs, parts, eValues(t, v3, 200, 210), base.Add(200*time.Second))
	refused := run(v3, "other.duckdb")
	if refused == nil || !errors.Is(refused, ingest.ErrConfig) || !strings.Contains(refused.Error(), `"id"`) {
		t.Fatalf("incompatible change: got %v, want a configuration error naming field id", refused)
	}
	ice, err = tb.Iceberg(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := ice.Metadata().CurrentSnapshot().SnapshotID; got != before {
		t.Errorf("the refused start committed snapshot %d", got)
	}
	t.Logf("refused: %v", refused)
}
