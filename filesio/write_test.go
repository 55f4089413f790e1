package filesio_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/filesio"
	"github.com/quiverdata/quiver/internal/testmem"
)

// oddSchema holds the types arrow-go's CSV writer panicked on and its
// Parquet writer refused, beside text that needs quoting.
var oddSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "iv", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
}, nil)

// oddRows builds n rows of oddSchema in batches of batch rows; every
// tenth row is NULL but for its id.
func oddRows(mem memory.Allocator, n, batch int) []arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, oddSchema)
	defer b.Release()
	var recs []arrow.RecordBatch
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%10 == 9 {
			for f := 1; f < len(b.Fields()); f++ {
				b.Field(f).AppendNull()
			}
		} else {
			b.Field(1).(*array.StringBuilder).Append("a, \"quoted\"\nline")
			b.Field(2).(*array.MonthDayNanoIntervalBuilder).Append(arrow.MonthDayNanoInterval{Months: 1, Days: 2, Nanoseconds: 3e9})
			sb := b.Field(3).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
			sb.FieldBuilder(1).(*array.StringBuilder).Append("x")
			mb := b.Field(4).(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.Int32Builder).Append(1)
			lb := b.Field(5).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
			b.Field(6).(*array.Time64Builder).Append(arrow.Time64(3723_000_000)) // 01:02:03
			b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(1_704_164_645_000_000))
			b.Field(8).(*array.Decimal128Builder).Append(decimal128.FromI64(1234))
		}
		if (i+1)%batch == 0 || i == n-1 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	return recs
}

// failingReader yields its batches, then fails instead of ending.
type failingReader struct {
	array.RecordReader
}

func (f *failingReader) Err() error {
	if err := f.RecordReader.Err(); err != nil {
		return err
	}
	return errSourceGone
}

var errSourceGone = errors.New("source went away")

// listDir returns the names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestWriteFile writes every type of oddSchema in every format, reads each
// file back through DuckDB's readers, and checks the batches' memory was
// all given back.
func TestWriteFile(t *testing.T) {
	const n = 100_000
	mem := testmem.Checked(t)
	recs := oddRows(mem, n, 7000)
	defer releaseAll(recs)
	dir := t.TempDir()
	tests := []struct {
		format string
		// Row 1 as read back: ValueStr of each column, as DuckDB's reader
		// types it.
		want string
	}{
		{"csv", `1|a, "quoted"` + "\n" + `line|1 month 2 days 00:00:03|{'a': 1, 'b': x}|{k=1}|[1, 2]|01:02:03.000000|2024-01-02T03:04:05Z|12.34`},
		{"json", `1|a, "quoted"` + "\n" + `line|1 month 2 days 00:00:03|{"a":1,"b":"x"}|{"k":1}|[1,2]|01:02:03.000000|2024-01-02 03:04:05+00|12.34`},
		{"parquet", `1|a, "quoted"` + "\n" + `line|{"months":1,"days":2,"nanoseconds":3000000000}|{"a":1,"b":"x"}|[{"key":"k","value":1}]|[1,2]|01:02:03.000000|2024-01-02T03:04:05Z|12.34`},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			path := filepath.Join(dir, "out."+tt.format)
			rdr, err := array.NewRecordReader(oddSchema, recs)
			if err != nil {
				t.Fatal(err)
			}
			defer rdr.Release()
			if err := filesio.WriteFile(context.Background(), rdr, path, tt.format); err != nil {
				t.Fatalf("write: %v", err)
			}
			got, err := readAll(t, []string{path}, filesio.ReadOptions{}, 1)
			if err != nil {
				t.Fatalf("read back: %v", err)
			}
			if got.rows != n {
				t.Errorf("rows read back: got %d, want %d", got.rows, n)
			}
			if row := strings.Join(got.row, "|"); row != tt.want {
				t.Errorf("row 1 read back:\n got %q\nwant %q", row, tt.want)
			}
			// Order is kept, and the NULL rows are NULL.
			r, err := filesio.Open(context.Background(), []string{path}, filesio.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			var next int64
			for r.Next() {
				rec := r.RecordBatch()
				ids := rec.Column(0).(*array.Int64)
				for i := range ids.Len() {
					if ids.Value(i) != next {
						t.Fatalf("row %d: id %d", next, ids.Value(i))
					}
					if (next%10 == 9) != rec.Column(1).IsNull(i) || (next%10 == 9) != rec.Column(4).IsNull(i) {
						t.Fatalf("row %d: s null %v, m null %v", next, rec.Column(1).IsNull(i), rec.Column(4).IsNull(i))
					}
					next++
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if names := listDir(t, dir); strings.Join(names, " ") != "out.csv out.json out.parquet" {
		t.Errorf("files left: %v, want the three outputs", names)
	}
}

// TestWriteFile_Failure checks that a write that fails leaves nothing
// behind, and an existing file as it was.
func TestWriteFile_Failure(t *testing.T) {
	mem := testmem.Checked(t)
	recs := oddRows(mem, 50_000, 5000)
	defer releaseAll(recs)
	for _, format := range filesio.WriteFormats {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			fresh, existing := filepath.Join(dir, "new."+format), filepath.Join(dir, "old."+format)
			if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{fresh, existing} {
				rdr, _ := array.NewRecordReader(oddSchema, recs)
				err := filesio.WriteFile(context.Background(), &failingReader{rdr}, path, format)
				rdr.Release()
				if !errors.Is(err, errSourceGone) {
					t.Errorf("%s: got %v, want the reader's error", path, err)
				}
			}
			if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("new file after a failed write: %v, want none", err)
			}
			if b, _ := os.ReadFile(existing); string(b) != "old" {
				t.Errorf("existing file after a failed write: %q, want it unchanged", b)
			}
			if names := listDir(t, dir); len(names) != 1 {
				t.Errorf("files left: %v, want only the existing one", names)
			}
		})
	}
	t.Run("no such directory", func(t *testing.T) {
		rdr, _ := array.NewRecordReader(oddSchema, recs)
		defer rdr.Release()
		err := filesio.WriteFile(context.Background(), rdr, filepath.Join(t.TempDir(), "nodir", "x.csv"), "csv")
		if err == nil || !strings.Contains(err.Error(), "x.csv") {
			t.Errorf("got %v, want an error naming the file", err)
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		rdr, _ := array.NewRecordReader(oddSchema, recs)
		defer rdr.Release()
		if err := filesio.WriteFile(context.Background(), rdr, filepath.Join(t.TempDir(), "x.xml"), "xml"); err == nil {
			t.Error("got no error")
		}
	})
}

// brokenWriter fails every write.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWrite(t *testing.T) {
	mem := testmem.Checked(t)
	recs := oddRows(mem, 200_000, 10_000)
	defer releaseAll(recs)

	t.Run("csv", func(t *testing.T) {
		rdr, _ := array.NewRecordReader(oddSchema, recs)
		defer rdr.Release()
		var buf bytes.Buffer
		if err := filesio.Write(context.Background(), rdr, &buf, "csv"); err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(buf.String(), "\n", 4)
		if got, want := strings.Join(lines[:3], "\n"), "id,s,iv,st,m,l,t,ts,dec\n"+
			`0,"a, ""quoted""`+"\n"+`line",1 month 2 days 00:00:03,"{'a': 0, 'b': x}",{k=1},"[1, 2]",01:02:03,2024-01-02 03:04:05+00,12.34`; got != want {
			t.Errorf("start:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("writer fails", func(t *testing.T) {
		rdr, _ := array.NewRecordReader(oddSchema, recs)
		defer rdr.Release()
		err := filesio.Write(context.Background(), rdr, brokenWriter{}, "json")
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("got %v, want the writer's error", err)
		}
	})
	t.Run("reader fails", func(t *testing.T) {
		rdr, _ := array.NewRecordReader(oddSchema, recs)
		defer rdr.Release()
		var buf bytes.Buffer
		if err := filesio.Write(context.Background(), &failingReader{rdr}, &buf, "parquet"); !errors.Is(err, errSourceGone) {
			t.Errorf("got %v, want the reader's error", err)
		}
	})
}

func TestPendingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	p, err := filesio.CreatePending(path)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p.Name()) != dir || p.Name() == path {
		t.Errorf("temporary file %s, want another name in %s", p.Name(), dir)
	}
	p.WriteString("new")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("destination before Commit: %v, want none", err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("after Commit: %q", b)
	}
	p.Abort() // does nothing now

	// Same permissions as os.Create gives.
	ref := filepath.Join(dir, "ref")
	f, _ := os.Create(ref)
	f.Close()
	st, _ := os.Stat(path)
	rst, _ := os.Stat(ref)
	if st.Mode().Perm() != rst.Mode().Perm() {
		t.Errorf("mode %v, want os.Create's %v", st.Mode().Perm(), rst.Mode().Perm())
	}

	p, err = filesio.CreatePending(path)
	if err != nil {
		t.Fatal(err)
	}
	p.WriteString("half")
	p.Abort()
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("after Abort: %q, want the committed file", b)
	}
	if names := listDir(t, dir); strings.Join(names, " ") != "out.txt ref" {
		t.Errorf("files: %v", names)
	}
}
