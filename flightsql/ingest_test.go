package flightsql_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// Ingest modes, as ADBC and quiver load name them.
var (
	modeCreate       = &flightsql.TableDefinitionOptions{IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionFail}
	modeAppend       = &flightsql.TableDefinitionOptions{IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}
	modeReplace      = &flightsql.TableDefinitionOptions{IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionReplace}
	modeCreateAppend = &flightsql.TableDefinitionOptions{IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}
)

var flatSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// flatBatches builds batches×rows rows of flatSchema, ids from base.
func flatBatches(mem memory.Allocator, base, batches, rows int) []arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, flatSchema)
	defer b.Release()
	var recs []arrow.RecordBatch
	for k := 0; k < batches; k++ {
		for i := 0; i < rows; i++ {
			id := base + k*rows + i
			b.Field(0).(*array.Int64Builder).Append(int64(id))
			if id%7 == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
			}
		}
		recs = append(recs, b.NewRecordBatch())
	}
	return recs
}

// ingest sends recs to table with the given options and IPC options.
func ingest(t *testing.T, c *client.Client, recs []arrow.RecordBatch, opts *flightsql.ExecuteIngestOpts, ipcOpts ...ipc.Option) (int64, error) {
	t.Helper()
	schema := flatSchema
	if len(recs) > 0 {
		schema = recs[0].Schema()
	}
	rdr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	ctx := c.Context(context.Background())
	return c.SQL().ExecuteIngestWithIPC(ctx, rdr, opts, ipcOpts)
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// scalar runs a one-value query and returns it as a string.
func scalar(t *testing.T, c *client.Client, sql string) string {
	t.Helper()
	_, first := queryAll(t, c, sql)
	if len(first) == 0 {
		t.Fatalf("%s: no rows", sql)
	}
	return first[0]
}

func startChecked(t *testing.T) (*server.Server, *client.Client, *memory.CheckedAllocator) {
	t.Helper()
	mem := testmem.CheckedWait(t)
	srv := testutil.StartServer(t, server.Config{Allocator: mem})
	return srv, testutil.Dial(t, srv, client.Config{}), mem
}

func TestServer_IngestModes(t *testing.T) {
	_, c, _ := startChecked(t)
	mem := testmem.CheckedWait(t)
	recs := flatBatches(mem, 0, 3, 1000)
	defer releaseAll(recs)
	// Each case starts from a table "t" holding 10 rows with columns
	// (id BIGINT, name VARCHAR, extra INTEGER), or from no table.
	tests := []struct {
		name      string
		exists    bool
		opts      *flightsql.TableDefinitionOptions
		wantCode  codes.Code
		wantMsg   string
		wantRows  string // count(*) afterwards; "" when the table must not exist
		wantWidth string // columns afterwards
	}{
		{name: "create/missing", opts: modeCreate, wantRows: "3000", wantWidth: "2"},
		{name: "create/exists", exists: true, opts: modeCreate, wantCode: codes.AlreadyExists, wantMsg: "already exists", wantRows: "10", wantWidth: "3"},
		{name: "append/missing", opts: modeAppend, wantCode: codes.NotFound, wantMsg: "does not exist"},
		{name: "replace/missing", opts: modeReplace, wantRows: "3000", wantWidth: "2"},
		{name: "replace/exists", exists: true, opts: modeReplace, wantRows: "3000", wantWidth: "2"},
		{name: "create_append/missing", opts: modeCreateAppend, wantRows: "3000", wantWidth: "2"},
		{name: "unspecified", opts: &flightsql.TableDefinitionOptions{}, wantCode: codes.InvalidArgument, wantMsg: "if_not_exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS t"); err != nil {
				t.Fatal(err)
			}
			if tt.exists {
				if _, err := c.Exec(ctx, "CREATE TABLE t AS SELECT i::BIGINT AS id, 'x' AS name, 1 AS extra FROM range(10) r(i)"); err != nil {
					t.Fatal(err)
				}
			}
			n, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: tt.opts})
			if tt.wantCode != codes.OK {
				wantCode(t, err, tt.wantCode, tt.wantMsg)
			} else if err != nil || n != 3000 {
				t.Fatalf("ingest: got %d, %v; want 3000", n, err)
			}
			exists := scalar(t, c, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 't'")
			if tt.wantRows == "" {
				if exists != "0" {
					t.Errorf("table exists after a failed ingest into a missing table")
				}
				return
			}
			if got := scalar(t, c, "SELECT count(*) FROM t"); got != tt.wantRows {
				t.Errorf("rows: got %s, want %s", got, tt.wantRows)
			}
			if got := scalar(t, c, "SELECT count(*) FROM duckdb_columns() WHERE table_name = 't'"); got != tt.wantWidth {
				t.Errorf("columns: got %s, want %s", got, tt.wantWidth)
			}
		})
	}

	t.Run("create/no rows", func(t *testing.T) {
		if _, err := c.Exec(context.Background(), "DROP TABLE IF EXISTS t"); err != nil {
			t.Fatal(err)
		}
		// arrow-go's client sends nothing for a reader without batches,
		// so send the schema alone by hand, as ADBC's C++ driver does.
		ctx := c.Context(context.Background())
		cmd, err := anypb.New(&pb.CommandStatementIngest{Table: "t", TableDefinitionOptions: modeCreate})
		if err != nil {
			t.Fatal(err)
		}
		desc, err := proto.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		stream, err := c.SQL().Client.DoPut(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := flight.NewRecordWriter(stream, ipc.WithSchema(flatSchema))
		w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: desc})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		res, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var upd pb.DoPutUpdateResult
		if err := proto.Unmarshal(res.GetAppMetadata(), &upd); err != nil || upd.GetRecordCount() != 0 {
			t.Fatalf("result: got %v, %v; want 0 rows", upd.GetRecordCount(), err)
		}
		if got := scalar(t, c, "SELECT count(*) FROM duckdb_columns() WHERE table_name = 't'"); got != "2" {
			t.Errorf("columns of the empty table: got %s, want 2", got)
		}
	})

	t.Run("append/exists", func(t *testing.T) {
		ctx := context.Background()
		if _, err := c.Exec(ctx, "CREATE OR REPLACE TABLE t (NAME VARCHAR, ID BIGINT)"); err != nil {
			t.Fatal(err)
		}
		// Columns match by name, case-insensitively, in any order.
		for _, opts := range []*flightsql.TableDefinitionOptions{modeAppend, modeCreateAppend} {
			if _, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: opts}); err != nil {
				t.Fatal(err)
			}
		}
		if got := scalar(t, c, "SELECT count(*) FROM t"); got != "6000" {
			t.Errorf("rows: got %s, want 6000", got)
		}
		if got := scalar(t, c, "SELECT name FROM t WHERE id = 5 LIMIT 1"); got != "n5" {
			t.Errorf("name of id 5: got %s, want n5", got)
		}
		if got := scalar(t, c, "SELECT count(*) FROM t WHERE name IS NULL"); got != "858" {
			t.Errorf("null names: got %s, want 858", got)
		}
	})
}

func TestServer_IngestNamespaces(t *testing.T) {
	_, c, _ := startChecked(t)
	mem := testmem.CheckedWait(t)
	recs := flatBatches(mem, 0, 1, 100)
	defer releaseAll(recs)
	ctx := context.Background()
	if _, err := c.Exec(ctx, "CREATE SCHEMA s2; ATTACH ':memory:' AS other; CREATE SCHEMA other.s3"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, catalog, schema string
		where                 string // the table's qualified name for reading
	}{
		{name: "default", where: "main.nt"},
		{name: "schema", schema: "s2", where: "s2.nt"},
		{name: "catalog", catalog: "other", where: "other.main.nt"},
		{name: "catalog and schema", catalog: "other", schema: "s3", where: "other.s3.nt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "nt", Catalog: &tt.catalog, Schema: &tt.schema, TableDefinitionOptions: modeCreate})
			if err != nil || n != 100 {
				t.Fatalf("ingest: got %d, %v; want 100", n, err)
			}
			if got := scalar(t, c, "SELECT count(*) FROM "+tt.where); got != "100" {
				t.Errorf("rows in %s: got %s, want 100", tt.where, got)
			}
		})
	}
	t.Run("temp catalog", func(t *testing.T) {
		catalog := "temp"
		_, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "nt", Catalog: &catalog, TableDefinitionOptions: modeCreate})
		wantCode(t, err, codes.InvalidArgument, "temporary")
	})
	t.Run("missing schema", func(t *testing.T) {
		schema := "nope"
		_, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "nt", Schema: &schema, TableDefinitionOptions: modeCreate})
		wantCode(t, err, codes.NotFound, "nope")
	})

	t.Run("temporary", func(t *testing.T) {
		_, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "tmp", Temporary: true, TableDefinitionOptions: modeCreate})
		wantCode(t, err, codes.InvalidArgument, "transaction")
		txn, err := c.SQL().BeginTransaction(c.Context(ctx))
		if err != nil {
			t.Fatal(err)
		}
		// A temporary table ignores catalog and schema, as the spec says.
		schema := "s2"
		n, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "tmp", Schema: &schema, Temporary: true,
			TransactionId: txn.ID(), TableDefinitionOptions: modeCreate})
		if err != nil || n != 100 {
			t.Fatalf("ingest: got %d, %v; want 100", n, err)
		}
		if got := txnScalar(t, c, txn, "SELECT count(*) FROM temp.main.tmp"); got != "100" {
			t.Errorf("rows inside the transaction: got %s, want 100", got)
		}
		if err := txn.Commit(c.Context(ctx)); err != nil {
			t.Fatal(err)
		}
		// Gone with its transaction, and not left on a pooled connection.
		for i := 0; i < 3; i++ {
			if got := scalar(t, c, "SELECT count(*) FROM duckdb_tables() WHERE temporary"); got != "0" {
				t.Errorf("temporary tables after commit: got %s, want 0", got)
			}
		}
	})
}

// txnScalar runs a one-value query inside txn.
func txnScalar(t *testing.T, c *client.Client, txn *flightsql.Txn, sql string) string {
	t.Helper()
	ctx := c.Context(context.Background())
	info, err := txn.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("%s: no rows (%v)", sql, rdr.Err())
	}
	return rdr.RecordBatch().Column(0).ValueStr(0)
}

func TestServer_IngestTransaction(t *testing.T) {
	_, c, _ := startChecked(t)
	mem := testmem.CheckedWait(t)
	recs := flatBatches(mem, 0, 2, 500)
	defer releaseAll(recs)
	ctx := c.Context(context.Background())
	for _, commit := range []bool{false, true} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			txn, err := c.SQL().BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "tx", TransactionId: txn.ID(), TableDefinitionOptions: modeCreate})
			if err != nil || n != 1000 {
				t.Fatalf("ingest: got %d, %v; want 1000", n, err)
			}
			// A second ingest in the same transaction appends.
			if _, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "tx", TransactionId: txn.ID(), TableDefinitionOptions: modeAppend}); err != nil {
				t.Fatal(err)
			}
			if got := txnScalar(t, c, txn, "SELECT count(*) FROM tx"); got != "2000" {
				t.Errorf("inside: got %s, want 2000", got)
			}
			if got := scalar(t, c, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'tx'"); got != "0" {
				t.Errorf("visible outside before the end: got %s tables, want 0", got)
			}
			if commit {
				err = txn.Commit(ctx)
			} else {
				err = txn.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			want := "0"
			if commit {
				want = "1"
			}
			if got := scalar(t, c, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'tx'"); got != want {
				t.Errorf("tables named tx after the end: got %s, want %s", got, want)
			}
		})
	}
}

func TestServer_IngestNestedTypes(t *testing.T) {
	_, c, _ := startChecked(t)
	mem := testmem.CheckedWait(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "ls", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int16, Nullable: true})), Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < 3; i++ {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		for j := 0; j <= i; j++ {
			lb.ValueBuilder().(*array.Int64Builder).Append(int64(10*i + j))
		}
		sb := b.Field(2).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
		sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprintf("s%d", i))
		mb := b.Field(3).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("k")
		mb.ItemBuilder().(*array.Float64Builder).Append(float64(i) + 0.5)
		lsb := b.Field(4).(*array.ListBuilder)
		lsb.Append(true)
		esb := lsb.ValueBuilder().(*array.StructBuilder)
		esb.Append(true)
		esb.FieldBuilder(0).(*array.Int16Builder).Append(int16(i))
		b.Field(5).AppendValueFromString(fmt.Sprintf("%d.25", i))
		b.Field(6).AppendValueFromString("2024-05-06T07:08:09Z")
	}
	b.Field(0).(*array.Int32Builder).Append(3)
	for f := 1; f < schema.NumFields(); f++ {
		b.Field(f).AppendNull()
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, opts := range []*flightsql.TableDefinitionOptions{modeCreate, modeAppend} {
		n, err := ingest(t, c, []arrow.RecordBatch{rec}, &flightsql.ExecuteIngestOpts{Table: "nested", TableDefinitionOptions: opts})
		if err != nil || n != 4 {
			t.Fatalf("ingest: got %d, %v; want 4", n, err)
		}
	}
	wantTypes := "INTEGER|BIGINT[]|STRUCT(a INTEGER, b VARCHAR)|MAP(VARCHAR, DOUBLE)|STRUCT(x SMALLINT)[]|DECIMAL(10,2)|TIMESTAMP WITH TIME ZONE"
	if got := scalar(t, c, "SELECT string_agg(data_type, '|' ORDER BY column_index) FROM duckdb_columns() WHERE table_name = 'nested'"); got != wantTypes {
		t.Errorf("column types:\n got %s\nwant %s", got, wantTypes)
	}
	_, got := queryAll(t, c, "SELECT concat_ws(' ', id, l, s, m, ls, d, strftime(ts, '%Y-%m-%d %H:%M:%S')) FROM nested WHERE rowid < 4 ORDER BY id")
	want := []string{
		"0 [0] {'a': 0, 'b': s0} {k=0.5} [{'x': 0}] 0.25 2024-05-06 07:08:09",
		"1 [10, 11] {'a': 1, 'b': s1} {k=1.5} [{'x': 1}] 1.25 2024-05-06 07:08:09",
		"2 [20, 21, 22] {'a': 2, 'b': s2} {k=2.5} [{'x': 2}] 2.25 2024-05-06 07:08:09",
		"3",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows read back:\n got %q\nwant %q", got, want)
	}
	if got := scalar(t, c, "SELECT count(*) FROM nested"); got != "8" {
		t.Errorf("rows: got %s, want 8", got)
	}
}

func TestServer_IngestMismatch(t *testing.T) {
	_, c, _ := startChecked(t)
	mem := testmem.CheckedWait(t)
	ctx := context.Background()
	if _, err := c.Exec(ctx, "CREATE TABLE mm (id INTEGER, name VARCHAR); INSERT INTO mm VALUES (1, 'one')"); err != nil {
		t.Fatal(err)
	}
	mk := func(fields []arrow.Field, fill func(b *array.RecordBuilder)) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
		defer b.Release()
		fill(b)
		return b.NewRecordBatch()
	}
	str := func(vals ...string) func(*array.StringBuilder) {
		return func(b *array.StringBuilder) { b.AppendValues(vals, nil) }
	}
	tests := []struct {
		name    string
		rec     arrow.RecordBatch
		wantMsg []string
	}{
		{
			name: "extra and missing column",
			rec: mk([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "label", Type: arrow.BinaryTypes.String}}, func(b *array.RecordBuilder) {
				b.Field(0).(*array.Int32Builder).Append(2)
				str("two")(b.Field(1).(*array.StringBuilder))
			}),
			wantMsg: []string{"not in the table: label", "missing from the stream: name"},
		},
		{
			name: "too few columns",
			rec: mk([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, func(b *array.RecordBuilder) {
				b.Field(0).(*array.Int32Builder).Append(2)
			}),
			wantMsg: []string{"1 columns do not match the table's 2", "missing from the stream: name"},
		},
		{
			name: "value that does not cast",
			rec: mk([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "name", Type: arrow.BinaryTypes.String}}, func(b *array.RecordBuilder) {
				str("2", "not a number")(b.Field(0).(*array.StringBuilder))
				str("two", "three")(b.Field(1).(*array.StringBuilder))
			}),
			wantMsg: []string{"not a number", "id (stream utf8, table INTEGER)"},
		},
		{
			name: "type that does not cast",
			rec: mk([]arrow.Field{{Name: "id", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32})}, {Name: "name", Type: arrow.BinaryTypes.String}}, func(b *array.RecordBuilder) {
				sb := b.Field(0).(*array.StructBuilder)
				sb.Append(true)
				sb.FieldBuilder(0).(*array.Int32Builder).Append(1)
				str("x")(b.Field(1).(*array.StringBuilder))
			}),
			wantMsg: []string{"cast", "id (stream struct<a: int32>, table INTEGER)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.rec.Release()
			_, err := ingest(t, c, []arrow.RecordBatch{tt.rec}, &flightsql.ExecuteIngestOpts{Table: "mm", TableDefinitionOptions: modeAppend})
			for _, m := range tt.wantMsg {
				wantCode(t, err, codes.InvalidArgument, m)
			}
			if got := scalar(t, c, "SELECT count(*) FROM mm"); got != "1" {
				t.Errorf("rows after a refused ingest: got %s, want 1", got)
			}
		})
	}
	t.Run("repeated column", func(t *testing.T) {
		rec := mk([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}, {Name: "A", Type: arrow.PrimitiveTypes.Int32}}, func(b *array.RecordBuilder) {
			b.Field(0).(*array.Int32Builder).Append(1)
			b.Field(1).(*array.Int32Builder).Append(1)
		})
		defer rec.Release()
		_, err := ingest(t, c, []arrow.RecordBatch{rec}, &flightsql.ExecuteIngestOpts{Table: "dup", TableDefinitionOptions: modeCreate})
		wantCode(t, err, codes.InvalidArgument, "appears twice")
	})
	t.Run("view", func(t *testing.T) {
		if _, err := c.Exec(ctx, "CREATE VIEW vw AS SELECT 1 AS id, 'x' AS name"); err != nil {
			t.Fatal(err)
		}
		recs := flatBatches(mem, 0, 1, 3)
		defer releaseAll(recs)
		_, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "vw", TableDefinitionOptions: modeCreateAppend})
		wantCode(t, err, codes.InvalidArgument, "view")
	})
}

// cancelingReader yields `after` batches, waits for the server to have
// received rows, then cancels the call's context, as a client that goes
// away mid-stream does.
type cancelingReader struct {
	array.RecordReader
	n, after int
	cancel   context.CancelFunc
	ctx      context.Context
	t        *testing.T
}

func (r *cancelingReader) Next() bool {
	if r.n == r.after {
		received := metricValue(r.t, "quiver_flight_ingest_received_rows_total")
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if metricValue(r.t, "quiver_flight_ingest_received_rows_total") > received {
				break
			}
		}
		r.cancel()
		<-r.ctx.Done()
		return false
	}
	r.n++
	return r.RecordReader.Next()
}

func (r *cancelingReader) Err() error {
	if r.n == r.after {
		return r.ctx.Err()
	}
	return nil
}

func TestServer_IngestClientGoesAway(t *testing.T) {
	srvMem := testmem.CheckedWait(t)
	var logs syncbuf.Buffer
	srv := testutil.StartServer(t, server.Config{Allocator: srvMem, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c := testutil.Dial(t, srv, client.Config{})
	mem := testmem.CheckedWait(t)
	// Five batches hold more than a row group, so the server has
	// regrouped and read some before the client goes away.
	recs := flatBatches(mem, 0, 8, 30000)
	defer releaseAll(recs)
	if _, err := c.Exec(context.Background(), "CREATE TABLE gone AS SELECT 1::BIGINT AS id, 'x' AS name"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		table string
		opts  *flightsql.TableDefinitionOptions
	}{
		{name: "append", table: "gone", opts: modeAppend},
		{name: "replace", table: "gone", opts: modeReplace},
		{name: "create", table: "never", opts: modeCreate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(c.Context(context.Background()))
			defer cancel()
			rdr, _ := array.NewRecordReader(flatSchema, recs)
			defer rdr.Release()
			cr := &cancelingReader{RecordReader: rdr, after: 5, cancel: cancel, ctx: ctx, t: t}
			_, err := c.SQL().ExecuteIngest(ctx, cr, &flightsql.ExecuteIngestOpts{Table: tt.table, TableDefinitionOptions: tt.opts})
			if err == nil {
				t.Fatal("ingest: got no error after the client canceled")
			}
			if !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
				t.Errorf("ingest: got %v, want Canceled", err)
			}
			// The server notices on its own time; the target must end up
			// as it was, and the server must go on serving.
			deadline := time.Now().Add(10 * time.Second)
			for {
				got := scalar(t, c, "SELECT (SELECT count(*) FROM gone)::VARCHAR || '/' || (SELECT count(*) FROM duckdb_tables() WHERE table_name = 'never')::VARCHAR")
				if got == "1/0" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("rows in gone / tables named never: got %s, want 1/0", got)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	// The server had batches in hand when the client went away.
	failedMidStream := regexp.MustCompile(`msg="ingest failed" .*rows_read=[1-9]`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := len(failedMidStream.FindAllString(logs.String(), -1))
		if got == len(tests) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("ingests that failed after reading rows: got %d, want %d; logs:\n%s", got, len(tests), logs.String())
			break
		}
	}
	// Still serving, and a good ingest works.
	n, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "gone", TableDefinitionOptions: modeAppend})
	if err != nil || n != 240000 {
		t.Fatalf("ingest after disconnects: got %d, %v; want 240000", n, err)
	}
}

func TestServer_IngestCompressed(t *testing.T) {
	_, c, _ := startChecked(t)
	mem := testmem.CheckedWait(t)
	recs := flatBatches(mem, 0, 4, 20000)
	defer releaseAll(recs)
	tests := []struct {
		name string
		opt  ipc.Option
	}{
		{"lz4", ipc.WithLZ4()},
		{"zstd", ipc.WithZstd()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := "c_" + tt.name
			n, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: modeCreate}, tt.opt, ipc.WithAllocator(mem))
			if err != nil || n != 80000 {
				t.Fatalf("ingest: got %d, %v; want 80000", n, err)
			}
			got := scalar(t, c, fmt.Sprintf("SELECT sum(id)::VARCHAR || '/' || count(name)::VARCHAR || '/' || max(name) FROM %s", table))
			if want := "3199960000/68571/n9999"; got != want {
				t.Errorf("sum(id)/count(name)/max(name): got %s, want %s", got, want)
			}
		})
	}
}

func TestServer_IngestReadOnly(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Security: server.Security{Users: []server.UserSpec{
		{Name: "admin", Password: "pw", Role: auth.RoleAdmin},
		{Name: "reader", Password: "pw", Role: auth.RoleReadOnly},
	}}})
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "pw"})
	reader := testutil.Dial(t, srv, client.Config{User: "reader", Password: "pw"})
	if _, err := admin.Exec(context.Background(), "CREATE TABLE ro AS SELECT 1::BIGINT AS id, 'x' AS name"); err != nil {
		t.Fatal(err)
	}
	mem := testmem.CheckedWait(t)
	recs := flatBatches(mem, 0, 1, 10)
	defer releaseAll(recs)
	for _, tt := range []struct {
		name, table string
		opts        *flightsql.TableDefinitionOptions
	}{
		{"create", "ro_new", modeCreate},
		{"append", "ro", modeAppend},
		{"replace", "ro", modeReplace},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ingest(t, reader, recs, &flightsql.ExecuteIngestOpts{Table: tt.table, TableDefinitionOptions: tt.opts})
			wantCode(t, err, codes.PermissionDenied, "read-only")
		})
	}
	if got := scalar(t, admin, "SELECT count(*) FROM ro"); got != "1" {
		t.Errorf("rows after refused ingests: got %s, want 1", got)
	}
	if got := scalar(t, admin, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'ro_new'"); got != "0" {
		t.Errorf("ro_new exists after a refused create")
	}
	// The read-write path still works for the admin.
	if n, err := ingest(t, admin, recs, &flightsql.ExecuteIngestOpts{Table: "ro", TableDefinitionOptions: modeAppend}); err != nil || n != 10 {
		t.Errorf("admin ingest: got %d, %v; want 10", n, err)
	}
}

// metricValue reads a counter from the default Prometheus registry.
func metricValue(t *testing.T, name string) float64 {
	v, _ := testutil.Metric(t, name, nil)
	return v
}

func TestServer_PreparedParamBatches(t *testing.T) {
	_, c, _ := startChecked(t)
	ctx := c.Context(context.Background())
	mem := testmem.CheckedWait(t)
	if _, err := c.Exec(ctx, "CREATE TABLE pb (id INTEGER PRIMARY KEY, name VARCHAR, note VARCHAR DEFAULT 'd'); "+
		"ATTACH ':memory:' AS other; CREATE TABLE other.main.pb (id INTEGER PRIMARY KEY, name VARCHAR, note VARCHAR DEFAULT 'd'); CREATE VIEW all_pb AS FROM pb UNION ALL FROM other.main.pb"); err != nil {
		t.Fatal(err)
	}
	params := func(base, rows int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "1", Type: arrow.PrimitiveTypes.Int32}, {Name: "2", Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
		defer b.Release()
		for i := base; i < base+rows; i++ {
			b.Field(0).(*array.Int32Builder).Append(int32(i))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i))
		}
		return b.NewRecordBatch()
	}
	tests := []struct {
		name         string
		sql          string
		base         int
		wantColumnar bool
		wantCode     codes.Code
	}{
		{name: "plain", sql: "INSERT INTO pb (id, name) VALUES (?, ?)", base: 0, wantColumnar: true},
		{name: "numbered", sql: "insert into main.pb(id,name) values ($1, $2);", base: 1000, wantColumnar: true},
		{name: "expression falls back", sql: "INSERT INTO pb (id, name) VALUES (?, lower(?))", base: 2000},
		{name: "other catalog falls back", sql: "INSERT INTO other.main.pb (id, name) VALUES (?, ?)", base: 3000},
		// DuckDB nests /* */: the columns are the second list.
		{name: "nested comment", sql: "INSERT INTO pb /* /* */ (name, id) -- */ (id, name)\n VALUES (?, ?)", base: 4000, wantColumnar: true},
		{name: "duplicate key is all-or-nothing", sql: "INSERT INTO pb (id, name) VALUES (?, ?)", base: 500, wantColumnar: true, wantCode: codes.AlreadyExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := scalar(t, c, "SELECT count(*) FROM all_pb")
			stmt, err := c.SQL().Prepare(ctx, tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close(ctx)
			rec := params(tt.base, 1000)
			defer rec.Release()
			stmt.SetParameters(rec)
			columnar := metricValue(t, "quiver_flight_param_batches_columnar_total")
			statements := metricValue(t, "quiver_engine_statements_total")
			n, err := stmt.ExecuteUpdate(ctx)
			gotColumnar := metricValue(t, "quiver_flight_param_batches_columnar_total") - columnar
			gotStatements := metricValue(t, "quiver_engine_statements_total") - statements
			if tt.wantCode != codes.OK {
				wantCode(t, err, tt.wantCode, "")
				if got := scalar(t, c, "SELECT count(*) FROM all_pb"); got != before {
					t.Errorf("rows after a failed batch: got %s, want %s", got, before)
				}
				return
			}
			if err != nil || n != 1000 {
				t.Fatalf("execute update: got %d, %v; want 1000", n, err)
			}
			if tt.wantColumnar {
				if gotColumnar != 1 || gotStatements > 5 {
					t.Errorf("columnar executions, statements: got %v, %v; want 1, at most 5", gotColumnar, gotStatements)
				}
			} else if gotColumnar != 0 || gotStatements < 1000 {
				t.Errorf("columnar executions, statements: got %v, %v; want 0, at least 1000", gotColumnar, gotStatements)
			}
			want := fmt.Sprintf("1000/v%d/d", tt.base+999)
			got := scalar(t, c, fmt.Sprintf("SELECT count(*)::VARCHAR || '/' || max(name ORDER BY id) || '/' || min(note) FROM all_pb WHERE id >= %d AND id < %d", tt.base, tt.base+1000))
			if got != want {
				t.Errorf("count/last name/note: got %s, want %s", got, want)
			}
		})
	}
}

func TestServer_PreparedParamBatchesInTransaction(t *testing.T) {
	_, c, _ := startChecked(t)
	ctx := c.Context(context.Background())
	mem := testmem.CheckedWait(t)
	if _, err := c.Exec(ctx, "CREATE TABLE pt (id BIGINT, name VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	recs := flatBatches(mem, 0, 2, 500)
	defer releaseAll(recs)
	for _, commit := range []bool{false, true} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			txn, err := c.SQL().BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			stmt, err := txn.Prepare(ctx, "INSERT INTO pt VALUES (?, ?)")
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close(ctx)
			rdr, _ := array.NewRecordReader(flatSchema, recs)
			defer rdr.Release()
			stmt.SetRecordReader(rdr)
			columnar := metricValue(t, "quiver_flight_param_batches_columnar_total")
			n, err := stmt.ExecuteUpdate(ctx)
			if err != nil || n != 1000 {
				t.Fatalf("execute update: got %d, %v; want 1000", n, err)
			}
			if got := metricValue(t, "quiver_flight_param_batches_columnar_total") - columnar; got != 1 {
				t.Errorf("columnar executions: got %v, want 1", got)
			}
			if got := txnScalar(t, c, txn, "SELECT count(*) FROM pt"); got != "1000" {
				t.Errorf("inside: got %s, want 1000", got)
			}
			if commit {
				err = txn.Commit(ctx)
			} else {
				err = txn.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			want := "0"
			if commit {
				want = "1000"
			}
			if got := scalar(t, c, "SELECT count(*) FROM pt"); got != want {
				t.Errorf("after the end: got %s, want %s", got, want)
			}
		})
	}
}

// TestServer_IngestConcurrent runs ingests side by side into different
// tables and the same one.
func TestServer_IngestConcurrent(t *testing.T) {
	_, c, _ := startChecked(t)
	mem := testmem.CheckedWait(t)
	recs := flatBatches(mem, 0, 2, 5000)
	defer releaseAll(recs)
	if _, err := c.Exec(context.Background(), "CREATE TABLE shared (id BIGINT, name VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: fmt.Sprintf("own%d", i), TableDefinitionOptions: modeCreate})
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "shared", TableDefinitionOptions: modeAppend})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := scalar(t, c, "SELECT count(*) FROM shared"); got != "40000" {
		t.Errorf("rows in shared: got %s, want 40000", got)
	}
}

// TestServer_DoPutMalformed sends uploads that are not Arrow: each is
// refused with a clear error, nothing is created, nothing leaks, and the
// server goes on serving.
func TestServer_DoPutMalformed(t *testing.T) {
	srvMem := testmem.CheckedWait(t)
	srv := testutil.StartServer(t, server.Config{Allocator: srvMem})
	c := testutil.Dial(t, srv, client.Config{})
	cmd, err := anypb.New(&pb.CommandStatementIngest{Table: "never", TableDefinitionOptions: modeCreate})
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := proto.Marshal(cmd)
	ingestDesc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: desc}
	// A valid schema message, to follow with a broken batch.
	var sink []*flight.FlightData
	w := flight.NewRecordWriter(sendFunc(func(fd *flight.FlightData) error {
		sink = append(sink, proto.Clone(fd).(*flight.FlightData))
		return nil
	}), ipc.WithSchema(flatSchema))
	recs := flatBatches(memory.DefaultAllocator, 0, 1, 100)
	defer releaseAll(recs)
	if err := w.Write(recs[0]); err != nil {
		t.Fatal(err)
	}
	w.Close()
	schemaMsg, batchMsg := sink[0], sink[1]

	for _, tc := range []struct {
		name string
		msgs []*flight.FlightData
		want codes.Code
	}{
		{"no message at all", nil, codes.InvalidArgument},
		{"descriptor only", []*flight.FlightData{{FlightDescriptor: ingestDesc}}, codes.InvalidArgument},
		{"header is not Arrow", []*flight.FlightData{{FlightDescriptor: ingestDesc, DataHeader: []byte("not a flatbuffer")}}, codes.InvalidArgument},
		{"batch body cut short", []*flight.FlightData{
			{FlightDescriptor: ingestDesc, DataHeader: schemaMsg.DataHeader},
			{DataHeader: batchMsg.DataHeader, DataBody: batchMsg.DataBody[:len(batchMsg.DataBody)/2]},
		}, codes.InvalidArgument},
		{"unknown command", []*flight.FlightData{{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("junk")}}}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := c.SQL().Client.DoPut(c.Context(context.Background()))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.msgs {
				if err := stream.Send(m); err != nil {
					t.Fatal(err)
				}
			}
			stream.CloseSend()
			var got error
			for got == nil {
				_, got = stream.Recv()
			}
			if status.Code(got) == codes.OK || errors.Is(got, io.EOF) {
				t.Fatalf("got %v, want an error", got)
			}
			if status.Code(got) != tc.want {
				t.Errorf("got %v, want code %v", got, tc.want)
			}
		})
	}
	if got := scalar(t, c, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'never'"); got != "0" {
		t.Errorf("tables named never: got %s, want 0", got)
	}
}

// sendFunc is a Flight data stream writer that calls itself.
type sendFunc func(*flight.FlightData) error

func (f sendFunc) Send(fd *flight.FlightData) error { return f(fd) }

// TestServer_PreparedNullParams binds parameters of Arrow's null type, as
// ADBC binds Python's None, to a prepared query and a prepared insert:
// the IPC reader gives such a column no buffers, and the parameters'
// check must take it.
func TestServer_PreparedNullParams(t *testing.T) {
	_, c, _ := startChecked(t)
	ctx := c.Context(context.Background())
	if _, err := c.Exec(ctx, "CREATE TABLE np (id INTEGER, v VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	batch := func(fields []arrow.Field, cols ...arrow.Array) arrow.RecordBatch {
		return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
	}
	for _, tc := range []struct {
		name, sql string
		params    func() arrow.RecordBatch
		query     bool
	}{
		{"query", "SELECT ? IS NULL AS v", func() arrow.RecordBatch {
			return batch([]arrow.Field{{Name: "0", Type: arrow.Null, Nullable: true}}, array.NewNull(1))
		}, true},
		{"insert", "INSERT INTO np VALUES (?, ?)", func() arrow.RecordBatch {
			b := array.NewInt32Builder(mem)
			defer b.Release()
			b.Append(7)
			id := b.NewArray()
			defer id.Release()
			return batch([]arrow.Field{{Name: "0", Type: arrow.PrimitiveTypes.Int32}, {Name: "1", Type: arrow.Null, Nullable: true}}, id, array.NewNull(1))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmt, err := c.SQL().Prepare(ctx, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close(ctx)
			rec := tc.params()
			defer rec.Release()
			stmt.SetParameters(rec)
			if !tc.query {
				if n, err := stmt.ExecuteUpdate(ctx); err != nil || n != 1 {
					t.Fatalf("insert with a null parameter: %d, %v", n, err)
				}
				if got := scalar(t, c, "SELECT count(*) FROM np WHERE id = 7 AND v IS NULL"); got != "1" {
					t.Errorf("rows with the null parameter: %s, want 1", got)
				}
				return
			}
			info, err := stmt.Execute(ctx)
			if err != nil {
				t.Fatalf("query with a null parameter: %v", err)
			}
			rdr, err := c.SQL().DoGet(ctx, info.GetEndpoint()[0].GetTicket())
			if err != nil {
				t.Fatal(err)
			}
			defer rdr.Release()
			if !rdr.Next() || rdr.RecordBatch().Column(0).ValueStr(0) != "true" {
				t.Errorf("? IS NULL: want true (%v)", rdr.Err())
			}
		})
	}
}
