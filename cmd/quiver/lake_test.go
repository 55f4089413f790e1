package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/lake"
)

// lakeRecords returns a reader of ids [from, to).
func lakeRecords(mem memory.Allocator, from, to int64) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return rdr
}

// TestLake_SnapshotsAndGC writes a table with two fenced commits and the
// files of one commit that never happened, then checks quiver lake lists
// the snapshots with their offsets, and gc finds and deletes exactly the
// orphan while the table keeps its rows.
func TestLake_SnapshotsAndGC(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	uri := "file://" + filepath.ToSlash(dir)
	lk, err := lake.Open(ctx, lake.Config{Warehouse: uri})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	tbl, err := lk.Table(ctx, "quiver", "events", schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []lake.Range{{Start: 0, End: 100, First: true}, {Start: 100, End: 250}} {
		rdr := lakeRecords(mem, r.Start, r.End)
		_, err := tbl.Commit(ctx, rdr, lake.Offsets{Group: "g", Topic: "events", Ranges: map[int32]lake.Range{0: r}})
		rdr.Release()
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	rdr := lakeRecords(mem, 250, 300)
	orphan, err := tbl.Write(ctx, rdr) // uploaded, never committed
	rdr.Release()
	if err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runQuiver(t, "lake", "snapshots", "--lake", uri, "--table", "events")
	if code != 0 {
		t.Fatalf("snapshots: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `g.events={"0":250}`) || !strings.Contains(lines[1], `{"0":100}`) {
		t.Errorf("snapshots: got\n%s\nwant a header and two snapshots ending at offsets 100 and 250", out)
	}

	t.Logf("snapshots:\n%s", out)
	code, out, errOut = runQuiver(t, "lake", "gc", "--lake", uri, "--table", "events", "--older-than", "0s", "--dry-run")
	if code != 0 || strings.Count(out, "\n") != orphan.Len() || !strings.Contains(out, filepath.Base(orphan.Paths()[0])) {
		t.Fatalf("gc --dry-run: exit %d, listed\n%s%s\nwant the %d uncommitted files %v", code, out, errOut, orphan.Len(), orphan.Paths())
	}
	for _, p := range orphan.Paths() {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); err != nil {
			t.Errorf("dry run removed %s: %v", p, err)
		}
	}
	if code, _, errOut = runQuiver(t, "lake", "gc", "--lake", uri, "--table", "events", "--older-than", "0s"); code != 0 {
		t.Fatalf("gc: exit %d: %s", code, errOut)
	}
	for _, p := range orphan.Paths() {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); !os.IsNotExist(err) {
			t.Errorf("gc left %s (%v)", p, err)
		}
	}
	if code, out, _ = runQuiver(t, "lake", "gc", "--lake", uri, "--table", "events", "--older-than", "0s", "--dry-run"); code != 0 || out != "" {
		t.Errorf("gc after gc: exit %d, listed %q; want nothing", code, out)
	}
	ice, err := tbl.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ice.CurrentSnapshot().Summary.Properties["total-records"]; got != "250" {
		t.Errorf("rows after gc: got %s, want 250", got)
	}
}

func TestLake_UsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"lake"}, "usage: quiver lake"},
		{[]string{"lake", "vacuum"}, `unknown lake command "vacuum"`},
		{[]string{"lake", "snapshots", "--table", "t"}, "--lake is required"},
		{[]string{"lake", "gc", "--lake", "file:///tmp/x"}, "--table is required"},
	}
	for _, tt := range tests {
		code, _, errOut := runQuiver(t, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("quiver %v: exit %d, %q; want 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	code, _, errOut := runQuiver(t, "lake", "snapshots", "--lake", "file://"+t.TempDir(), "--table", "nope")
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("missing table: exit %d, %q; want 1 and a clear error", code, errOut)
	}
}

// TestLake_CompactAndExpire commits five small batches, then checks quiver
// lake compact rewrites them into one file with the rows and offsets
// unchanged, and expire-snapshots drops the old snapshots and the small
// files while the offsets stay readable.
func TestLake_CompactAndExpire(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	uri := "file://" + filepath.ToSlash(dir)
	lk, err := lake.Open(ctx, lake.Config{Warehouse: uri})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	tbl, err := lk.Table(ctx, "quiver", "events", schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	var small []string
	for i := int64(0); i < 5; i++ {
		rdr := lakeRecords(mem, i*10, i*10+10)
		files, err := tbl.Write(ctx, rdr)
		rdr.Release()
		if err != nil {
			t.Fatal(err)
		}
		small = append(small, files.Paths()...)
		r := lake.Range{Start: i * 10, End: i*10 + 10, First: i == 0}
		if _, err := tbl.CommitFiles(ctx, files, lake.Offsets{Group: "g", Topic: "events", Ranges: map[int32]lake.Range{0: r}}); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}

	code, out, errOut := runQuiver(t, "lake", "compact", "--lake", uri, "--table", "events")
	t.Logf("compact:\n%s", out)
	if code != 0 || !strings.Contains(out, "data files before: 5 (") || !strings.Contains(out, "data files after:  1 (") ||
		!strings.Contains(out, "rewrote 5 files") {
		t.Fatalf("compact: exit %d, %s%s; want 5 files before and 1 after", code, out, errOut)
	}
	code, out, errOut = runQuiver(t, "lake", "compact", "--lake", uri, "--table", "events", "--target-mb", "64", "--min-files", "2")
	if code != 0 || !strings.Contains(out, "nothing to compact") || !strings.Contains(out, "data files after:  1 (") {
		t.Fatalf("compact again: exit %d, %s%s; want nothing to compact", code, out, errOut)
	}
	offsets, err := tbl.CommittedOffsets(ctx, "g", "events")
	if err != nil || offsets[0] != 50 {
		t.Fatalf("offsets after compaction = %v, %v; want partition 0 at 50", offsets, err)
	}

	// Nothing is a day old: the defaults expire nothing.
	code, out, errOut = runQuiver(t, "lake", "expire-snapshots", "--lake", uri, "--table", "events")
	if code != 0 || !strings.Contains(out, "expired 0 snapshots, 6 left") {
		t.Fatalf("expire-snapshots: exit %d, %s%s; want nothing expired", code, out, errOut)
	}
	code, out, errOut = runQuiver(t, "lake", "expire-snapshots", "--lake", uri, "--table", "events", "--older-than", "0s", "--retain-last", "2")
	t.Logf("expire-snapshots:\n%s", out)
	if code != 0 || !strings.Contains(out, "expired 4 snapshots, 2 left") {
		t.Fatalf("expire-snapshots: exit %d, %s%s; want 4 expired and 2 left", code, out, errOut)
	}
	offsets, err = tbl.CommittedOffsets(ctx, "g", "events")
	if err != nil || offsets[0] != 50 {
		t.Fatalf("offsets after expiry = %v, %v; want partition 0 at 50", offsets, err)
	}
	// The last append is still kept as the compaction's parent, so its
	// file stays; the four before it are gone.
	code, out, errOut = runQuiver(t, "lake", "expire-snapshots", "--lake", uri, "--table", "events", "--older-than", "0s", "--retain-last", "1")
	if code != 0 || !strings.Contains(out, "expired 1 snapshots, 1 left") {
		t.Fatalf("expire-snapshots --retain-last 1: exit %d, %s%s", code, out, errOut)
	}
	for _, p := range small {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); !os.IsNotExist(err) {
			t.Errorf("small file %s is still there after expiry (%v)", p, err)
		}
	}
	ice, err := tbl.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ice.CurrentSnapshot().Summary.Properties["total-records"]; got != "50" {
		t.Errorf("rows after compaction and expiry: got %s, want 50", got)
	}
}

func TestLake_MaintenanceUsageErrors(t *testing.T) {
	uri := "file://" + filepath.ToSlash(t.TempDir())
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"lake", "compact", "--table", "t"}, "--lake is required"},
		{[]string{"lake", "compact", "--lake", uri}, "--table is required"},
		{[]string{"lake", "compact", "--lake", uri, "--table", "t", "--target-mb", "0"}, "below the minimum of 1"},
		{[]string{"lake", "compact", "--lake", uri, "--table", "t", "--min-files", "x"}, "not a whole number"},
		{[]string{"lake", "expire-snapshots", "--lake", uri, "--table", "t", "--retain-last", "0"}, "below the minimum of 1"},
		{[]string{"lake", "expire-snapshots", "--lake", uri, "--table", "t", "--older-than", "-1h"}, "below the minimum"},
		{[]string{"lake", "expire-snapshots", "--lake", uri, "--table", "t", "extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		code, _, errOut := runQuiver(t, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("quiver %v: exit %d, %q; want 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	for _, cmd := range []string{"compact", "expire-snapshots"} {
		code, _, errOut := runQuiver(t, "lake", cmd, "--lake", uri, "--table", "nope")
		if code != 1 || !strings.Contains(errOut, "does not exist") {
			t.Errorf("%s of a missing table: exit %d, %q; want 1 and a clear error", cmd, code, errOut)
		}
	}
}
