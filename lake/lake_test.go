package lake

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/quiverdata/quiver/internal/testmem"
)

// row is one test record.
type row struct {
	id   int64
	name string // "" is null
	ts   time.Time
}

var baseSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}, nil)

func openLake(t *testing.T, dir string) *Lake {
	t.Helper()
	l, err := Open(context.Background(), Config{Warehouse: "file://" + filepath.ToSlash(dir)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// reader builds a record reader of rows in baseSchema.
func reader(t *testing.T, mem memory.Allocator, rows []row) array.RecordReader {
	t.Helper()
	b := array.NewRecordBuilder(mem, baseSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.name == "" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r.name)
		}
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(baseSchema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rdr.Release)
	return rdr
}

func rowsFrom(start, n int, day time.Time) []row {
	out := make([]row, n)
	for i := range out {
		id := int64(start + i)
		name := []string{"a", "b", "", "c"}[id%4]
		out[i] = row{id: id, name: name, ts: day.Add(time.Duration(id) * 37 * time.Minute)}
	}
	return out
}

// readAll scans the table through iceberg-go and returns its rows by id.
func readAll(t *testing.T, tb *Table) map[int64]row {
	t.Helper()
	ctx := context.Background()
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	out := map[int64]row{}
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		sc := rec.Schema()
		col := func(name string) arrow.Array {
			idx := sc.FieldIndices(name)
			if len(idx) == 0 {
				t.Fatalf("column %q missing from scan", name)
			}
			return rec.Column(idx[0])
		}
		ids := col("id").(*array.Int64)
		names := col("name").(*array.String)
		tss := col("ts").(*array.Timestamp)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := row{id: ids.Value(i), ts: time.UnixMicro(int64(tss.Value(i))).UTC()}
			if names.IsValid(i) {
				r.name = names.Value(i)
			}
			if _, dup := out[r.id]; dup {
				t.Fatalf("id %d read twice", r.id)
			}
			out[r.id] = r
		}
	}
	return out
}

func offs(group, topic string, ranges map[int32]Range) Offsets {
	return Offsets{Group: group, Topic: topic, Ranges: ranges}
}

func TestCreateAppendRead(t *testing.T) {
	day := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		spec      string
		wantFiles int // minimum number of data files of the first commit
	}{
		{"unpartitioned", "", 1},
		{"identity", "name", 4},
		{"day", "day(ts)", 2},
		{"hour", "hour(ts)", 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := testmem.Checked(t)
			l := openLake(t, t.TempDir())
			spec, err := ParsePartitionSpec(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			tb, err := l.Table(ctx, "kafka.raw", "events", baseSchema, spec)
			if err != nil {
				t.Fatalf("Table: %v", err)
			}

			first := rowsFrom(0, 50, day)
			res, err := tb.Commit(ctx, reader(t, mem, first), offs("g", "events", map[int32]Range{0: {Start: 0, End: 50, First: true}}))
			if err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if res.Rows != 50 || res.Files < tc.wantFiles || res.SnapshotID == 0 || res.Attempts != 1 {
				t.Fatalf("first commit result = %+v, want 50 rows in at least %d files", res, tc.wantFiles)
			}
			second := rowsFrom(50, 30, day)
			if _, err := tb.Commit(ctx, reader(t, mem, second), offs("g", "events", map[int32]Range{0: {Start: 50, End: 80}})); err != nil {
				t.Fatalf("second Commit: %v", err)
			}

			got := readAll(t, tb)
			want := append(first, second...)
			if len(got) != len(want) {
				t.Fatalf("read %d rows, want %d", len(got), len(want))
			}
			for _, w := range want {
				g, ok := got[w.id]
				if !ok || g.name != w.name || !g.ts.Equal(w.ts) {
					t.Fatalf("row %d = %+v (found %v), want %+v", w.id, g, ok, w)
				}
			}

			// Reopening the same lake loads the table instead of creating it.
			tb2, err := l.Table(ctx, "kafka.raw", "events", baseSchema, spec)
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
			if n := len(readAll(t, tb2)); n != 80 {
				t.Fatalf("reloaded table has %d rows, want 80", n)
			}
		})
	}
}

func TestDataFilesAreZstdWithStatistics(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Write(ctx, reader(t, mem, rowsFrom(0, 100, time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	if files.Len() != 1 || files.Rows() != 100 {
		t.Fatalf("wrote %d files, %d rows; want 1 file of 100 rows", files.Len(), files.Rows())
	}
	path := strings.TrimPrefix(files.Paths()[0], "file://")
	if !strings.HasSuffix(path, ".parquet") {
		t.Fatalf("data file %s is not Parquet", path)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	rg := pf.MetaData().RowGroup(0)
	for i := 0; i < rg.NumColumns(); i++ {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		if cc.Compression() != compress.Codecs.Zstd {
			t.Errorf("column %d compressed with %v, want zstd", i, cc.Compression())
		}
		if ok, err := cc.StatsSet(); err != nil || !ok {
			t.Errorf("column %d has no statistics (%v)", i, err)
		}
	}
	if _, err := tb.CommitFiles(ctx, files, offs("g", "t", map[int32]Range{3: {Start: 7, End: 107, First: true}})); err != nil {
		t.Fatalf("CommitFiles: %v", err)
	}
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || len(tasks[0].File.LowerBoundValues()) == 0 || len(tasks[0].File.UpperBoundValues()) == 0 {
		t.Fatalf("committed file has no column bounds in the manifest")
	}
}

func TestOffsetsRecordedAndRead(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tb.CommittedOffsets(ctx, "g", "orders")
	if err != nil || len(got) != 0 {
		t.Fatalf("offsets of an empty table = %v, %v; want none", got, err)
	}

	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		offsets Offsets
		rows    []row
		want    map[int32]int64
	}{
		{offs("g", "orders", map[int32]Range{0: {0, 10, true}, 1: {100, 105, true}}), rowsFrom(0, 15, day), map[int32]int64{0: 10, 1: 105}},
		{offs("g", "orders", map[int32]Range{1: {105, 120, false}}), rowsFrom(15, 15, day), map[int32]int64{0: 10, 1: 120}},
		// Offsets only: no rows, partition 2 appears.
		{offs("g", "orders", map[int32]Range{2: {5, 9, true}}), nil, map[int32]int64{0: 10, 1: 120, 2: 9}},
		// Another group on the same table does not disturb the first.
		{offs("other", "orders", map[int32]Range{0: {0, 3, true}}), rowsFrom(30, 3, day), map[int32]int64{0: 10, 1: 120, 2: 9}},
	}
	for i, s := range steps {
		var rdr array.RecordReader
		if s.rows != nil {
			rdr = reader(t, mem, s.rows)
		}
		if _, err := tb.Commit(ctx, rdr, s.offsets); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, err := tb.CommittedOffsets(ctx, "g", "orders")
		if err != nil {
			t.Fatal(err)
		}
		if !mapsEqual(got, s.want) {
			t.Fatalf("step %d: offsets = %v, want %v", i, got, s.want)
		}
	}
	other, err := tb.CommittedOffsets(ctx, "other", "orders")
	if err != nil || !mapsEqual(other, map[int32]int64{0: 3}) {
		t.Fatalf("other group's offsets = %v, %v", other, err)
	}

	// The latest snapshot alone carries every group's position.
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	props := tbl.CurrentSnapshot().Summary.Properties
	if props[OffsetsKey("g", "orders")] != `{"0":10,"1":120,"2":9}` || props[OffsetsKey("other", "orders")] != `{"0":3}` {
		t.Fatalf("latest snapshot summary = %v", props)
	}
	if !strings.Contains(props[CommitKey], `"group":"other"`) || props[CommitIDKey] == "" {
		t.Fatalf("latest snapshot lacks the commit description: %v", props)
	}
	if n := len(readAll(t, tb)); n != 33 {
		t.Fatalf("table has %d rows, want 33", n)
	}
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestFence(t *testing.T) {
	day := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		ranges map[int32]Range
	}{
		{"stale start", map[int32]Range{0: {Start: 0, End: 20}}},
		{"stale start marked first", map[int32]Range{0: {Start: 0, End: 20, First: true}}},
		{"gap", map[int32]Range{0: {Start: 25, End: 30}}},
		{"one stale of two", map[int32]Range{0: {Start: 10, End: 20}, 1: {Start: 0, End: 20}}},
		{"unknown partition not first", map[int32]Range{7: {Start: 0, End: 5}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := testmem.Checked(t)
			l := openLake(t, t.TempDir())
			tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tb.Commit(ctx, reader(t, mem, rowsFrom(0, 20, day)),
				offs("g", "t", map[int32]Range{0: {0, 20, true}, 1: {0, 10, true}})); err != nil {
				t.Fatal(err)
			}
			before, err := tb.Iceberg(ctx)
			if err != nil {
				t.Fatal(err)
			}
			snap := before.CurrentSnapshot().SnapshotID

			_, err = tb.Commit(ctx, reader(t, mem, rowsFrom(100, 20, day)), offs("g", "t", tc.ranges))
			if !errors.Is(err, ErrFenced) {
				t.Fatalf("commit = %v, want ErrFenced", err)
			}

			after, err := tb.Iceberg(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if id := after.CurrentSnapshot().SnapshotID; id != snap || len(after.Metadata().Snapshots()) != 1 {
				t.Fatalf("fenced commit changed the table: snapshot %d -> %d", snap, id)
			}
			if n := len(readAll(t, tb)); n != 20 {
				t.Fatalf("table has %d rows after a fenced commit, want 20", n)
			}
			got, _ := tb.CommittedOffsets(ctx, "g", "t")
			if !mapsEqual(got, map[int32]int64{0: 20, 1: 10}) {
				t.Fatalf("offsets after a fenced commit = %v", got)
			}
			// The fenced commit's files were deleted.
			time.Sleep(10 * time.Millisecond)
			orphans, err := tb.Orphans(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(orphans.Files) != 0 {
				t.Fatalf("fenced commit left files behind: %v", orphans.Files)
			}
		})
	}
}

func TestConcurrentCommittersOnDifferentPartitions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := testmem.Checked(t)
	day := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)

	// Two lakes over the same catalog file stand for two processes.
	lakes := []*Lake{openLake(t, dir), openLake(t, dir)}
	if _, err := lakes[0].Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Hour}}); err != nil {
		t.Fatal(err)
	}

	const commits, perCommit = 8, 5
	var wg sync.WaitGroup
	errs := make([]error, len(lakes))
	attempts := make([]int, len(lakes))
	for w, l := range lakes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
			if err != nil {
				errs[w] = err
				return
			}
			p := int32(w)
			for i := 0; i < commits; i++ {
				start := int64(i * perCommit)
				rows := rowsFrom(w*1000+i*perCommit, perCommit, day)
				b := array.NewRecordBuilder(mem, baseSchema)
				for _, r := range rows {
					b.Field(0).(*array.Int64Builder).Append(r.id)
					b.Field(1).(*array.StringBuilder).Append("w")
					b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
				}
				rec := b.NewRecordBatch()
				b.Release()
				rdr, err := array.NewRecordReader(baseSchema, []arrow.RecordBatch{rec})
				rec.Release()
				if err != nil {
					errs[w] = err
					return
				}
				res, err := tb.Commit(ctx, rdr, offs("g", "t", map[int32]Range{p: {start, start + perCommit, i == 0}}))
				rdr.Release()
				if err != nil {
					errs[w] = err
					return
				}
				attempts[w] += res.Attempts
			}
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
	t.Logf("catalog attempts per writer: %v for %d commits each", attempts, commits)

	tb, err := lakes[0].Table(ctx, "ns", "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tb.CommittedOffsets(ctx, "g", "t")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int32]int64{0: commits * perCommit, 1: commits * perCommit}; !mapsEqual(got, want) {
		t.Fatalf("offsets = %v, want %v", got, want)
	}
	if n := len(readAll(t, tb)); n != 2*commits*perCommit {
		t.Fatalf("table has %d rows, want %d", n, 2*commits*perCommit)
	}
}

func TestSchemaEvolution(t *testing.T) {
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	initial := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "ts", Type: ts},
	}, nil)
	cases := []struct {
		name    string
		fields  []arrow.Field
		wantErr string // empty: accepted; else the field named in the error
		newCol  string // a column the table must have afterwards
	}{
		{name: "same", fields: initial.Fields()},
		{name: "add column", fields: append(initial.Fields(), arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true}), newCol: "extra"},
		{name: "add required column becomes optional", fields: append(initial.Fields(), arrow.Field{Name: "flag", Type: arrow.FixedWidthTypes.Boolean}), newCol: "flag"},
		{name: "widen int to long", fields: []arrow.Field{initial.Field(0), {Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, initial.Field(2)}},
		{name: "optional column left out", fields: []arrow.Field{initial.Field(0), initial.Field(2)}},
		{name: "type change", fields: []arrow.Field{initial.Field(0), {Name: "n", Type: arrow.BinaryTypes.String, Nullable: true}, initial.Field(2)}, wantErr: `"n"`},
		{name: "narrowing", fields: []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, initial.Field(1), initial.Field(2)}, wantErr: ""},
		{name: "required becomes nullable", fields: []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, initial.Field(1), initial.Field(2)}, wantErr: `"id"`},
		{name: "required column missing", fields: []arrow.Field{initial.Field(1), initial.Field(2)}, wantErr: `"id"`},
		{name: "change and add refused together", fields: []arrow.Field{initial.Field(0), {Name: "n", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, initial.Field(2), {Name: "z", Type: arrow.BinaryTypes.String, Nullable: true}}, wantErr: `"n"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := openLake(t, t.TempDir())
			tb, err := l.Table(ctx, "ns", "t", initial, nil)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := tb.Iceberg(ctx)
			next := arrow.NewSchema(tc.fields, nil)
			tb2, err := l.Table(ctx, "ns", "t", next, nil)
			after, _ := tb.Iceberg(ctx)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Table = %v, want an incompatible-schema error naming %s", err, tc.wantErr)
				}
				if after.Metadata().CurrentSchema().ID != before.Metadata().CurrentSchema().ID || len(after.Metadata().Schemas()) != 1 {
					t.Fatalf("a refused schema change was committed")
				}
				if _, ok := after.Schema().FindFieldByName("z"); ok {
					t.Fatalf("column z was added although the change was refused")
				}
				return
			}
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			if tc.newCol != "" {
				f, ok := after.Schema().FindFieldByName(tc.newCol)
				if !ok || f.Required {
					t.Fatalf("column %s not added as optional: %v", tc.newCol, after.Schema())
				}
			}
			if tc.name == "widen int to long" {
				f, _ := after.Schema().FindFieldByName("n")
				if f.Type.String() != "long" {
					t.Fatalf("n is %s after widening, want long", f.Type)
				}
			}
			_ = tb2
		})
	}
}

func TestSchemaEvolutionDataReadable(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	day := time.Date(2026, 2, 3, 0, 0, 0, 0, time.UTC)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, rowsFrom(0, 10, day)), offs("g", "t", map[int32]Range{0: {0, 10, true}})); err != nil {
		t.Fatal(err)
	}

	// The commit itself adds the new column.
	wider := arrow.NewSchema(append(baseSchema.Fields(), arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), nil)
	b := array.NewRecordBuilder(mem, wider)
	defer b.Release()
	for _, r := range rowsFrom(10, 5, day) {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append("x")
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
		b.Field(3).(*array.Float64Builder).Append(float64(r.id) / 2)
	}
	rec := b.NewRecordBatch()
	rdr, err := array.NewRecordReader(wider, []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if _, err := tb.Commit(ctx, rdr, offs("g", "t", map[int32]Range{0: {10, 15, false}})); err != nil {
		t.Fatalf("commit with the new column: %v", err)
	}

	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 15 {
		t.Fatalf("read %d rows, want 15", at.NumRows())
	}
	idx := at.Schema().FieldIndices("score")
	if len(idx) != 1 {
		t.Fatalf("no score column in %v", at.Schema())
	}
	var nulls, sum int
	ids := at.Column(at.Schema().FieldIndices("id")[0]).Data().Chunks()
	for c, chunk := range at.Column(idx[0]).Data().Chunks() {
		scores := chunk.(*array.Float64)
		for i := 0; i < scores.Len(); i++ {
			if scores.IsNull(i) {
				nulls++
				continue
			}
			if id := ids[c].(*array.Int64).Value(i); scores.Value(i) != float64(id)/2 {
				t.Fatalf("score of id %d = %v", id, scores.Value(i))
			}
			sum++
		}
	}
	if nulls != 10 || sum != 5 {
		t.Fatalf("score: %d nulls and %d values, want 10 and 5", nulls, sum)
	}
}

func TestOrphansAfterFailedCommit(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	day := time.Date(2026, 8, 9, 0, 0, 0, 0, time.UTC)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "name"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, rowsFrom(0, 8, day)), offs("g", "t", map[int32]Range{0: {0, 8, true}})); err != nil {
		t.Fatal(err)
	}

	// A writer uploads its files and dies before the catalog commit.
	files, err := tb.Write(ctx, reader(t, mem, rowsFrom(8, 8, day)))
	if err != nil {
		t.Fatal(err)
	}
	lost := files.Paths()
	if len(lost) == 0 {
		t.Fatal("no files written")
	}
	time.Sleep(20 * time.Millisecond)

	young, err := tb.Orphans(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(young.Files) != 0 {
		t.Fatalf("files younger than the age limit listed: %v", young.Files)
	}

	orphans, err := tb.Orphans(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, o := range orphans.Files {
		found = append(found, o.Path)
		if o.Size <= 0 {
			t.Errorf("orphan %s has size %d", o.Path, o.Size)
		}
	}
	slices.Sort(found)
	slices.Sort(lost)
	if !slices.Equal(found, lost) {
		t.Fatalf("orphans = %v, want the uncommitted files %v", found, lost)
	}
	deleted, err := orphans.Delete(ctx)
	if err != nil || len(deleted) != len(lost) {
		t.Fatalf("Delete = %v, %v", deleted, err)
	}
	for _, p := range lost {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); !os.IsNotExist(err) {
			t.Fatalf("orphan %s still exists (%v)", p, err)
		}
	}
	if n := len(readAll(t, tb)); n != 8 {
		t.Fatalf("table has %d rows after orphan clean-up, want 8", n)
	}
	again, err := tb.Orphans(ctx, 0)
	if err != nil || len(again.Files) != 0 {
		t.Fatalf("orphans after delete = %v, %v", again, err)
	}
}

func TestOrphansBeforeAnyData(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	l := openLake(t, dir)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "name"}})
	if err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "ns.db", "t", "data")
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("data directory of a new table: %v, want it not to exist yet", err)
	}
	orphans, err := tb.Orphans(ctx, 0)
	if err != nil {
		t.Fatalf("Orphans of a table without data: %v", err)
	}
	if len(orphans.Files) != 0 || orphans.TotalBytes != 0 {
		t.Fatalf("orphans of a table without data = %+v, want none", orphans)
	}
	if deleted, err := orphans.Delete(ctx); err != nil || len(deleted) != 0 {
		t.Fatalf("Delete of no orphans = %v, %v", deleted, err)
	}

	// The first files, of a writer that dies before its commit, are found
	// and deleted as usual.
	files, err := tb.Write(ctx, reader(t, mem, rowsFrom(0, 8, time.Date(2026, 8, 10, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	orphans, err = tb.Orphans(ctx, 0)
	if err != nil || len(orphans.Files) != files.Len() {
		t.Fatalf("Orphans = %+v, %v; want the %d uncommitted files", orphans, err, files.Len())
	}
	if deleted, err := orphans.Delete(ctx); err != nil || len(deleted) != files.Len() {
		t.Fatalf("Delete = %v, %v; want %d files", deleted, err, files.Len())
	}
	if again, err := tb.Orphans(ctx, 0); err != nil || len(again.Files) != 0 {
		t.Fatalf("orphans after Delete = %+v, %v; want none", again, err)
	}
}

// vanishingFS lists its directories but fails to read the one named gone,
// as an object store does for a prefix whose last object was just deleted.
type vanishingFS struct {
	fstest.MapFS
	gone string
}

func (v vanishingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == v.gone {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return v.MapFS.ReadDir(name)
}

// vanishingIO is a listable iceberg-go IO over a vanishingFS.
type vanishingIO struct{ fsys vanishingFS }

func (v vanishingIO) Open(name string) (iceio.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.ErrUnsupported}
}
func (v vanishingIO) Remove(string) error { return errors.ErrUnsupported }
func (v vanishingIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	return fs.WalkDir(v.fsys, root, fn)
}

func TestOrphanListingSkipsMissingDirectories(t *testing.T) {
	raw := vanishingIO{vanishingFS{MapFS: fstest.MapFS{
		"data/a/1.parquet":    {Data: []byte("x")},
		"data/gone/2.parquet": {Data: []byte("y")},
		"data/z/3.parquet":    {Data: []byte("z")},
	}, gone: "data/gone"}}
	walk := func(fsys iceio.IO, root string) ([]string, error) {
		var files []string
		err := fsys.(iceio.ListableIO).WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				if _, err := d.Info(); err != nil {
					return err
				}
				files = append(files, path)
			}
			return nil
		})
		return files, err
	}
	if _, err := walk(raw, "data"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("walking the raw IO = %v, want the not-exist error the skipping IO must hide", err)
	}
	fsF := skipMissingDirs(func(context.Context) (iceio.IO, error) { return raw, nil })
	fsys, err := fsF(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	files, err := walk(fsys, "data")
	if err != nil || !slices.Equal(files, []string{"data/a/1.parquet", "data/z/3.parquet"}) {
		t.Fatalf("walk = %v, %v; want the files outside the vanished directory", files, err)
	}
	for _, root := range []string{"nothing", "data/gone"} {
		if files, err := walk(fsys, root); err != nil || len(files) != 0 {
			t.Fatalf("walk of missing %s = %v, %v; want nothing", root, files, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no warehouse", Config{}, "warehouse is not set"},
		{"bad warehouse scheme", Config{Warehouse: "ftp://x/y"}, `unsupported warehouse scheme "ftp"`},
		{"relative warehouse", Config{Warehouse: "file://data/lake"}, "three slashes"},
		{"s3 without catalog", Config{Warehouse: "s3://bucket/lake"}, "catalog URI is required"},
		{"bad catalog scheme", Config{Warehouse: "file://" + dir, CatalogURI: "mongodb://x"}, `unsupported catalog scheme "mongodb"`},
		{"sqlite in missing dir", Config{Warehouse: "file://" + dir, CatalogURI: "sqlite:///" + dir + "/no/such/catalog.db"}, "directory of the SQLite catalog"},
		{"unreachable postgres", Config{Warehouse: "file://" + dir, CatalogURI: "postgresql://u:secret@127.0.0.1:1/db?sslmode=disable", ConnectTimeout: 3 * time.Second}, "cannot reach the PostgreSQL catalog"},
		{"unreachable rest", Config{Warehouse: "file://" + dir, CatalogURI: "http://127.0.0.1:1", ConnectTimeout: 3 * time.Second}, "cannot reach the REST catalog"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open(context.Background(), tc.cfg)
			if err == nil {
				l.Close()
				t.Fatalf("Open succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error leaks the password: %v", err)
			}
		})
	}
}

func TestDefaultCatalogLocation(t *testing.T) {
	dir := t.TempDir()
	l := openLake(t, dir)
	if _, err := l.Table(context.Background(), "ns", "t", baseSchema, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "catalog.db")); err != nil {
		t.Fatalf("no catalog.db in the warehouse: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ns.db", "t", "metadata")); err != nil {
		t.Fatalf("table not under <warehouse>/ns.db/t: %v", err)
	}
	if l.Catalog().(interface{ Name() string }).Name() != DefaultCatalogName {
		t.Fatal("catalog name is not quiver")
	}
}

func TestParsePartitionSpec(t *testing.T) {
	cases := []struct {
		in   string
		want []PartitionField
		err  bool
	}{
		{in: "", want: nil},
		{in: "none", want: nil},
		{in: "region", want: []PartitionField{{Column: "region", Transform: Identity}}},
		{in: "day(ts), region", want: []PartitionField{{Column: "ts", Transform: Day}, {Column: "region", Transform: Identity}}},
		{in: "HOUR( _timestamp )", want: []PartitionField{{Column: "_timestamp", Transform: Hour}}},
		{in: "bucket(id)", err: true},
		{in: "day(ts", err: true},
		{in: "a,,b", err: true},
	}
	for _, tc := range cases {
		got, err := ParsePartitionSpec(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParsePartitionSpec(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestPartitionSpecErrors(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, t.TempDir())
	if _, err := l.Table(ctx, "ns", "a", baseSchema, []PartitionField{{Column: "id", Transform: Day}}); err == nil || !strings.Contains(err.Error(), "needs a timestamp") {
		t.Fatalf("day(id) = %v, want a timestamp error", err)
	}
	if _, err := l.Table(ctx, "ns", "b", baseSchema, []PartitionField{{Column: "nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("missing column = %v", err)
	}
	if _, err := l.Table(ctx, "ns", "c", baseSchema, []PartitionField{{Column: "ts", Transform: Day}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Table(ctx, "ns", "c", baseSchema, []PartitionField{{Column: "ts", Transform: Hour}}); err == nil || !strings.Contains(err.Error(), "day(ts)") {
		t.Fatalf("changed spec = %v, want an error describing day(ts)", err)
	}
}

func TestRacingWritersOnSamePartitionExactlyOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := testmem.Checked(t)
	day := time.Date(2026, 7, 2, 0, 0, 0, 0, time.UTC)
	lakes := []*Lake{openLake(t, dir), openLake(t, dir), openLake(t, dir)}
	if _, err := lakes[0].Table(ctx, "ns", "t", baseSchema, nil); err != nil {
		t.Fatal(err)
	}
	// Every writer tries to commit the same offsets, as a zombie and its
	// replacement would after a rebalance.
	rows := rowsFrom(0, 10, day)
	var wg sync.WaitGroup
	errs := make([]error, len(lakes))
	for w, l := range lakes {
		tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
		if err != nil {
			t.Fatal(err)
		}
		rdr := reader(t, mem, rows)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[w] = tb.Commit(ctx, rdr, offs("g", "t", map[int32]Range{0: {0, 10, true}}))
		}()
	}
	wg.Wait()
	won := 0
	for w, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrFenced):
			t.Fatalf("writer %d: %v, want success or ErrFenced", w, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers committed, want exactly 1", won)
	}
	tb, _ := lakes[0].Table(ctx, "ns", "t", nil, nil)
	if n := len(readAll(t, tb)); n != 10 {
		t.Fatalf("table has %d rows, want 10", n)
	}
	time.Sleep(10 * time.Millisecond)
	orphans, err := tb.Orphans(ctx, 0)
	if err != nil || len(orphans.Files) != 0 {
		t.Fatalf("losing writers left files: %v, %v", orphans, err)
	}
}

// lossyCatalog applies commits but, once, reports an error instead of the
// result, as a catalog whose reply is lost would.
type lossyCatalog struct {
	catalog.Catalog
	fail atomic.Bool
}

func (c *lossyCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *lossyCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	meta, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, updates)
	if err == nil && c.fail.CompareAndSwap(true, false) {
		return nil, "", errors.New("connection reset by peer")
	}
	return meta, loc, err
}

func TestCommitWithLostReplyIsNotRepeated(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	lossy := &lossyCatalog{Catalog: l.cat}
	l.cat = lossy
	tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	lossy.fail.Store(true)
	res, err := tb.Commit(ctx, reader(t, mem, rowsFrom(0, 10, time.Now())), offs("g", "t", map[int32]Range{0: {0, 10, true}}))
	if err != nil {
		t.Fatalf("a commit that landed was reported as %v", err)
	}
	if lossy.fail.Load() {
		t.Fatal("the catalog never failed")
	}
	tbl, _ := tb.Iceberg(ctx)
	if len(tbl.Metadata().Snapshots()) != 1 || tbl.CurrentSnapshot().SnapshotID != res.SnapshotID {
		t.Fatalf("want exactly the one snapshot %d, have %d snapshots", res.SnapshotID, len(tbl.Metadata().Snapshots()))
	}
	if n := len(readAll(t, tb)); n != 10 {
		t.Fatalf("table has %d rows, want 10", n)
	}
}

func TestOffsetsSurviveSnapshotsOfOtherTools(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	day := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, rowsFrom(0, 5, day)), offs("g", "t", map[int32]Range{0: {0, 5, true}})); err != nil {
		t.Fatal(err)
	}

	// Another tool appends through iceberg-go without any offsets.
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.Append(ctx, reader(t, mem, rowsFrom(100, 3, day)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	got, err := tb.CommittedOffsets(ctx, "g", "t")
	if err != nil || !mapsEqual(got, map[int32]int64{0: 5}) {
		t.Fatalf("offsets behind a foreign snapshot = %v, %v; want partition 0 at 5", got, err)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, rowsFrom(5, 5, day)), offs("g", "t", map[int32]Range{0: {0, 5, true}})); !errors.Is(err, ErrFenced) {
		t.Fatalf("replay behind a foreign snapshot = %v, want ErrFenced", err)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, rowsFrom(5, 5, day)), offs("g", "t", map[int32]Range{0: {5, 10, false}})); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, tb)); n != 13 {
		t.Fatalf("table has %d rows, want 13", n)
	}
}
