package flightsql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	quiverflight "github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// load makes ps, prepared through another client, a prepared statement of
// c's, by its handle alone.
func load(t *testing.T, c *client.Client, ps *flightsql.PreparedStatement) *flightsql.PreparedStatement {
	t.Helper()
	res := &flightsql.CreatePreparedStatementResult{PreparedStatementHandle: ps.Handle()}
	if s := ps.DatasetSchema(); s != nil {
		res.DatasetSchema = flight.SerializeSchema(s, memory.DefaultAllocator)
	}
	if s := ps.ParameterSchema(); s != nil {
		res.ParameterSchema = flight.SerializeSchema(s, memory.DefaultAllocator)
	}
	out, err := c.SQL().LoadPreparedStatementFromResult(res)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fetchInfo fetches every endpoint of info through c and returns the rows
// as strings, "v1|v2|…", in order.
func fetchInfo(t *testing.T, c *client.Client, info *flight.FlightInfo) []string {
	t.Helper()
	var out []string
	for _, ep := range info.Endpoint {
		rows, err := tryFetchRows(c, ep.Ticket)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		out = append(out, rows...)
	}
	return out
}

func tryFetchRows(c *client.Client, tkt *flight.Ticket) ([]string, error) {
	rdr, err := c.SQL().DoGet(c.Context(context.Background()), tkt)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var vals []string
			for _, col := range rec.Columns() {
				vals = append(vals, col.ValueStr(i))
			}
			out = append(out, strings.Join(vals, "|"))
		}
	}
	return out, rdr.Err()
}

// paramBatch builds one batch of parameter rows from columns of int64 or
// string values.
func paramBatch(t *testing.T, mem memory.Allocator, cols ...any) arrow.RecordBatch {
	t.Helper()
	var fields []arrow.Field
	var arrs []arrow.Array
	for i, c := range cols {
		switch v := c.(type) {
		case []int64:
			b := array.NewInt64Builder(mem)
			b.AppendValues(v, nil)
			arrs = append(arrs, b.NewArray())
			b.Release()
			fields = append(fields, arrow.Field{Name: fmt.Sprint(i + 1), Type: arrow.PrimitiveTypes.Int64, Nullable: true})
		case []string:
			b := array.NewStringBuilder(mem)
			b.AppendValues(v, nil)
			arrs = append(arrs, b.NewArray())
			b.Release()
			fields = append(fields, arrow.Field{Name: fmt.Sprint(i + 1), Type: arrow.BinaryTypes.String, Nullable: true})
		default:
			t.Fatalf("parameter column of %T", c)
		}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(arrs[0].Len()))
	for _, a := range arrs {
		a.Release()
	}
	t.Cleanup(rec.Release)
	return rec
}

// TestReplica_PreparedOnAnotherServer checks a prepared statement created
// on one replica executes (GetFlightInfo and DoGet) on another, with and
// without bound parameters.
func TestReplica_PreparedOnAnotherServer(t *testing.T) {
	reps := startReplicas(t, 2, replicaSetup, nil)
	a, b := reps[0], reps[1]
	ctxA, ctxB := a.client.Context(context.Background()), b.client.Context(context.Background())
	mem := testmem.CheckedWait(t)

	t.Run("no parameters", func(t *testing.T) {
		ps, err := a.client.SQL().Prepare(ctxA, "SELECT id FROM small WHERE id % 2 = 0")
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close(ctxA)
		onB := load(t, b.client, ps)
		info, err := onB.Execute(ctxB)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(fetchInfo(t, b.client, info)); got != "[0 2 4 6 8]" {
			t.Errorf("rows on B: got %s, want [0 2 4 6 8]", got)
		}
		if _, err := onB.GetSchema(ctxB); err != nil {
			t.Errorf("schema on B: %v", err)
		}
		// Closing on B, where nothing is cached, is fine too.
		if err := onB.Close(ctxB); err != nil {
			t.Errorf("close on B: %v", err)
		}
	})

	t.Run("parameters bound on A", func(t *testing.T) {
		ps, err := a.client.SQL().Prepare(ctxA, "SELECT id, ? AS tag FROM small WHERE id >= ?")
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close(ctxA)
		ps.SetParameters(paramBatch(t, mem, []string{"x", "y"}, []int64{7, 8}))
		info, err := ps.Execute(ctxA)
		if err != nil {
			t.Fatal(err)
		}
		const want = "[7|x 8|x 9|x 8|y 9|y]"
		// The ticket carries the parameters: B runs it.
		if got := fmt.Sprint(fetchInfo(t, b.client, info)); got != want {
			t.Errorf("A's ticket on B: got %s, want %s", got, want)
		}
		// So does the handle DoPut returned: B executes it unbound.
		onB := load(t, b.client, ps)
		infoB, err := onB.Execute(ctxB)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(fetchInfo(t, b.client, infoB)); got != want {
			t.Errorf("A's handle executed on B: got %s, want %s", got, want)
		}
		if got := fmt.Sprint(fetchInfo(t, a.client, infoB)); got != want {
			t.Errorf("B's ticket on A: got %s, want %s", got, want)
		}
	})

	t.Run("parameters bound on B", func(t *testing.T) {
		ps, err := a.client.SQL().Prepare(ctxA, "SELECT id FROM small WHERE id < ?")
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close(ctxA)
		onB := load(t, b.client, ps)
		defer onB.Close(ctxB)
		onB.SetParameters(paramBatch(t, mem, []int64{3}))
		info, err := onB.Execute(ctxB)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(fetchInfo(t, a.client, info)); got != "[0 1 2]" {
			t.Errorf("rows on A: got %s, want [0 1 2]", got)
		}
	})

	t.Run("split with parameters", func(t *testing.T) {
		ps, err := a.client.SQL().Prepare(ctxA, "SELECT id FROM big WHERE grp = ?")
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close(ctxA)
		ps.SetParameters(paramBatch(t, mem, []int64{3}))
		info, err := ps.Execute(ctxA)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Endpoint) != 3 || len(info.Endpoint[1].Location) != 2 || info.Endpoint[1].Location[0].Uri != b.uri() {
			t.Fatalf("got %d endpoints, the second at %v; want 3, the second at B first", len(info.Endpoint), info.Endpoint[1].Location)
		}
		var all []int64
		for _, ep := range info.Endpoint {
			ids, _ := fetchIDs(t, b.client, ep.Ticket)
			all = append(all, ids...)
		}
		checkOnce(t, all, func(id int64) bool { return bigWant(id) && id%7 == 3 })
	})

	t.Run("large parameters stay on A", func(t *testing.T) {
		ps, err := a.client.SQL().Prepare(ctxA, "SELECT length(?) AS n")
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close(ctxA)
		ps.SetParameters(paramBatch(t, mem, []string{strings.Repeat("x", 2<<20)}))
		info, err := ps.Execute(ctxA)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
			t.Fatalf("got %d endpoints, the first at %v; want one without locations", len(info.Endpoint), info.Endpoint[0].Location)
		}
		if got := fmt.Sprint(fetchInfo(t, a.client, info)); got != "[2097152]" {
			t.Errorf("rows on A: got %s, want [2097152]", got)
		}
		_, err = tryFetchRows(b.client, info.Endpoint[0].Ticket)
		wantCode(t, err, codes.InvalidArgument, "none are bound")
	})

	t.Run("update on B", func(t *testing.T) {
		if _, err := a.client.Exec(ctxA, "CREATE TABLE notes (id BIGINT)"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.client.Exec(ctxB, "CREATE TABLE notes (id BIGINT)"); err != nil {
			t.Fatal(err)
		}
		ps, err := a.client.SQL().Prepare(ctxA, "INSERT INTO notes VALUES (?)")
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close(ctxA)
		onB := load(t, b.client, ps)
		defer onB.Close(ctxB)
		onB.SetParameters(paramBatch(t, mem, []int64{1, 2, 3}))
		if n, err := onB.ExecuteUpdate(ctxB); err != nil || n != 3 {
			t.Fatalf("insert on B: got %d, %v; want 3", n, err)
		}
		if _, first := queryAll(t, b.client, "SELECT count(*) FROM notes"); first[0] != "3" {
			t.Errorf("rows on B: got %s, want 3", first[0])
		}
		if _, first := queryAll(t, a.client, "SELECT count(*) FROM notes"); first[0] != "0" {
			t.Errorf("rows on A: got %s, want 0", first[0])
		}
	})
}

// preparedTicket is a DoGet ticket naming a prepared statement's handle.
func preparedTicket(t *testing.T, handle []byte) *flight.Ticket {
	t.Helper()
	cmd, err := anypb.New(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle})
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return &flight.Ticket{Ticket: b}
}

// preparedHandle encodes a handle as the server does, for forging.
func preparedHandle(t *testing.T, fields map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// forgedIDn is another well-formed id for each n.
func forgedIDn(n int) string { return fmt.Sprintf("%032x", n+1) }

// signedTicket is a statement ticket holding handle, signed with the test
// replicas' key for the anonymous user (the replicas run without
// authentication): what only a replica could make, so that what the
// server does with a malformed or hostile handle past the signature is
// tested too.
func signedTicket(t *testing.T, handle []byte) []byte {
	t.Helper()
	return mustTicket(t, quiverflight.Seal(t, replicaKey, auth.AnonymousName, false, handle))
}

// signedPrepared is handle signed as a prepared statement's handle, like
// signedTicket.
func signedPrepared(t *testing.T, handle []byte) []byte {
	t.Helper()
	return quiverflight.Seal(t, replicaKey, auth.AnonymousName, true, handle)
}

// unseal returns the handle inside a signed envelope, as JSON fields.
func unseal(t *testing.T, env []byte) map[string]any {
	t.Helper()
	var e struct {
		D json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatalf("the server's handle %q is not a signed envelope: %v", env, err)
	}
	var fields map[string]any
	if err := json.Unmarshal(e.D, &fields); err != nil {
		t.Fatalf("the handle %q is not JSON: %v", e.D, err)
	}
	return fields
}

func TestReplica_MalformedTickets(t *testing.T) {
	reps := startReplicas(t, 1, replicaSetup, nil)
	noPlanner := startReplicas(t, 1, "CREATE TABLE big AS SELECT range AS id FROM range(10)", func(_ int, o *quiverflight.Options) {
		o.Planner = nil
	})
	a := reps[0]
	tests := []struct {
		name, handle, msg string
	}{
		{"not json", `not json`, "malformed statement ticket"},
		{"empty", `{}`, "malformed statement ticket"},
		{"unknown field", `{"q":"SELECT 1","zz":1}`, "unknown field"},
		{"count and query", `{"n":1,"q":"SELECT 1"}`, "malformed statement ticket"},
		{"bad held id", `{"h":"../x"}`, "held-statement id"},
		{"script", `{"q":"SELECT 1; SELECT 2"}`, "one statement"},
		{"not a query", `{"q":"CREATE TABLE forged (a INT)"}`, "returns no rows"},
		{"unknown planner", `{"q":"SELECT * FROM big","p":{"i":7,"part":{"lo":1}}}`, "planner 7"},
		{"bad part", `{"q":"SELECT * FROM big","p":{"i":0,"part":{"lo":"x"}}}`, "part"},
		{"part of an aggregate", `{"q":"SELECT count(*) FROM big","p":{"i":0,"part":{"lo":5}}}`, "part"},
		{"part of a write", `{"q":"DELETE FROM big","p":{"i":0,"part":{"lo":5}}}`, "part"},
		{"garbage parameters", `{"q":"SELECT ? AS a","b":"bm90IGFycm93"}`, "malformed parameters"},
		{"transaction with a part", `{"q":"SELECT * FROM big","t":"x","p":{"i":0,"part":{"lo":1}}}`, "malformed statement ticket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A signed envelope holds JSON: a replica signs no other.
			if json.Valid([]byte(tt.handle)) {
				_, err := tryFetchRows(a.client, &flight.Ticket{Ticket: signedTicket(t, []byte(tt.handle))})
				wantCode(t, err, codes.InvalidArgument, tt.msg)
			}
			_, err := tryFetchRows(a.client, &flight.Ticket{Ticket: mustTicket(t, []byte(tt.handle))})
			wantCode(t, err, codes.PermissionDenied, "not one this server issued")
		})
	}
	t.Run("part on a server without a planner", func(t *testing.T) {
		_, err := tryFetchRows(noPlanner[0].client, &flight.Ticket{Ticket: signedTicket(t, []byte(`{"q":"SELECT * FROM big","p":{"i":0,"part":{"lo":1}}}`))})
		wantCode(t, err, codes.InvalidArgument, "plans no queries")
	})
	if _, first := queryAll(t, a.client, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'forged'"); first[0] != "0" {
		t.Errorf("the forged CREATE TABLE ran")
	}

	ctx := a.client.Context(context.Background())
	ps, err := a.client.SQL().Prepare(ctx, "SELECT id FROM small")
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close(ctx)
	real := unseal(t, ps.Handle())
	for _, tt := range []struct {
		name   string
		handle []byte
		msg    string
	}{
		{"not json", []byte("nope"), "malformed prepared statement handle"},
		{"short id", preparedHandle(t, map[string]any{"i": "abc", "q": "SELECT 1"}), "bad id"},
		{"no query", preparedHandle(t, map[string]any{"i": forgedIDn(1), "q": ""}), "no query"},
		{"unknown field", preparedHandle(t, map[string]any{"i": forgedIDn(2), "q": "SELECT 1", "x": 1}), "unknown field"},
		{"another statement's id", preparedHandle(t, map[string]any{"i": real["i"], "q": "SELECT 42"}), "does not match"},
		{"garbage parameters", preparedHandle(t, map[string]any{"i": forgedIDn(3), "q": "SELECT ? AS a", "b": []byte("ARROW1 not really")}), "malformed parameters"},
		{"script", preparedHandle(t, map[string]any{"i": forgedIDn(4), "q": "SELECT 1; SELECT 2"}), "script"},
	} {
		t.Run("prepared "+tt.name, func(t *testing.T) {
			if json.Valid(tt.handle) {
				h := signedPrepared(t, tt.handle)
				_, err := tryFetchRows(a.client, preparedTicket(t, h))
				wantCode(t, err, codes.InvalidArgument, tt.msg)
				// GetFlightInfo with the handle too.
				desc, err := flightDescriptor(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: h})
				if err != nil {
					t.Fatal(err)
				}
				_, err = a.client.SQL().Client.GetFlightInfo(ctx, desc)
				wantCode(t, err, codes.InvalidArgument, tt.msg)
			}
			// Unsigned, it is refused before it is read.
			_, err := tryFetchRows(a.client, preparedTicket(t, tt.handle))
			wantCode(t, err, codes.PermissionDenied, "not one this server issued")
		})
	}
}

func flightDescriptor(cmd proto.Message) (*flight.FlightDescriptor, error) {
	a, err := anypb.New(cmd)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(a)
	if err != nil {
		return nil, err
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}, nil
}

// TestReplica_ReadOnlyForgedTicket checks a read-only user cannot write by
// forging a ticket or a prepared statement's handle: unsigned, it is
// refused before its SQL is read; signed with the server's key (as if the
// user had had the write role when it was issued, or had the key), its
// SQL is still authorized like a fresh statement's.
func TestReplica_ReadOnlyForgedTicket(t *testing.T) {
	const tokenKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	srv := testutil.StartServer(t, server.Config{Security: server.Security{Users: users, TokenKey: tokenKey}})
	rawKey, err := auth.ParseKey(tokenKey)
	if err != nil {
		t.Fatal(err)
	}
	ticketKey := auth.DeriveKey(rawKey, server.TicketKeyPurpose)
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "admin-pw"})
	if _, err := admin.Exec(context.Background(), "CREATE TABLE facts AS SELECT range AS n FROM range(10)"); err != nil {
		t.Fatal(err)
	}
	reader := testutil.Dial(t, srv, client.Config{User: "reader", Password: "reader-pw"})
	ctx := reader.Context(context.Background())
	for i, sql := range []string{
		"INSERT INTO facts VALUES (11)",
		"INSERT INTO facts VALUES (12) RETURNING n",
		"DELETE FROM facts RETURNING n",
		"CREATE TABLE mine AS SELECT 1 AS a",
	} {
		t.Run(sql, func(t *testing.T) {
			h, _ := json.Marshal(map[string]string{"q": sql})
			_, err := tryFetchRows(reader, &flight.Ticket{Ticket: mustTicket(t, h)})
			wantCode(t, err, codes.PermissionDenied, "not one this server issued")
			_, err = tryFetchRows(reader, &flight.Ticket{Ticket: mustTicket(t, quiverflight.Seal(t, ticketKey, "reader", false, h))})
			wantCode(t, err, codes.PermissionDenied, "read-only")

			unsigned := preparedHandle(t, map[string]any{"i": forgedIDn(i), "q": sql})
			_, err = tryFetchRows(reader, preparedTicket(t, unsigned))
			wantCode(t, err, codes.PermissionDenied, "not one this server issued")
			ph := quiverflight.Seal(t, ticketKey, "reader", true, unsigned)
			_, err = tryFetchRows(reader, preparedTicket(t, ph))
			wantCode(t, err, codes.PermissionDenied, "read-only")
			desc, err := flightDescriptor(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: ph})
			if err != nil {
				t.Fatal(err)
			}
			_, err = reader.SQL().Client.GetFlightInfo(ctx, desc)
			wantCode(t, err, codes.PermissionDenied, "read-only")
			forged, err := reader.SQL().LoadPreparedStatementFromResult(&flightsql.CreatePreparedStatementResult{PreparedStatementHandle: ph})
			if err != nil {
				t.Fatal(err)
			}
			_, err = forged.ExecuteUpdate(ctx)
			wantCode(t, err, codes.PermissionDenied, "read-only")
		})
	}
	if _, first := queryAll(t, admin, "SELECT count(*) FROM facts"); first[0] != "10" {
		t.Errorf("rows after the forged tickets: got %s, want 10", first[0])
	}
	// A read signed for the reader runs; signed for the admin, it does
	// not.
	h, _ := json.Marshal(map[string]string{"q": "SELECT n FROM facts WHERE n < 3"})
	if rows, err := tryFetchRows(reader, &flight.Ticket{Ticket: mustTicket(t, quiverflight.Seal(t, ticketKey, "reader", false, h))}); err != nil || len(rows) != 3 {
		t.Errorf("a signed read: got %v, %v; want 3 rows", rows, err)
	}
	_, err = tryFetchRows(reader, &flight.Ticket{Ticket: mustTicket(t, quiverflight.Seal(t, ticketKey, "admin", false, h))})
	wantCode(t, err, codes.PermissionDenied, "issued to another user")
}

// TestDoPut_ForgedSchema checks an upload whose schema claims more fields
// than its bytes hold is refused, not read: arrow-go would allocate them
// all first and the process would die of it.
func TestDoPut_ForgedSchema(t *testing.T) {
	reps := startReplicas(t, 1, "", nil)
	c := reps[0].client
	ctx := c.Context(context.Background())
	ps, err := c.SQL().Prepare(ctx, "SELECT ? AS a")
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close(ctx)
	table := "t"
	for name, cmd := range map[string]proto.Message{
		"ingest":         &pb.CommandStatementIngest{Table: table},
		"bind":           &pb.CommandPreparedStatementQuery{PreparedStatementHandle: ps.Handle()},
		"prepared write": &pb.CommandPreparedStatementUpdate{PreparedStatementHandle: ps.Handle()},
	} {
		t.Run(name, func(t *testing.T) {
			desc, err := flightDescriptor(cmd)
			if err != nil {
				t.Fatal(err)
			}
			stream, err := c.SQL().Client.DoPut(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := stream.Send(&flight.FlightData{FlightDescriptor: desc, DataHeader: quiverflight.ForgedSchemaMessage(t)}); err != nil {
				t.Fatal(err)
			}
			stream.CloseSend()
			for err == nil {
				_, err = stream.Recv()
			}
			wantCode(t, err, codes.InvalidArgument, "malformed Arrow IPC metadata")
		})
	}
	if n, _ := queryAll(t, c, "SELECT 1"); n != 1 {
		t.Errorf("the server stopped answering")
	}
}
