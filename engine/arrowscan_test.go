package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/testmem"
)

// failingReader yields its batches, then fails.
type failingReader struct {
	array.RecordReader
	n, failAt int
}

func (f *failingReader) Next() bool {
	if f.n == f.failAt {
		return false
	}
	f.n++
	return f.RecordReader.Next()
}

func (f *failingReader) Err() error {
	if f.n == f.failAt {
		return errors.New("client went away")
	}
	return nil
}

func makeBatches(t *testing.T, mem memory.Allocator, n, rows int) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	var recs []arrow.RecordBatch
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for k := 0; k < n; k++ {
		for i := 0; i < rows; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(k*rows + i))
			if i%5 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append("x")
			}
		}
		recs = append(recs, b.NewRecordBatch())
	}
	return schema, recs
}

// openIngTable opens a test database with opts and a connection to it,
// released when the test ends, and creates the table ing.
func openIngTable(t *testing.T, opts engine.Options) (*engine.DB, *engine.Conn) {
	t.Helper()
	db := openTest(t, opts)
	return db, testConn(t, db, "CREATE TABLE ing (id BIGINT, s VARCHAR)")
}

func TestConn_InsertArrow(t *testing.T) {
	mem := testmem.Checked(t)
	db, c := openIngTable(t, engine.Options{})
	ctx := context.Background()
	schema, recs := makeBatches(t, mem, 4, 5000)
	rdr, _ := array.NewRecordReader(schema, recs)
	n, err := c.InsertArrow(ctx, `"ing"`, nil, rdr)
	rdr.Release()
	if err != nil || n != 20000 {
		t.Fatalf("insert: got %d, %v; want 20000", n, err)
	}

	// A reader failing midway inserts nothing.
	rdr2, _ := array.NewRecordReader(schema, recs)
	_, err = c.InsertArrow(ctx, `"ing"`, nil, &failingReader{RecordReader: rdr2, failAt: 2})
	rdr2.Release()
	for _, r := range recs {
		r.Release()
	}
	if err == nil {
		t.Fatal("failing reader: got no error")
	}
	got := collect(t, db, "SELECT count(*), count(s) FROM ing")
	defer releaseAll(got)
	if cnt := got[0].Column(0).(*array.Int64).Value(0); cnt != 20000 {
		t.Errorf("rows after failed insert: got %d, want 20000", cnt)
	}
	if cnt := got[0].Column(1).(*array.Int64).Value(0); cnt != 16000 {
		t.Errorf("non-null s: got %d, want 16000", cnt)
	}
}

// TestConn_InsertArrowCoalesces checks small batches that are joined into
// row-group-sized ones arrive whole, in order, with their memory freed,
// and that a failure after the first joined batch still inserts nothing.
func TestConn_InsertArrowCoalesces(t *testing.T) {
	mem := testmem.Checked(t)
	dbMem := testmem.Checked(t)
	db, c := openIngTable(t, engine.Options{Allocator: dbMem})
	ctx := context.Background()
	const batches, rows = 60, 5000 // 300,000 rows: 2 row groups and a bit
	schema, recs := makeBatches(t, mem, batches, rows)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()

	failing, _ := array.NewRecordReader(schema, recs)
	_, err := c.InsertArrow(ctx, `"ing"`, nil, &failingReader{RecordReader: failing, failAt: 40})
	failing.Release()
	if err == nil {
		t.Fatal("failing reader: got no error")
	}

	rdr, _ := array.NewRecordReader(schema, recs)
	n, err := c.InsertArrow(ctx, `"ing"`, nil, rdr)
	rdr.Release()
	if err != nil || n != batches*rows {
		t.Fatalf("insert: got %d, %v; want %d", n, err, batches*rows)
	}
	got := collect(t, db, `SELECT count(*), count(s), count(*) FILTER (WHERE id <> rn)
		FROM (SELECT id, s, row_number() OVER () - 1 AS rn FROM ing)`)
	defer releaseAll(got)
	for i, want := range []int64{batches * rows, batches * rows * 4 / 5, 0} {
		if v := got[0].Column(i).(*array.Int64).Value(0); v != want {
			t.Errorf("column %d: got %d, want %d (rows, non-null s, rows out of order)", i, v, want)
		}
	}
}

// TestConn_ExecArrow runs statements other than an insert over an Arrow
// scan: a COPY to Parquet whose file is read back, a COPY whose reader
// fails midway (the reader's error comes back), and bad SQL.
func TestConn_ExecArrow(t *testing.T) {
	mem := testmem.Checked(t)
	dir := t.TempDir()
	db := openTest(t, engine.Options{AllowedDirs: []string{dir}})
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	ctx := context.Background()
	schema, recs := makeBatches(t, mem, 3, 4000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	path := filepath.Join(dir, "out.parquet")
	copyTo := func(view string) string {
		return "COPY (SELECT * FROM " + view + ") TO " + engine.QuoteString(path) + " (FORMAT parquet, COMPRESSION zstd)"
	}

	rdr, _ := array.NewRecordReader(schema, recs)
	n, err := c.ExecArrow(ctx, rdr, copyTo)
	rdr.Release()
	if err != nil || n != 12000 {
		t.Fatalf("copy: got %d, %v; want 12000", n, err)
	}
	got := collect(t, db, "SELECT count(*), count(s), sum(id) FROM read_parquet("+engine.QuoteString(path)+")")
	defer releaseAll(got)
	if cnt, nn, sum := got[0].Column(0).(*array.Int64).Value(0), got[0].Column(1).(*array.Int64).Value(0), got[0].Column(2).ValueStr(0); cnt != 12000 || nn != 9600 || sum != "71994000" {
		t.Errorf("the file holds %d rows, %d non-null s, sum(id) %s; want 12000, 9600, 71994000", cnt, nn, sum)
	}

	failing, _ := array.NewRecordReader(schema, recs)
	_, err = c.ExecArrow(ctx, &failingReader{RecordReader: failing, failAt: 1}, copyTo)
	failing.Release()
	if err == nil || !strings.Contains(err.Error(), "client went away") {
		t.Errorf("failing reader: got %v, want its error", err)
	}

	bad, _ := array.NewRecordReader(schema, recs)
	_, err = c.ExecArrow(ctx, bad, func(view string) string { return "SELEC * FROM " + view })
	bad.Release()
	if err == nil {
		t.Error("bad SQL: got no error")
	}
}

// TestOptions_Settings checks extra settings apply before the
// configuration is locked, and a bad one fails Open.
func TestOptions_Settings(t *testing.T) {
	db := openTest(t, engine.Options{Settings: []string{"preserve_insertion_order = false"}})
	got := collect(t, db, "SELECT current_setting('preserve_insertion_order')::VARCHAR")
	defer releaseAll(got)
	if v := got[0].Column(0).ValueStr(0); v != "false" {
		t.Errorf("preserve_insertion_order = %s, want false", v)
	}
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(context.Background(), "SET preserve_insertion_order = true"); err == nil {
		t.Error("SQL changed a setting after Open: the configuration is not locked")
	}
	if db, err := engine.Open(context.Background(), engine.Options{Path: ":memory:", Settings: []string{"no_such_setting = 1"}}); err == nil {
		db.Close()
		t.Error("a bad setting: Open gave no error")
	}
}
