package flightsql_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

func start(t *testing.T) (*server.Server, *client.Client) {
	t.Helper()
	srv := testutil.StartServer(t, server.Config{})
	return srv, testutil.Dial(t, srv, client.Config{})
}

// queryAll runs sql and returns the rows' count and the first column's
// values as strings.
func queryAll(t *testing.T, c *client.Client, sql string) (int64, []string) {
	t.Helper()
	r, err := c.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	defer r.Release()
	var n int64
	var first []string
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()) && len(first) < 10; i++ {
			first = append(first, rec.Column(0).ValueStr(i))
		}
		n += rec.NumRows()
	}
	if err := r.Err(); err != nil {
		t.Fatalf("stream %q: %v", sql, err)
	}
	return n, first
}

func wantCode(t *testing.T, err error, code codes.Code, msgPart string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Errorf("code: got %v (%v), want %v", st.Code(), err, code)
	}
	if msgPart != "" && !strings.Contains(st.Message(), msgPart) {
		t.Errorf("message: got %q, want it to contain %q", st.Message(), msgPart)
	}
}

func TestServer_StatementQuery(t *testing.T) {
	_, c := start(t)
	n, first := queryAll(t, c, "SELECT i, 'v' || i AS s FROM range(200000) t(i)")
	if n != 200000 {
		t.Errorf("rows: got %d, want 200000", n)
	}
	if first[0] != "0" || first[1] != "1" {
		t.Errorf("first values: got %v", first[:2])
	}
	// Rows of 3,000 bytes: batches are cut by bytes, not rows, and every
	// row still arrives (the stream once ended after its first batch).
	n, _ = queryAll(t, c, "SELECT i, rpad(i::VARCHAR, 3000, 'x') AS s FROM range(40000) t(i)")
	if n != 40000 {
		t.Errorf("wide rows: got %d, want 40000", n)
	}
	// A script: every statement runs, the last one's rows come back.
	n, first = queryAll(t, c, "CREATE TABLE s1 AS SELECT 41 AS a; UPDATE s1 SET a = a + 1; SELECT a FROM s1")
	if n != 1 || first[0] != "42" {
		t.Errorf("script: got %d rows %v, want [42]", n, first)
	}
}

// TestServer_DDLRunsAtExecute checks DDL takes effect when executed, even
// if the client never fetches the result.
func TestServer_DDLRunsAtExecute(t *testing.T) {
	_, c := start(t)
	ctx := c.Context(context.Background())
	if _, err := c.SQL().Execute(ctx, "CREATE TABLE ddl_now (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SQL().Execute(ctx, "INSERT INTO ddl_now VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	n, first := queryAll(t, c, "SELECT count(*) FROM ddl_now")
	if n != 1 || first[0] != "2" {
		t.Errorf("count: got %v, want 2", first)
	}
	// ExecuteUpdate returns the rows changed.
	got, err := c.Exec(context.Background(), "UPDATE ddl_now SET a = a * 10")
	if err != nil || got != 2 {
		t.Errorf("update: got %d, %v; want 2", got, err)
	}
}

func TestServer_Errors(t *testing.T) {
	_, c := start(t)
	ctx := c.Context(context.Background())
	_, err := c.SQL().Execute(ctx, "SELEC 1")
	wantCode(t, err, codes.InvalidArgument, "syntax error")
	_, err = c.SQL().Execute(ctx, "SELECT * FROM no_such_table")
	wantCode(t, err, codes.NotFound, "no_such_table")
	_, err = c.Exec(ctx, "CREATE TABLE dup (a INT); CREATE TABLE dup (a INT)")
	wantCode(t, err, codes.AlreadyExists, "already exists")
	if r, err := c.Query(ctx, "SELECT 'abc'::INTEGER"); err != nil {
		wantCode(t, err, codes.InvalidArgument, "Conversion")
	} else {
		for r.Next() {
		}
		wantCode(t, r.Err(), codes.InvalidArgument, "Conversion")
		r.Release()
	}

	// Malformed tickets, and a statement ticket the server did not sign.
	for _, tt := range []struct {
		tkt  []byte
		code codes.Code
	}{
		{[]byte("garbage"), codes.InvalidArgument},
		{nil, codes.InvalidArgument},
		{mustTicket(t, []byte("not json")), codes.PermissionDenied},
	} {
		rdr, err := c.SQL().DoGet(ctx, &flight.Ticket{Ticket: tt.tkt})
		if err == nil {
			for rdr.Next() {
			}
			err = rdr.Err()
			rdr.Release()
		}
		wantCode(t, err, tt.code, "")
	}
	// Runtime errors surface during the fetch with DuckDB's message.
	r, err := c.Query(context.Background(), "SELECT CASE WHEN i = 70000 THEN error('boom at 70000') ELSE i END FROM range(100000) t(i)")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	wantCode(t, r.Err(), codes.InvalidArgument, "boom at 70000")
	r.Release()
	// The server still answers.
	if n, _ := queryAll(t, c, "SELECT 1"); n != 1 {
		t.Errorf("after errors: got %d rows", n)
	}
}

func mustTicket(t *testing.T, handle []byte) []byte {
	t.Helper()
	b, err := flightsql.CreateStatementQueryTicket(handle)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestServer_Prepared(t *testing.T) {
	_, c := start(t)
	ctx := c.Context(context.Background())
	mem := memory.NewGoAllocator()
	if _, err := c.Exec(ctx, "CREATE TABLE p (id INTEGER, name VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	ins, err := c.SQL().Prepare(ctx, "INSERT INTO p VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close(ctx)
	if upd, ok := ins.IsUpdate(); !ok || !upd {
		t.Errorf("INSERT IsUpdate: got %v, %v; want true", upd, ok)
	}
	ps := ins.ParameterSchema()
	if ps.NumFields() != 2 || ps.Field(0).Type.ID() != arrow.INT32 || ps.Field(1).Type.ID() != arrow.STRING {
		t.Fatalf("parameter schema: got %s", ps)
	}
	// Several parameter rows in one batch.
	b := array.NewRecordBuilder(mem, ps)
	defer b.Release()
	for i, name := range []string{"a", "b", "c"} {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		b.Field(1).(*array.StringBuilder).Append(name)
	}
	params := b.NewRecordBatch()
	defer params.Release()
	ins.SetParameters(params)
	n, err := ins.ExecuteUpdate(ctx)
	if err != nil || n != 3 {
		t.Fatalf("execute update: got %d, %v; want 3", n, err)
	}

	sel, err := c.SQL().Prepare(ctx, "SELECT name FROM p WHERE id >= ? ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Close(ctx)
	if upd, ok := sel.IsUpdate(); !ok || upd {
		t.Errorf("SELECT IsUpdate: got %v, %v; want false", upd, ok)
	}
	if ds := sel.DatasetSchema(); ds == nil || ds.NumFields() != 1 || ds.Field(0).Name != "name" {
		t.Errorf("dataset schema: got %v", ds)
	}
	pbld := array.NewRecordBuilder(mem, sel.ParameterSchema())
	defer pbld.Release()
	pbld.Field(0).(*array.Int32Builder).Append(1)
	prec := pbld.NewRecordBatch()
	defer prec.Release()
	sel.SetParameters(prec)
	info, err := sel.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.String)
		for i := 0; i < col.Len(); i++ {
			got = append(got, col.Value(i))
		}
	}
	rdr.Release()
	if strings.Join(got, ",") != "b,c" {
		t.Errorf("prepared query: got %v, want [b c]", got)
	}

	// A string where an INTEGER is expected is refused with a clear error,
	// and nothing is inserted.
	bad := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "1", Type: arrow.BinaryTypes.String}, {Name: "2", Type: arrow.BinaryTypes.String}}, nil))
	defer bad.Release()
	bad.Field(0).(*array.StringBuilder).Append("not a number")
	bad.Field(1).(*array.StringBuilder).Append("x")
	brec := bad.NewRecordBatch()
	defer brec.Release()
	ins.SetParameters(brec)
	_, err = ins.ExecuteUpdate(ctx)
	wantCode(t, err, codes.InvalidArgument, "")
	if _, first := queryAll(t, c, "SELECT count(*) FROM p"); first[0] != "3" {
		t.Errorf("rows after bad parameters: got %s, want 3", first[0])
	}
	// Unknown or closed handles are refused.
	cmd, err := anypb.New(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: []byte("nope")})
	if err != nil {
		t.Fatal(err)
	}
	tkt, _ := proto.Marshal(cmd)
	rdr, err = c.SQL().DoGet(ctx, &flight.Ticket{Ticket: tkt})
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	wantCode(t, err, codes.PermissionDenied, "prepared statement")
}

func TestServer_Transactions(t *testing.T) {
	_, c := start(t)
	ctx := c.Context(context.Background())
	if _, err := c.Exec(ctx, "CREATE TABLE tx (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{false, true} {
		txn, err := c.SQL().BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := txn.ExecuteUpdate(ctx, "INSERT INTO tx VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		// Inside the transaction the row is visible; outside it is not.
		info, err := txn.Execute(ctx, "SELECT count(*) FROM tx")
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		rdr.Next()
		if got := rdr.RecordBatch().Column(0).ValueStr(0); got != "1" {
			t.Errorf("inside: got %s, want 1", got)
		}
		rdr.Release()
		if _, first := queryAll(t, c, "SELECT count(*) FROM tx"); first[0] != "0" && !commit {
			t.Errorf("outside before end: got %s, want 0", first[0])
		}
		if commit {
			err = txn.Commit(ctx)
		} else {
			err = txn.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, first := queryAll(t, c, "SELECT count(*) FROM tx"); first[0] != "1" {
		t.Errorf("after rollback then commit: got %s rows, want 1", first[0])
	}
	// A finished transaction is refused.
	txn, _ := c.SQL().BeginTransaction(ctx)
	txn.Commit(ctx)
	err := txn.Commit(ctx)
	if err == nil {
		t.Errorf("second commit: got no error")
	}
}

func TestServer_Sessions(t *testing.T) {
	_, c := start(t)
	ctx := c.Context(context.Background())
	if _, err := c.Exec(ctx, "CREATE SCHEMA analytics; CREATE TABLE analytics.events AS SELECT 7 AS v"); err != nil {
		t.Fatal(err)
	}
	schema, _ := flight.NewSessionOptionValue("analytics")
	bogus, _ := flight.NewSessionOptionValue("x")
	nope, _ := flight.NewSessionOptionValue("no_such_schema")
	res, err := c.SQL().SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{
		"schema": &schema, "bogus": &bogus,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Errors["bogus"]; e == nil || e.Value != flight.SetSessionOptionsResultErrorInvalidName {
		t.Errorf("unknown option: got %v, want INVALID_NAME", e)
	}
	res, err = c.SQL().SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{"catalog": &nope}})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Errors["catalog"]; e == nil || e.Value != flight.SetSessionOptionsResultErrorInvalidValue {
		t.Errorf("unknown catalog: got %v, want INVALID_VALUE", e)
	}
	// The session the server returns in its cookie carries the schema;
	// a call that sends the cookie back sees it, one without it starts
	// a fresh session with no options.
	for _, tc := range []struct {
		name   string
		cookie bool
		want   string
	}{
		{"with the cookie", true, "analytics"},
		{"without it", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := c.Context(context.Background())
			if tc.cookie {
				cctx, _ := testutil.SessionCookie(t, c, "schema", "analytics")
				ctx = c.Context(cctx)
			}
			got, err := c.SQL().GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var schema string
			if v := got.GetSessionOptions()["schema"]; v != nil {
				schema = v.GetStringValue()
			}
			if schema != tc.want {
				t.Errorf("schema option: got %q, want %q (options %v)", schema, tc.want, got.GetSessionOptions())
			}
		})
	}
}

// TestServer_DisconnectMidStream checks a client that goes away stops
// its query, leaks nothing, and leaves the server serving.
func TestServer_DisconnectMidStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	srv := testutil.StartServer(t, server.Config{Allocator: mem})
	c := testutil.Dial(t, srv, client.Config{})
	before := runtime.NumGoroutine()
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		r, err := c.Query(ctx, "SELECT i, i * 2, 'x' || i FROM range(1000000000) t(i)")
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3 && r.Next(); j++ {
		}
		cancel()
		for r.Next() {
		}
		if !errors.Is(r.Err(), context.Canceled) && status.Code(r.Err()) != codes.Canceled {
			t.Errorf("after cancel: got %v, want Canceled", r.Err())
		}
		r.Release()
	}
	if n, _ := queryAll(t, c, "SELECT 1"); n != 1 {
		t.Fatalf("server stopped serving")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := runtime.NumGoroutine()
		if after <= before+5 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines: %d before, %d after disconnects", before, after)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	testmem.WaitFreed(t, mem)
}

func TestServer_CancelFlightInfo(t *testing.T) {
	_, c := start(t)
	ctx := c.Context(context.Background())
	info, err := c.SQL().Execute(ctx, "SELECT i FROM range(1000000000) t(i)")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatal("no first batch")
	}
	res, err := c.SQL().CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != flight.CancelStatusCancelled {
		t.Errorf("status: got %v, want CANCELLED", res.Status)
	}
	done := make(chan struct{})
	go func() {
		for rdr.Next() {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("stream did not end after cancel")
	}
	wantCode(t, rdr.Err(), codes.Canceled, "")
	rdr.Release()
}
