package filesio_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/quiverdata/quiver/filesio"
	"github.com/quiverdata/quiver/internal/testmem"
)

// The test data: row i has id i, name "n<i>" (null when i%5 == 0),
// score i/2, flag i%2 == 0 and day 2024-01-01 plus i%365 days.
var rowsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
}, nil)

var day0 = arrow.Date32(19723) // 2024-01-01

func makeRows(mem memory.Allocator, from, to, batch int) []arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, rowsSchema)
	defer b.Release()
	var recs []arrow.RecordBatch
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%5 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", i))
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
		b.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
		b.Field(4).(*array.Date32Builder).Append(day0 + arrow.Date32(i%365))
		if (i-from+1)%batch == 0 || i == to-1 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	return recs
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func writeParquet(t *testing.T, path string, recs []arrow.RecordBatch, rowGroup int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(recs[0].Schema(), f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rowGroup)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeIPC(t *testing.T, path string, recs []arrow.RecordBatch, stream bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type writer interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	var w writer
	if stream {
		w = ipc.NewWriter(f, ipc.WithSchema(recs[0].Schema()))
	} else if w, err = ipc.NewFileWriter(f, ipc.WithSchema(recs[0].Schema())); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeText writes rows from..to of the test data as CSV or NDJSON.
func writeText(t *testing.T, path string, from, to int, ndjson bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if !ndjson {
		fmt.Fprintln(w, "id,name,score,flag,day")
	}
	for i := from; i < to; i++ {
		name, jname := fmt.Sprintf("n%d", i), fmt.Sprintf("%q", fmt.Sprintf("n%d", i))
		if i%5 == 0 {
			name, jname = "", "null"
		}
		score := strconv.FormatFloat(float64(i)/2, 'f', -1, 64)
		day := (day0 + arrow.Date32(i%365)).FormattedString()
		if ndjson {
			fmt.Fprintf(w, `{"id": %d, "name": %s, "score": %s, "flag": %v, "day": "%s"}`+"\n", i, jname, score, i%2 == 0, day)
		} else {
			fmt.Fprintf(w, "%d,%s,%s,%v,%s\n", i, name, score, i%2 == 0, day)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes text to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFormatOf(t *testing.T) {
	tests := []struct {
		path string
		want filesio.Format
	}{
		{"a.parquet", filesio.FormatParquet},
		{"dir/A.PQ", filesio.FormatParquet},
		{"a.csv", filesio.FormatCSV},
		{"a.ndjson", filesio.FormatNDJSON},
		{"a.jsonl", filesio.FormatNDJSON},
		{"a.json", filesio.FormatNDJSON},
		{"a.arrow", filesio.FormatArrow},
		{"a.arrows", filesio.FormatArrow},
		{"a.feather", filesio.FormatArrow},
		{"a.ipc", filesio.FormatArrow},
		{"a.txt", filesio.FormatUnknown},
		{"a", filesio.FormatUnknown},
		{"a.csv.gz", filesio.FormatUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := filesio.FormatOf(tt.path)
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if (tt.want == filesio.FormatUnknown) != errors.Is(err, filesio.ErrUnknownFormat) {
				t.Errorf("error: got %v", err)
			}
		})
	}
}

// readResult is what readAll saw.
type readResult struct {
	types   string   // name:type ...
	rows    int64    // rows read
	maxRows int64    // the largest batch
	row     []string // the values of the row asked for
}

// readAll reads paths with Open and returns the schema, the row count,
// the largest batch and the values of row `row`.
func readAll(t *testing.T, paths []string, opts filesio.ReadOptions, row int64) (readResult, error) {
	t.Helper()
	r, err := filesio.Open(context.Background(), paths, opts)
	if err != nil {
		return readResult{}, err
	}
	defer r.Release()
	var res readResult
	var types []string
	for _, f := range r.Schema().Fields() {
		types = append(types, f.Name+":"+f.Type.String())
	}
	res.types = strings.Join(types, " ")
	for r.Next() {
		rec := r.RecordBatch()
		if !rec.Schema().Equal(r.Schema()) {
			t.Errorf("batch schema %s, want the reader's %s", rec.Schema(), r.Schema())
		}
		res.maxRows = max(res.maxRows, rec.NumRows())
		if row >= res.rows && row < res.rows+rec.NumRows() {
			for _, c := range rec.Columns() {
				// The batch's strings are recycled: copy them.
				res.row = append(res.row, strings.Clone(c.ValueStr(int(row-res.rows))))
			}
		}
		res.rows += rec.NumRows()
	}
	if r.Rows() != res.rows {
		t.Errorf("Rows: got %d, want %d", r.Rows(), res.rows)
	}
	return res, r.Err()
}

func TestOpen_Formats(t *testing.T) {
	mem := testmem.Checked(t)
	dir := t.TempDir()
	recs := makeRows(memory.DefaultAllocator, 0, 10000, 10000)
	writeParquet(t, filepath.Join(dir, "a.parquet"), recs, 4000)
	writeIPC(t, filepath.Join(dir, "a.arrow"), recs, false)
	writeIPC(t, filepath.Join(dir, "a.arrows"), recs, true)
	releaseAll(recs)
	writeText(t, filepath.Join(dir, "a.csv"), 0, 10000, false)
	writeText(t, filepath.Join(dir, "a.ndjson"), 0, 10000, true)
	const wantTypes = "id:int64 name:utf8 score:float64 flag:bool day:date32"
	for _, file := range []string{"a.parquet", "a.arrow", "a.arrows", "a.csv", "a.ndjson"} {
		t.Run(file, func(t *testing.T) {
			got, err := readAll(t, []string{filepath.Join(dir, file)}, filesio.ReadOptions{BatchRows: 3000, Allocator: mem}, 7)
			if err != nil {
				t.Fatal(err)
			}
			if got.types != wantTypes {
				t.Errorf("types: got %s, want %s", got.types, wantTypes)
			}
			if got.rows != 10000 {
				t.Errorf("rows: got %d, want 10000", got.rows)
			}
			// DuckDB fills batches a vector (2048 rows) at a time.
			if got.maxRows > 3000+2048 {
				t.Errorf("largest batch: got %d rows, want about 3000", got.maxRows)
			}
			if row := strings.Join(got.row, " "); row != "7 n7 3.5 false 2024-01-08" {
				t.Errorf("row 7: got %s, want 7 n7 3.5 false 2024-01-08", row)
			}
		})
	}
}

// TestOpen_NewUserCSV reads what a new user tried first: quoted commas, a
// doubled quote, a field over two lines, an empty number, and timestamps
// with and without a zone offset. quiver's own CSV reader refused it.
func TestOpen_NewUserCSV(t *testing.T) {
	path := writeFile(t, t.TempDir(), "new.csv", "id,name,note,amount,ts\n"+
		"1,\"Smith, John\",\"He said \"\"hi\"\"\",12.5,2024-01-02 03:04:05\n"+
		"2,Ann,\"line one\nline two\",,2024-01-02T03:04:05Z\n"+
		"3,Bob,plain,7,2024-01-02 03:04:05+02:00\n"+
		"4,\"Zoë\",,3.25,2024-03-04 05:06:07\n")
	r, err := filesio.Open(context.Background(), []string{path}, filesio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var types []string
	for _, f := range r.Schema().Fields() {
		types = append(types, f.Name+":"+f.Type.String())
	}
	if got, want := strings.Join(types, " "), "id:int64 name:utf8 note:utf8 amount:float64 ts:timestamp[us, tz=UTC]"; got != want {
		t.Errorf("types:\n got %s\nwant %s", got, want)
	}
	var rows []string
	for r.Next() {
		rec := r.RecordBatch()
		for i := range int(rec.NumRows()) {
			var vals []string
			for _, c := range rec.Columns() {
				vals = append(vals, strings.Clone(c.ValueStr(i)))
			}
			rows = append(rows, strings.Join(vals, "|"))
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`1|Smith, John|He said "hi"|12.5|2024-01-02T03:04:05Z`,
		"2|Ann|line one\nline two|(null)|2024-01-02T03:04:05Z",
		"3|Bob|plain|7|2024-01-02T01:04:05Z", // +02:00, in UTC
		"4|Zoë|(null)|3.25|2024-03-04T05:06:07Z",
	}
	if strings.Join(rows, "\n---\n") != strings.Join(want, "\n---\n") {
		t.Errorf("rows:\n got %q\nwant %q", rows, want)
	}
}

// TestOpen_Errors checks that bad input fails with one line naming the
// file and what is wrong with it: the value that does not fit, the row
// that does not split, the key nobody expected.
func TestOpen_Errors(t *testing.T) {
	dir := t.TempDir()
	many := func(name, head, row, last string) string {
		var b strings.Builder
		b.WriteString(head)
		for i := range 30000 { // past DuckDB's sample
			fmt.Fprintf(&b, row, i, i)
		}
		b.WriteString(last)
		return writeFile(t, dir, name, b.String())
	}
	notParquet := writeFile(t, dir, "fake.parquet", "id,name\n1,x\n")
	longCSV, _ := longLines(t, dir)
	tests := []struct {
		name  string
		paths []string
		opts  filesio.ReadOptions
		want  []string // in the error, in order
	}{
		{name: "value past the sample", paths: []string{many("late.csv", "a,b\n", "%d,x%d\n", "three,y\n")},
			want: []string{"late.csv", `Could not convert string 'three' to INT64`}},
		{name: "fraction past the sample", paths: []string{many("late2.csv", "a,b\n", "%d,x%d\n", "3.5,y\n")},
			opts: filesio.ReadOptions{SampleRows: 100}, want: []string{"late2.csv", `column "a": 3.5 is not a whole number, and the column is BIGINT`}},
		{name: "ragged row past the sample", paths: []string{many("ragged.csv", "a,b\n", "%d,x%d\n", "1,2,3\n")},
			want: []string{"ragged.csv", "Line: 30002", "Expected Number of Columns: 2 Found: 3"}},
		{name: "ragged row in the sample", paths: []string{writeFile(t, dir, "short.csv", "a,b\n1,2\n3\n4,5,6\n")},
			want: []string{"short.csv", "Line: 3", "Expected Number of Columns: 2 Found: 1"}},
		{name: "NDJSON key past the sample", paths: []string{many("late.ndjson", "", "{\"a\": %d, \"b\": \"x%d\"}\n", "{\"a\": 1, \"c\": 2}\n")},
			want: []string{"late.ndjson", "line 30001", `unknown key "c"`}},
		{name: "NDJSON value past the sample", paths: []string{many("wrong.ndjson", "", "{\"a\": %d, \"b\": \"x%d\"}\n", "{\"a\": \"zz\"}\n")},
			want: []string{"wrong.ndjson", "line 30001", `"zz"`}},
		{name: "malformed NDJSON", paths: []string{writeFile(t, dir, "bad.ndjson", "{\"a\": 1}\n{\"a\": \n")},
			want: []string{"bad.ndjson", "Malformed JSON"}},
		{name: "CSV line over DuckDB's 2,000,000 bytes", paths: []string{longCSV},
			want: []string{"long.csv", "Original Line: 2,", "…", "Maximum line size of 2000000 bytes exceeded"}},
		{name: "not Parquet", paths: []string{notParquet}, want: []string{"fake.parquet", "magic bytes"}},
		{name: "missing file", paths: []string{filepath.Join(dir, "gone.csv")}, want: []string{"gone.csv", "no such file"}},
		{name: "unknown format", paths: []string{filepath.Join(dir, "notes.txt")}, want: []string{"unknown file format"}},
		{name: "missing schema file", paths: []string{notParquet}, opts: filesio.ReadOptions{SchemaFrom: filepath.Join(dir, "gone.parquet")},
			want: []string{"gone.parquet", "no such file"}},
	}
	if err := os.Mkdir(filepath.Join(dir, "d.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		name  string
		paths []string
		opts  filesio.ReadOptions
		want  []string
	}{name: "directory", paths: []string{filepath.Join(dir, "d.csv")}, want: []string{"d.csv", "is a directory"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(t, tt.paths, tt.opts, -1)
			if err == nil {
				t.Fatal("got no error")
			}
			msg := err.Error()
			at := 0
			for _, w := range tt.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error: got %q, want it to contain %q (after %q)", msg, w, msg[:at])
				}
				at += i + len(w)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error: got several lines, want one: %q", msg)
			}
			var re *filesio.ReadError
			if !errors.As(err, &re) && !errors.Is(err, filesio.ErrUnknownFormat) {
				t.Errorf("error: got %T, want a *ReadError", err)
			}
		})
	}
}

// longLines writes long.csv, whose second row is a 3 MB line, past
// DuckDB's limit, and big.ndjson, whose second object is 17 MB.
func longLines(t *testing.T, dir string) (csv, ndjson string) {
	t.Helper()
	csv = writeFile(t, dir, "long.csv", "id,s\n1,x\n2,"+strings.Repeat("y", 3_000_000)+"\n3,z\n")
	ndjson = writeFile(t, dir, "big.ndjson", "{\"id\": 1, \"s\": \"x\"}\n{\"id\": 2, \"s\": \""+strings.Repeat("y", 17<<20)+"\"}\n{\"id\": 3, \"s\": \"z\"}\n")
	return csv, ndjson
}

// TestOpen_MaxLineBytes reads the CSV file whose long line fails with
// DuckDB's limit (TestOpen_Errors) once MaxLineBytes makes room. NDJSON
// has no such limit: its 17 MB object reads as it is.
func TestOpen_MaxLineBytes(t *testing.T) {
	csv, ndjson := longLines(t, t.TempDir())
	for _, tt := range []struct {
		path string
		long int
		opts filesio.ReadOptions
	}{{csv, 3_000_000, filesio.ReadOptions{MaxLineBytes: 32 << 20}}, {ndjson, 17 << 20, filesio.ReadOptions{}}} {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			res, err := readAll(t, []string{tt.path}, tt.opts, 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.rows != 3 || len(res.row) != 2 || res.row[0] != "2" || len(res.row[1]) != tt.long {
				t.Errorf("%d rows, row 1 %q… (%d bytes): want 3 rows, row 1 id 2 with %d bytes", res.rows, res.row[0], len(res.row[len(res.row)-1]), tt.long)
			}
		})
	}
}

// TestOpen_SeveralFiles reads files of different formats as one stream:
// later files are read with the first file's (or SchemaFrom's) types.
func TestOpen_SeveralFiles(t *testing.T) {
	mem := testmem.Checked(t)
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	recs := makeRows(memory.DefaultAllocator, 0, 4000, 1000)
	writeParquet(t, path("a.parquet"), recs, 1500)
	writeIPC(t, path("b.arrows"), recs, true)
	releaseAll(recs)
	writeText(t, path("c.csv"), 0, 4000, false)
	writeText(t, path("d.ndjson"), 0, 4000, true)
	// Integers only, and keys in another order with one missing: read
	// with the first file's types, the missing key as NULL.
	writeFile(t, dir, "ints.csv", "id,name,score,flag,day\n1,x,2,true,2024-01-01\n")
	writeFile(t, dir, "keys.ndjson", `{"day": "2024-01-02", "score": 3, "id": 9, "flag": false}`+"\n")
	// A later file whose value does not fit the first file's type.
	writeFile(t, dir, "bad.csv", "id,name,score,flag,day\n1,x,2,true,2024-01-01\noops,y,3,false,2024-01-02\n")
	writeFile(t, dir, "bad.ndjson", `{"id": "oops"}`+"\n")
	writeFile(t, dir, "frac.ndjson", `{"id": 2.5}`+"\n")
	writeFile(t, dir, "baddate.csv", "id,name,score,flag,day\n1,x,2,true,someday\n")
	writeFile(t, dir, "other.csv", "id,label\n1,x\n")
	writeFile(t, dir, "fewer.csv", "id,name\n1,x\n")
	intIDs := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64}, {Name: "flag", Type: arrow.FixedWidthTypes.Boolean}, {Name: "day", Type: arrow.FixedWidthTypes.Date32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, intIDs)
	b.Field(0).(*array.Int32Builder).Append(5)
	b.Field(1).(*array.StringBuilder).Append("v")
	b.Field(2).(*array.Float64Builder).Append(1)
	b.Field(3).(*array.BooleanBuilder).Append(true)
	b.Field(4).(*array.Date32Builder).Append(day0)
	rec := b.NewRecordBatch()
	writeParquet(t, path("int32.parquet"), []arrow.RecordBatch{rec}, 10)
	writeIPC(t, path("int32.arrow"), []arrow.RecordBatch{rec}, false)
	rec.Release()
	b.Release()

	const wantTypes = "id:int64 name:utf8 score:float64 flag:bool day:date32"
	tests := []struct {
		name     string
		files    []string
		opts     filesio.ReadOptions
		wantRows int64
		wantErr  string
	}{
		{name: "every format", files: []string{"a.parquet", "b.arrows", "c.csv", "d.ndjson"}, wantRows: 16000},
		{name: "arrow first", files: []string{"b.arrows", "a.parquet", "c.csv"}, wantRows: 12000},
		{name: "cast to the first file's types", files: []string{"c.csv", "ints.csv", "keys.ndjson", "int32.parquet"}, wantRows: 4003},
		{name: "schema from another file", files: []string{"ints.csv", "keys.ndjson"}, opts: filesio.ReadOptions{SchemaFrom: path("a.parquet")}, wantRows: 2},
		{name: "later value does not fit", files: []string{"c.csv", "bad.csv"}, wantErr: `bad.csv: Conversion Error: Could not convert string 'oops' to INT64 when casting from source column id`},
		{name: "later value has a fraction", files: []string{"c.csv", "frac.ndjson"}, wantErr: `frac.ndjson: Invalid Input Error: column "id": 2.5 is not a whole number, and the column is BIGINT`},
		{name: "later CSV value of another type", files: []string{"c.csv", "baddate.csv"}, wantErr: `baddate.csv: Conversion Error: CSV Error on Line: 2; Original Line: 1,x,2,true,someday; Error when converting column "day"`},
		{name: "later NDJSON value does not fit", files: []string{"c.csv", "bad.ndjson"}, wantErr: `bad.ndjson: Conversion Error: Could not convert string 'oops' to INT64`},
		{name: "other columns", files: []string{"c.csv", "other.csv"}, wantErr: `other.csv: column "label" is not a column of`},
		{name: "fewer columns", files: []string{"c.csv", "fewer.csv"}, wantErr: `fewer.csv: no column "score"`},
		{name: "arrow file of other types", files: []string{"c.csv", "int32.arrow"}, wantErr: `int32.arrow: column "id" is int32, and int64 in`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var paths []string
			for _, f := range tt.files {
				paths = append(paths, path(f))
			}
			tt.opts.Allocator = mem
			var last filesio.Progress
			tt.opts.Progress = func(p filesio.Progress) { last = p }
			got, err := readAll(t, paths, tt.opts, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error: got %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.types != wantTypes {
				t.Errorf("types: got %s, want %s", got.types, wantTypes)
			}
			if got.rows != tt.wantRows {
				t.Errorf("rows: got %d, want %d", got.rows, tt.wantRows)
			}
			if last.Rows != tt.wantRows || last.Files != len(paths) || last.FileIndex != len(paths) || last.TotalBytes == 0 {
				t.Errorf("last progress: %+v", last)
			}
		})
	}
}

// TestReader_Cancel stops a read midway with its context.
func TestReader_Cancel(t *testing.T) {
	dir := t.TempDir()
	writeText(t, filepath.Join(dir, "a.csv"), 0, 200000, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := filesio.Open(ctx, []string{filepath.Join(dir, "a.csv")}, filesio.ReadOptions{BatchRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("no first batch: %v", r.Err())
	}
	cancel()
	for r.Next() {
	}
	if !errors.Is(r.Err(), context.Canceled) {
		t.Errorf("error: got %v, want context.Canceled", r.Err())
	}
	if r.Ended() {
		t.Errorf("Ended: got true after a cancel")
	}
}
