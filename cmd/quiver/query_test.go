package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
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
