package client_test

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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
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

// mismatches counts the rows of table that differ from the test data.
const mismatches = `SELECT count(*) FROM %s WHERE name IS DISTINCT FROM (CASE WHEN id %% 5 = 0 THEN NULL ELSE 'n' || id END)
	OR score <> id / 2 OR flag <> (id %% 2 = 0) OR day::DATE <> DATE '2024-01-01' + (id %% 365)::INTEGER`

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

func TestFormatOf(t *testing.T) {
	tests := []struct {
		path string
		want client.Format
	}{
		{"a.parquet", client.FormatParquet},
		{"dir/A.PQ", client.FormatParquet},
		{"a.csv", client.FormatCSV},
		{"a.ndjson", client.FormatNDJSON},
		{"a.jsonl", client.FormatNDJSON},
		{"a.json", client.FormatNDJSON},
		{"a.arrow", client.FormatArrow},
		{"a.arrows", client.FormatArrow},
		{"a.feather", client.FormatArrow},
		{"a.ipc", client.FormatArrow},
		{"a.txt", client.FormatUnknown},
		{"a", client.FormatUnknown},
		{"a.csv.gz", client.FormatUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := client.FormatOf(tt.path)
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if (tt.want == client.FormatUnknown) != errors.Is(err, client.ErrUnknownFormat) {
				t.Errorf("error: got %v", err)
			}
		})
	}
}

// readAll reads a file with OpenFile and returns its schema, batch sizes
// and the values of row `row` as strings.
func readAll(t *testing.T, path string, opts client.ReadOptions, row int) (*arrow.Schema, []int64, []string) {
	t.Helper()
	r, err := client.OpenFile(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer r.Close()
	var sizes []int64
	var vals []string
	seen := 0
	for r.Next() {
		rec := r.RecordBatch()
		sizes = append(sizes, rec.NumRows())
		if row >= seen && row < seen+int(rec.NumRows()) {
			for _, c := range rec.Columns() {
				vals = append(vals, c.ValueStr(row-seen))
			}
		}
		seen += int(rec.NumRows())
	}
	if err := r.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if r.BytesRead() == 0 {
		t.Errorf("BytesRead: got 0")
	}
	return r.Schema(), sizes, vals
}

func TestOpenFile(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	recs := makeRows(mem, 0, 10000, 10000)
	defer releaseAll(recs)
	writeParquet(t, filepath.Join(dir, "a.parquet"), recs, 4000)
	writeIPC(t, filepath.Join(dir, "a.arrow"), recs, false)
	writeIPC(t, filepath.Join(dir, "a.arrows"), recs, true)
	writeText(t, filepath.Join(dir, "a.csv"), 0, 10000, false)
	writeText(t, filepath.Join(dir, "a.ndjson"), 0, 10000, true)
	tests := []struct {
		file      string
		wantTypes string
		wantSizes string
		wantRow   string // row 7
	}{
		{"a.parquet", "int64 utf8 float64 bool date32", "3000 3000 3000 1000", "7 n7 3.5 false 2024-01-08"},
		{"a.arrow", "int64 utf8 float64 bool date32", "3000 3000 3000 1000", "7 n7 3.5 false 2024-01-08"},
		{"a.arrows", "int64 utf8 float64 bool date32", "3000 3000 3000 1000", "7 n7 3.5 false 2024-01-08"},
		{"a.csv", "int64 utf8 float64 bool date32", "3000 3000 3000 1000", "7 n7 3.5 false 2024-01-08"},
		{"a.ndjson", "int64 utf8 float64 bool utf8", "3000 3000 3000 1000", "7 n7 3.5 false 2024-01-08"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			schema, sizes, row := readAll(t, filepath.Join(dir, tt.file), client.ReadOptions{BatchRows: 3000, Allocator: mem}, 7)
			var types []string
			for _, f := range schema.Fields() {
				types = append(types, f.Type.String())
			}
			if got := strings.Join(types, " "); got != tt.wantTypes {
				t.Errorf("types: got %s, want %s", got, tt.wantTypes)
			}
			if got := strings.Trim(fmt.Sprint(sizes), "[]"); got != tt.wantSizes {
				t.Errorf("batch sizes: got %s, want %s", got, tt.wantSizes)
			}
			if got := strings.Join(row, " "); got != tt.wantRow {
				t.Errorf("row 7: got %s, want %s", got, tt.wantRow)
			}
		})
	}
}

func TestOpenFile_Inference(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, file, text string
		inferRows        int
		wantTypes        string
		wantErr          string
	}{
		{name: "csv types", file: "t.csv", text: "a,b,c,d,e,f,g\n1,1.5,true,2024-01-02,2024-01-02 03:04:05,x,\n,2,false,,2024-01-02T03:04:05,,\n",
			wantTypes: "a:int64 b:float64 c:bool d:date32 e:timestamp[us] f:utf8 g:utf8"},
		{name: "csv zoned timestamp", file: "z.csv", text: "ts\n2024-01-02T03:04:05Z\n2024-01-02 03:04:05+02:00\n", wantTypes: "ts:timestamp[us, tz=UTC]"},
		{name: "csv value after the sample", file: "late.csv", text: "a\n1\n2\nthree\n", inferRows: 2, wantErr: "three"},
		{name: "csv ragged row", file: "ragged.csv", text: "a,b\n1,2\n3\n", wantErr: "wrong number of fields"},
		{name: "ndjson nested", file: "n.ndjson", text: `{"id": 1, "tags": ["a"], "attrs": {"k": 1, "s": "x"}, "n": null}` + "\n" + `{"id": 2, "tags": [], "attrs": {"k": 2.5, "z": [true]}}` + "\n",
			wantTypes: "id:int64 tags:list<item: utf8, nullable> attrs:struct<k: float64 nullable, s: utf8 nullable, z: list<item: bool, nullable> nullable> n:utf8"},
		{name: "ndjson key after the sample", file: "late.ndjson", text: "{\"a\": 1}\n{\"a\": 2}\n{\"a\": 3, \"b\": 4}\n", inferRows: 2, wantErr: `line 3: key "b" is not in the schema`},
		{name: "ndjson nested key after the sample", file: "nested.ndjson", text: "{\"a\": {\"x\": 1}}\n{\"a\": {\"x\": 1, \"y\": 2}}\n", inferRows: 1, wantErr: `key "a.y"`},
		{name: "ndjson mixed kinds", file: "mixed.ndjson", text: "{\"a\": 1}\n{\"a\": \"x\"}\n", wantErr: `key "a" holds both integer and string`},
		{name: "ndjson wrong type after the sample", file: "wrong.ndjson", text: "{\"a\": 1}\n{\"a\": \"x\"}\n", inferRows: 1, wantErr: "near line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := client.OpenFile(context.Background(), write(tt.file, tt.text), client.ReadOptions{InferRows: tt.inferRows})
			if err == nil {
				for r.Next() {
				}
				err = r.Err()
				if tt.wantTypes != "" {
					var types []string
					for _, f := range r.Schema().Fields() {
						types = append(types, f.Name+":"+f.Type.String())
					}
					if got := strings.Join(types, " "); got != tt.wantTypes {
						t.Errorf("types:\n got %s\nwant %s", got, tt.wantTypes)
					}
				}
				r.Close()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error: got %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// scalar runs a one-value query.
func scalar(t *testing.T, c *client.Client, sql string) string {
	t.Helper()
	r, err := c.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("%s: no rows (%v)", sql, r.Err())
	}
	return r.RecordBatch().Column(0).ValueStr(0)
}

func TestClient_Load(t *testing.T) {
	srvMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	srv := testutil.StartServer(t, server.Config{Allocator: srvMem})
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := testutil.Dial(t, srv, client.Config{Allocator: mem})
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	first := makeRows(mem, 0, 30000, 10000)
	second := makeRows(mem, 30000, 50000, 20000)
	writeParquet(t, path("a.parquet"), first, 12000)
	writeParquet(t, path("b.parquet"), second, 12000)
	writeIPC(t, path("a.arrow"), first, false)
	writeIPC(t, path("b.arrows"), second, true)
	releaseAll(first)
	releaseAll(second)
	writeText(t, path("a.csv"), 0, 30000, false)
	writeText(t, path("b.csv"), 30000, 50000, false)
	writeText(t, path("a.ndjson"), 0, 30000, true)
	writeText(t, path("b.jsonl"), 30000, 50000, true)

	tests := []struct {
		name        string
		files       []string
		compression string
	}{
		{"parquet", []string{"a.parquet", "b.parquet"}, "none"},
		{"arrow file and stream", []string{"a.arrow", "b.arrows"}, "lz4"},
		{"csv", []string{"a.csv", "b.csv"}, "zstd"},
		{"ndjson", []string{"a.ndjson", "b.jsonl"}, ""},
		{"parquet then arrow", []string{"a.parquet", "b.arrows"}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := fmt.Sprintf("load%d", i)
			var files []string
			for _, f := range tt.files {
				files = append(files, path(f))
			}
			var calls int
			var last client.LoadProgress
			res, err := c.Load(context.Background(), files, client.LoadOptions{
				Table: table, Mode: client.ModeCreate, Compression: tt.compression,
				Read:     client.ReadOptions{BatchRows: 8192},
				Progress: func(p client.LoadProgress) { calls++; last = p },
			})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if res.Rows != 50000 {
				t.Errorf("rows: got %d, want 50000", res.Rows)
			}
			if calls == 0 || last.Rows != 50000 || last.TotalBytes != res.Bytes || last.Bytes == 0 {
				t.Errorf("progress: %d calls, last %+v, total %d", calls, last, res.Bytes)
			}
			if got := scalar(t, c, "SELECT count(*)::VARCHAR || '/' || count(DISTINCT id)::VARCHAR || '/' || max(id)::VARCHAR FROM "+table); got != "50000/50000/49999" {
				t.Errorf("count/distinct/max id: got %s, want 50000/50000/49999", got)
			}
			if got := scalar(t, c, fmt.Sprintf(mismatches, table)); got != "0" {
				t.Errorf("rows that differ from the files: got %s, want 0", got)
			}
		})
	}

	t.Run("append", func(t *testing.T) {
		res, err := c.Load(context.Background(), []string{path("b.csv")}, client.LoadOptions{Table: "load0", Mode: client.ModeAppend})
		if err != nil || res.Rows != 20000 {
			t.Fatalf("append: got %d, %v; want 20000", res.Rows, err)
		}
		if got := scalar(t, c, "SELECT count(*) FROM load0"); got != "70000" {
			t.Errorf("rows: got %s, want 70000", got)
		}
	})

	t.Run("server refuses", func(t *testing.T) {
		_, err := c.Load(context.Background(), []string{path("a.csv")}, client.LoadOptions{Table: "load0", Mode: client.ModeCreate})
		if status.Code(errors.Unwrap(err)) != codes.AlreadyExists && !strings.Contains(fmt.Sprint(err), "AlreadyExists") {
			t.Errorf("create over an existing table: got %v, want AlreadyExists", err)
		}
	})

	writeText(t, path("bad.csv"), 0, 5000, false)
	f, _ := os.OpenFile(path("bad.csv"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(f, "oops,x,1,true,2024-01-01")
	f.Close()
	if err := os.WriteFile(path("other.csv"), []byte("id,label\n1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("empty.csv"), []byte("id,name,score,flag,day\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failures := []struct {
		name, file, want string
	}{
		{"schemas differ", "other.csv", "every file must share one schema"},
		{"bad value in a later file", "bad.csv", "oops"},
		{"missing file", "nope.parquet", "no such file"},
		{"no rows", "empty.csv", "holds no rows"},
		{"unknown format", "notes.txt", "unknown file format"},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			files := []string{path("a.csv"), path(tt.file)}
			if tt.file == "empty.csv" {
				files = files[1:]
			}
			_, err := c.Load(context.Background(), files, client.LoadOptions{Table: "never", Mode: client.ModeCreate})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("load: got %v, want an error containing %q", err, tt.want)
			}
			// All or nothing: the table was not created.
			if got := scalar(t, c, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'never'"); got != "0" {
				t.Errorf("tables named never: got %s, want 0", got)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"create", "append", "replace", "create_append"} {
		m, err := client.ParseMode(s)
		if err != nil || string(m) != s {
			t.Errorf("ParseMode(%q): got %q, %v", s, m, err)
		}
		if _, err := m.TableDefinitionOptions(); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := client.ParseMode("upsert"); err == nil {
		t.Errorf("ParseMode(upsert): got no error")
	}
}
