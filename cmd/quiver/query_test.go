package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// queryRows is the test table's size: several result batches, so a writer
// that kept a batch's strings past Write would read memory a later batch
// has reused.
const queryRows = 300_000

// wantS is row id's string, NULL ("", false) on every seventh row; the
// lengths vary so that offsets and data move from batch to batch.
func wantS(id int64) (string, bool) {
	if id%7 == 3 {
		return "", false
	}
	return "v" + strconv.FormatInt(id, 10) + strings.Repeat("x", int(id%20)), true
}

// TestQuery_FileOutputs writes one multi-batch result of strings in every
// file format and reads each file back row by row: the csv, json and
// arrow outputs fetch into recycled memory, the others into Go memory.
func TestQuery_FileOutputs(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), fmt.Sprintf(
		"CREATE TABLE q AS SELECT i AS id, CASE WHEN i %% 7 = 3 THEN NULL ELSE 'v' || i || repeat('x', (i %% 20)::INTEGER) END AS s FROM range(%d) t(i)", queryRows)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		format string
		read   func(t *testing.T, path string, row func(id int64, s string, valid bool))
	}{
		{"csv", readCSV},
		{"json", readJSONLines},
		{"arrow", readArrowFile},
		{"parquet", readParquet},
	} {
		t.Run(tt.format, func(t *testing.T) {
			path := filepath.Join(dir, "out."+tt.format)
			code, _, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "--format", tt.format, "-o", path, "SELECT id, s FROM q ORDER BY id")
			if code != 0 {
				t.Fatalf("exit status %d: %s", code, errOut)
			}
			var next int64
			tt.read(t, path, func(id int64, s string, valid bool) {
				if id != next {
					t.Fatalf("row %d: id %d", next, id)
				}
				if ws, wv := wantS(id); s != ws || valid != wv {
					t.Fatalf("row %d: s = %q (valid %v), want %q (valid %v)", id, s, valid, ws, wv)
				}
				next++
			})
			if next != queryRows {
				t.Errorf("rows read back: %d, want %d", next, queryRows)
			}
		})
	}
}

// openOutput opens a file the test wrote; it is closed when the test ends.
func openOutput(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readCSV(t *testing.T, path string, row func(int64, string, bool)) {
	f := openOutput(t, path)
	r := csv.NewReader(bufio.NewReader(f))
	if h, err := r.Read(); err != nil || strings.Join(h, ",") != "id,s" {
		t.Fatalf("header: %v, %v", h, err)
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		id, err := strconv.ParseInt(rec[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		// The csv format writes NULL as an empty field; no valid s is empty.
		row(id, rec[1], rec[1] != "")
	}
}

func readJSONLines(t *testing.T, path string, row func(int64, string, bool)) {
	f := openOutput(t, path)
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var v struct {
			ID int64   `json:"id"`
			S  *string `json:"s"`
		}
		if err := dec.Decode(&v); err == io.EOF {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		if v.S == nil {
			row(v.ID, "", false)
		} else {
			row(v.ID, *v.S, true)
		}
	}
}

func readArrowFile(t *testing.T, path string, row func(int64, string, bool)) {
	f := openOutput(t, path)
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range r.NumRecords() {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		readColumns(rec.Column(0).(*array.Int64), rec.Column(1).(*array.String), row)
		rec.Release()
	}
}

func readParquet(t *testing.T, path string, row func(int64, string, bool)) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 50_000}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		readColumns(rec.Column(0).(*array.Int64), rec.Column(1).(*array.String), row)
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
}

func readColumns(ids *array.Int64, ss *array.String, row func(int64, string, bool)) {
	for i := range ids.Len() {
		row(ids.Value(i), ss.Value(i), ss.IsValid(i))
	}
}

// everyType is a table with a column of every DuckDB type, and a row of
// NULLs (id 2).
const everyType = `CREATE TABLE every AS SELECT 1 AS id, true AS b, 1::TINYINT AS i8, 2::SMALLINT AS i16, 3::INTEGER AS i32, 4::BIGINT AS i64,
 170141183460469231731687303715884105727::HUGEINT AS i128, 6::UTINYINT AS u8, 7::USMALLINT AS u16, 8::UINTEGER AS u32,
 18446744073709551615::UBIGINT AS u64, 12345678901234567890::UHUGEINT AS u128, 1.5::FLOAT AS f32, 2.25::DOUBLE AS f64,
 12.34::DECIMAL(4,2) AS dec4, 1234567.891::DECIMAL(18,3) AS dec18, 12345678901234567890123456789.123456789::DECIMAL(38,9) AS dec38,
 'text, "quoted"' || chr(10) || 'two lines' AS s, '\xAA\x00b'::BLOB AS bl, DATE '2024-01-02' AS d, TIME '03:04:05.123456' AS t,
 '03:04:05+02'::TIMETZ AS ttz, TIMESTAMP '2024-01-02 03:04:05.123456' AS ts, TIMESTAMPTZ '2024-01-02 03:04:05.123456+02' AS tstz,
 '2024-01-02 03:04:05'::TIMESTAMP_S AS ts_s, '2024-01-02 03:04:05.123'::TIMESTAMP_MS AS ts_ms,
 '2024-01-02 03:04:05.123456789'::TIMESTAMP_NS AS ts_ns, INTERVAL '1 month 2 days 3 seconds' AS iv,
 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID AS u, [1, 2, NULL] AS l, ['x', 'y'] AS ls, {'a': 1, 'b': 'x'} AS st,
 MAP {'k': 1, 'j': 2} AS m, 'sad'::ENUM('sad', 'ok', 'happy') AS e, [1, 2, 3]::INTEGER[3] AS arr, '10110'::BIT AS bits,
 union_value(num := 2)::UNION(num INTEGER, str VARCHAR) AS un, '{"k": [1, 2]}'::JSON AS j,
 123456789012345678901234567890::VARINT AS vi, [{'p': [1], 'q': MAP {'z': [true]}}] AS nested
UNION ALL SELECT 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL`

// textRow is row `id` of the query's result with every column as
// DuckDB's text, by column name.
func textRow(t *testing.T, c *client.Client, from string, id int) map[string]string {
	t.Helper()
	r, err := c.Query(context.Background(), fmt.Sprintf("SELECT COLUMNS(*)::VARCHAR FROM %s WHERE id = %d", from, id))
	if err != nil {
		t.Fatalf("%s: %v", from, err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("%s: no row %d (%v)", from, id, r.Err())
	}
	rec := r.RecordBatch()
	row := map[string]string{}
	for i, f := range rec.Schema().Fields() {
		if rec.Column(i).IsNull(0) {
			row[f.Name] = "NULL"
		} else {
			row[f.Name] = strings.Clone(rec.Column(i).ValueStr(0))
		}
	}
	return row
}

// Why a value reads back otherwise than it was written.
const (
	bigNumber = "DuckDB's sniffer reads a number this large back as a DOUBLE; the file has every digit"
	// The server sends TIMETZ as a time without its offset and BIT as
	// its bytes, and a UHUGEINT as a DECIMAL(38,0) (which is why u128 is
	// below 10^38): no writer can give them back.
	lostOnTheWire = "lost on the wire"
)

// TestQuery_EveryType writes a table of every DuckDB type in every
// format, to a file and to stdout, and reads each file back with DuckDB's
// readers. arrow-go's CSV writer panicked on INTERVAL, STRUCT and MAP and
// its Parquet writer refused INTERVAL, each leaving an empty file.
func TestQuery_EveryType(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{ExternalAccess: true})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), everyType); err != nil {
		t.Fatal(err)
	}
	want := textRow(t, c, "every", 1)
	dir := t.TempDir()
	const sql = "SELECT * FROM every ORDER BY id"
	for _, tt := range []struct {
		format, read string
		// differ are the columns whose text differs once read back, and
		// why. Everything else reads back as it was.
		differ map[string]string
	}{
		{"csv", "read_csv", map[string]string{
			"i128": bigNumber, "u64": bigNumber, "u128": bigNumber, "vi": bigNumber, "dec38": bigNumber,
			"ts_ns": "read back as TIMESTAMP, in microseconds; the file has the nanoseconds",
			"ttz":   lostOnTheWire, "bits": lostOnTheWire,
		}},
		{"json", "read_json", map[string]string{
			"i128": bigNumber, "vi": bigNumber, "dec38": bigNumber,
			"m": "a JSON object reads back as a STRUCT", "nested": "a JSON object reads back as a STRUCT",
			"un":  "the UNION is written as the object of its member, {\"num\": 2}",
			"ttz": lostOnTheWire, "bits": lostOnTheWire,
		}},
		{"parquet", "read_parquet", map[string]string{
			"un":  "Parquet has no union: DuckDB writes a struct of the tag and the members",
			"ttz": lostOnTheWire, "bits": lostOnTheWire,
		}},
	} {
		t.Run(tt.format, func(t *testing.T) {
			path := filepath.Join(dir, "every."+tt.format)
			code, _, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "-o", path, sql)
			if code != 0 {
				t.Fatalf("-o %s: exit status %d: %s", path, code, errOut)
			}
			from := fmt.Sprintf("%s('%s')", tt.read, path)
			got := textRow(t, c, from, 1)
			if len(got) != len(want) {
				t.Errorf("columns read back: %d, want %d", len(got), len(want))
			}
			for name, w := range want {
				g := got[name]
				if why, ok := tt.differ[name]; ok {
					if g == w {
						t.Errorf("%s reads back as it was written (%q): take it off the list (%s)", name, g, why)
					}
					continue
				}
				if g != w {
					t.Errorf("%s: read back %q, want %q", name, g, w)
				}
			}
			if tt.format != "parquet" {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{"i128", "u64", "u128", "vi", "dec38", "ts_ns"} {
					if !strings.Contains(string(b), want[name]) {
						t.Errorf("%s: the file does not hold %s", name, want[name])
					}
				}
			}
			if n := scalar(t, c, fmt.Sprintf("SELECT count(*) FROM %s WHERE id = 2 AND COLUMNS(* EXCLUDE (id)) IS NULL", from)); n != "1" {
				t.Errorf("NULL rows read back: %s, want 1", n)
			}
			// To stdout: the same bytes, written through a pipe.
			if tt.format != "parquet" {
				code, out, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "--format", tt.format, sql)
				if b, _ := os.ReadFile(path); code != 0 || out != string(b) {
					t.Errorf("--format %s to stdout: exit status %d (%s), output %q, want the file's %q", tt.format, code, errOut, out, b)
				}
			}
		})
	}
	for _, format := range []string{"arrow", "table"} {
		t.Run(format, func(t *testing.T) {
			code, out, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "--format", format, sql)
			if code != 0 || !strings.Contains(out, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11") {
				t.Errorf("--format %s: exit status %d (%s), output %q", format, code, errOut, out)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("files in the output directory: %d, want the 3 outputs", len(ents))
	}
}

// TestQuery_FailedWriteLeavesNothing: a result that fails midway leaves
// no file behind, and an existing file as it was.
func TestQuery_FailedWriteLeavesNothing(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{})
	dir := t.TempDir()
	// The error comes after batches have been written.
	const sql = "SELECT i, CASE WHEN i = 250000 THEN error('boom at ' || i) ELSE 'v' || i END AS s FROM range(300000) t(i)"
	for _, format := range []string{"csv", "json", "parquet", "arrow"} {
		t.Run(format, func(t *testing.T) {
			fresh, existing := filepath.Join(dir, "new."+format), filepath.Join(dir, "old."+format)
			if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{fresh, existing} {
				code, _, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "-o", path, sql)
				// DuckDB may lose the error to a race and say so (engine.ErrLostMessage).
				named := strings.Contains(errOut, "boom at 250000") || strings.Contains(errOut, engine.ErrLostMessage)
				if code != 1 || !named || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
					t.Errorf("-o %s: exit status %d, stderr %q; want 1 and one line naming the error", path, code, errOut)
				}
			}
			if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("new file after a failed query: %v, want none", err)
			}
			if b, _ := os.ReadFile(existing); string(b) != "old" {
				t.Errorf("existing file after a failed query: %q, want it unchanged", b)
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files left: %v, want the 4 existing ones", names)
	}
	code, _, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "-o", filepath.Join(dir, "nodir", "x.csv"), "SELECT 1")
	if code != 1 || !strings.Contains(errOut, "nodir/x.csv") {
		t.Errorf("-o into a missing directory: exit status %d, stderr %q", code, errOut)
	}
}
