package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
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

// TestClient_Load loads record readers in every mode: the rows arrive,
// and a reader that fails midway, or holds no rows, leaves no table.
func TestClient_Load(t *testing.T) {
	srvMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	srv := testutil.StartServer(t, server.Config{Allocator: srvMem})
	mem := testmem.CheckedWait(t)
	c := testutil.Dial(t, srv, client.Config{Allocator: mem})
	first := makeRows(mem, 0, 30000, 10000)
	second := makeRows(mem, 30000, 50000, 20000)
	t.Cleanup(func() { releaseAll(first); releaseAll(second) })
	reader := func(recs ...[]arrow.RecordBatch) array.RecordReader {
		var all []arrow.RecordBatch
		for _, r := range recs {
			all = append(all, r...)
		}
		rdr, err := array.NewRecordReader(rowsSchema, all)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rdr.Release)
		return rdr
	}
	ctx := context.Background()

	for _, comp := range []string{"", "none", "lz4", "zstd"} {
		t.Run("compression "+comp, func(t *testing.T) {
			table := "load_" + comp
			res, err := c.Load(ctx, reader(first, second), client.LoadOptions{Table: table, Mode: client.ModeCreate, Compression: comp})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if res.Rows != 50000 || res.Elapsed <= 0 {
				t.Errorf("result: got %+v, want 50000 rows", res)
			}
			if got := scalar(t, c, "SELECT count(*)::VARCHAR || '/' || count(DISTINCT id)::VARCHAR || '/' || max(id)::VARCHAR FROM "+table); got != "50000/50000/49999" {
				t.Errorf("count/distinct/max id: got %s, want 50000/50000/49999", got)
			}
			if got := scalar(t, c, fmt.Sprintf(mismatches, table)); got != "0" {
				t.Errorf("rows that differ from the batches: got %s, want 0", got)
			}
		})
	}

	modes := []struct {
		mode client.Mode
		want string // rows in load_ afterwards, or the error
	}{
		{client.ModeAppend, "70000"},
		{client.ModeCreateAppend, "90000"},
		{client.ModeReplace, "20000"},
		{client.ModeCreate, "already exists"},
	}
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			_, err := c.Load(ctx, reader(second), client.LoadOptions{Table: "load_", Mode: m.mode})
			if err != nil {
				if !strings.Contains(err.Error(), m.want) {
					t.Fatalf("load: got %v, want %s", err, m.want)
				}
				if status.Code(errors.Unwrap(err)) != codes.AlreadyExists {
					t.Errorf("code: got %v, want AlreadyExists", status.Code(errors.Unwrap(err)))
				}
				return
			}
			if got := scalar(t, c, "SELECT count(*) FROM load_"); got != m.want {
				t.Errorf("rows: got %s, want %s", got, m.want)
			}
		})
	}

	failures := []struct {
		name string
		rdr  func() array.RecordReader
		opts client.LoadOptions
		want error
	}{
		{"reader fails midway", func() array.RecordReader { return &brokenReader{RecordReader: reader(first, second), failAt: 3} }, client.LoadOptions{Table: "never", Mode: client.ModeCreate}, errSourceGone},
		{"no rows", func() array.RecordReader { return reader() }, client.LoadOptions{Table: "never", Mode: client.ModeCreate}, client.ErrNoRows},
		{"no table", func() array.RecordReader { return reader(first) }, client.LoadOptions{Mode: client.ModeCreate}, nil},
		{"bad mode", func() array.RecordReader { return reader(first) }, client.LoadOptions{Table: "never", Mode: "upsert"}, nil},
		{"bad compression", func() array.RecordReader { return reader(first) }, client.LoadOptions{Table: "never", Mode: client.ModeCreate, Compression: "gzip"}, nil},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Load(ctx, tt.rdr(), tt.opts)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("load: got %v, want %v", err, tt.want)
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
