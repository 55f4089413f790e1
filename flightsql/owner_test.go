package flightsql_test

import (
	"context"
	"encoding/json"
	"fmt"
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
)

// ownerTokenKey signs the bearer tokens of the ownership tests' replicas.
var ownerTokenKey = []byte("quiver owner tests' bearer tokens")

// owners are the two replicas of an ownership test, each with a client
// per user: ann and bob have the same role, so only ownership tells their
// handles apart.
type owners struct {
	reps     []*replica
	ann, bob [2]*client.Client
}

// smallSetup is the data of the ownership tests that split nothing.
const smallSetup = "CREATE TABLE small AS SELECT range AS id FROM range(10)"

// startOwners starts two replicas loaded with setup, sharing the ticket
// key and the users ann and bob (both readwrite), authenticated like
// quiver serve: Basic credentials for a bearer token, which either
// replica accepts.
func startOwners(t *testing.T, setup string) *owners {
	t.Helper()
	reps := startReplicas(t, 2, setup, func(_ int, o *quiverflight.Options) {
		users := auth.NewStore()
		for _, name := range []string{"ann", "bob"} {
			if err := users.Add(name, name+"-pw", auth.RoleReadWrite); err != nil {
				t.Fatal(err)
			}
		}
		tokens, err := auth.NewTokens(ownerTokenKey, users)
		if err != nil {
			t.Fatal(err)
		}
		a, err := auth.NewAuthenticator(users, tokens)
		if err != nil {
			t.Fatal(err)
		}
		o.UnaryInterceptors = append(o.UnaryInterceptors, a.UnaryInterceptor())
		o.StreamInterceptors = append(o.StreamInterceptors, a.StreamInterceptor())
		o.WrapService = a.WrapFlightServer
	})
	o := &owners{reps: reps}
	for i, r := range reps {
		o.ann[i] = dialUser(t, r.addr, "ann")
		o.bob[i] = dialUser(t, r.addr, "bob")
	}
	return o
}

// dialUser connects to addr as user, whose password is user + "-pw".
func dialUser(t *testing.T, addr, user string) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), client.Config{Addr: addr, User: user, Password: user + "-pw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wantDenied checks err is PermissionDenied with msg in its message.
func wantDenied(t *testing.T, err error, msg string) {
	t.Helper()
	wantCode(t, err, codes.PermissionDenied, msg)
}

// doAction runs a Flight SQL action as c and returns its first result.
func doAction(c *client.Client, typ string, msg proto.Message) ([]byte, error) {
	a, err := anypb.New(msg)
	if err != nil {
		return nil, err
	}
	body, err := proto.Marshal(a)
	if err != nil {
		return nil, err
	}
	stream, err := c.SQL().Client.DoAction(c.Context(context.Background()), &flight.Action{Type: typ, Body: body})
	if err != nil {
		return nil, err
	}
	res, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	return res.GetBody(), nil
}

// getInfo asks c for the FlightInfo of cmd.
func getInfo(c *client.Client, cmd proto.Message) (*flight.FlightInfo, error) {
	desc, err := flightDescriptor(cmd)
	if err != nil {
		return nil, err
	}
	return c.SQL().Client.GetFlightInfo(c.Context(context.Background()), desc)
}

// TestOwner_Transaction checks a transaction is its creator's alone:
// another user who learns its id can neither run statements in it (and
// read its uncommitted rows), prepare or ingest in it, nor end it.
func TestOwner_Transaction(t *testing.T) {
	o := startOwners(t, smallSetup)
	ann, bob := o.ann[0], o.bob[0]
	ctx := ann.Context(context.Background())
	if _, err := ann.Exec(ctx, "CREATE TABLE notes (id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	txn, err := ann.SQL().BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.ExecuteUpdate(ctx, "INSERT INTO notes VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	id := []byte(txn.ID())

	t.Run("query", func(t *testing.T) {
		_, err := getInfo(bob, &pb.CommandStatementQuery{Query: "SELECT id FROM notes", TransactionId: id})
		wantDenied(t, err, "belongs to another user")
	})
	t.Run("update", func(t *testing.T) {
		desc, err := flightDescriptor(&pb.CommandStatementUpdate{Query: "DELETE FROM notes", TransactionId: id})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := bob.SQL().Client.DoPut(bob.Context(context.Background()))
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&flight.FlightData{FlightDescriptor: desc}); err != nil {
			t.Fatal(err)
		}
		stream.CloseSend()
		for err == nil {
			_, err = stream.Recv()
		}
		wantDenied(t, err, "belongs to another user")
	})
	t.Run("prepare", func(t *testing.T) {
		_, err := doAction(bob, flightsql.CreatePreparedStatementActionType,
			&pb.ActionCreatePreparedStatementRequest{Query: "SELECT id FROM notes", TransactionId: id})
		wantDenied(t, err, "belongs to another user")
	})
	t.Run("ingest", func(t *testing.T) {
		rec := paramBatch(t, memory.DefaultAllocator, []int64{7})
		rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		_, err = bob.SQL().ExecuteIngest(bob.Context(context.Background()), rdr, &flightsql.ExecuteIngestOpts{
			Table: "notes", TransactionId: id,
			TableDefinitionOptions: &pb.CommandStatementIngest_TableDefinitionOptions{
				IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_FAIL,
				IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_APPEND,
			},
		})
		wantDenied(t, err, "belongs to another user")
	})
	t.Run("end", func(t *testing.T) {
		for _, action := range []pb.ActionEndTransactionRequest_EndTransaction{
			pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT,
			pb.ActionEndTransactionRequest_END_TRANSACTION_ROLLBACK,
		} {
			_, err := doAction(bob, flightsql.EndTransactionActionType, &pb.ActionEndTransactionRequest{TransactionId: id, Action: action})
			wantDenied(t, err, "belongs to another user")
		}
	})
	// The transaction is untouched and still ann's: she sees her row,
	// commits, and then everybody does.
	info, err := txn.Execute(ctx, "SELECT id FROM notes")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(fetchInfo(t, ann, info)); got != "[42]" {
		t.Errorf("ann's rows in her transaction: got %s, want [42]", got)
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, first := queryAll(t, bob, "SELECT count(*) FROM notes"); first[0] != "1" {
		t.Errorf("rows after ann's commit: got %s, want 1", first[0])
	}
}

// TestOwner_PreparedStatement checks a prepared statement's handle works
// for its creator on any replica, and for nobody else on any: not to
// execute, describe, bind, update with or close.
func TestOwner_PreparedStatement(t *testing.T) {
	o := startOwners(t, smallSetup)
	ctxA := o.ann[0].Context(context.Background())
	ps, err := o.ann[0].SQL().Prepare(ctxA, "SELECT id FROM small WHERE id < ?")
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close(ctxA)
	mem := memory.NewGoAllocator()
	ps.SetParameters(paramBatch(t, mem, []int64{3}))
	info, err := ps.Execute(ctxA)
	if err != nil {
		t.Fatal(err)
	}
	for i := range o.reps {
		bob := o.bob[i]
		ctxB := bob.Context(context.Background())
		t.Run(fmt.Sprintf("bob on replica %d", i), func(t *testing.T) {
			onB := load(t, bob, ps)
			_, err := onB.Execute(ctxB)
			wantDenied(t, err, "issued to another user")
			_, err = onB.GetSchema(ctxB)
			wantDenied(t, err, "issued to another user")
			_, err = tryFetchRows(bob, preparedTicket(t, ps.Handle()))
			wantDenied(t, err, "issued to another user")
			onB.SetParameters(paramBatch(t, mem, []int64{9}))
			_, err = onB.Execute(ctxB)
			wantDenied(t, err, "issued to another user")
			_, err = onB.ExecuteUpdate(ctxB)
			wantDenied(t, err, "issued to another user")
			err = onB.Close(ctxB)
			wantDenied(t, err, "issued to another user")
			// The tickets of ann's execution are hers too.
			_, err = tryFetchRows(bob, info.Endpoint[0].Ticket)
			wantDenied(t, err, "issued to another user")
		})
		t.Run(fmt.Sprintf("bob with the key on replica %d", i), func(t *testing.T) {
			// Even a handle signed for bob (by someone holding the key)
			// with ann's id does not reach her statement, nor the
			// parameters bound to it: bob gets a statement of his own,
			// with none bound, and ann's stays as it was.
			fields := map[string]any{}
			if err := json.Unmarshal(envelopeData(t, ps.Handle()), &fields); err != nil {
				t.Fatal(err)
			}
			delete(fields, "b")
			forged := quiverflight.Seal(t, replicaKey, "bob", true, preparedHandle(t, fields))
			_, err := tryFetchRows(bob, preparedTicket(t, forged))
			wantCode(t, err, codes.InvalidArgument, "none are bound")
		})
		t.Run(fmt.Sprintf("ann on replica %d", i), func(t *testing.T) {
			ann := o.ann[i]
			onA := load(t, ann, ps)
			infoA, err := onA.Execute(ann.Context(context.Background()))
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(fetchInfo(t, ann, infoA)); got != "[0 1 2]" {
				t.Errorf("rows: got %s, want [0 1 2]", got)
			}
			if got := fmt.Sprint(fetchInfo(t, ann, info)); got != "[0 1 2]" {
				t.Errorf("rows of the first execution's ticket: got %s, want [0 1 2]", got)
			}
		})
	}
}

// TestOwner_HeldResult checks the result a script holds for its fetch is
// refused to another user, who can neither fetch nor cancel it, and is
// still there for its owner afterwards.
func TestOwner_HeldResult(t *testing.T) {
	o := startOwners(t, smallSetup)
	ann, bob := o.ann[0], o.bob[0]
	ctx := ann.Context(context.Background())
	info, err := ann.SQL().Execute(ctx, "CREATE TABLE made AS SELECT 5 AS a; SELECT a FROM made")
	if err != nil {
		t.Fatal(err)
	}
	tkt := info.Endpoint[0].Ticket
	_, err = tryFetchRows(bob, tkt)
	wantDenied(t, err, "issued to another user")
	_, err = bob.SQL().CancelFlightInfo(bob.Context(context.Background()), &flight.CancelFlightInfoRequest{Info: info})
	wantDenied(t, err, "issued to another user")
	// Even a ticket signed for bob (by someone holding the key) does not
	// reach ann's held result.
	forged := quiverflight.Seal(t, replicaKey, "bob", false, envelopeData(t, ticketHandle(t, tkt)))
	_, err = tryFetchRows(bob, &flight.Ticket{Ticket: mustTicket(t, forged)})
	wantDenied(t, err, "belongs to another user")
	if got := fmt.Sprint(fetchInfo(t, ann, info)); got != "[5]" {
		t.Errorf("ann's held result after bob's tries: got %s, want [5]", got)
	}
	// Fetched once, it is gone.
	_, err = tryFetchRows(ann, tkt)
	wantCode(t, err, codes.NotFound, "already fetched")
}

// TestOwner_StatementTicket checks a statement ticket, and each part
// ticket of a split result, runs for its owner on every replica and for
// no other user on any; and that a ticket altered in any way, or signed
// with another key, is refused before its SQL runs.
func TestOwner_StatementTicket(t *testing.T) {
	o := startOwners(t, replicaSetup)
	ctx := o.ann[0].Context(context.Background())
	small, err := o.ann[0].SQL().Execute(ctx, "SELECT id FROM small")
	if err != nil {
		t.Fatal(err)
	}
	split, err := o.ann[0].SQL().Execute(ctx, "SELECT id FROM big")
	if err != nil {
		t.Fatal(err)
	}
	if len(split.Endpoint) != 3 {
		t.Fatalf("big: got %d endpoints, want 3 parts", len(split.Endpoint))
	}
	ddl, err := o.ann[0].SQL().Execute(ctx, "CREATE TABLE counted AS SELECT 1 AS a")
	if err != nil {
		t.Fatal(err)
	}
	for i := range o.reps {
		t.Run(fmt.Sprintf("replica %d", i), func(t *testing.T) {
			ann, bob := o.ann[i], o.bob[i]
			_, err := tryFetchRows(bob, small.Endpoint[0].Ticket)
			wantDenied(t, err, "issued to another user")
			_, err = tryFetchRows(bob, ddl.Endpoint[0].Ticket)
			wantDenied(t, err, "issued to another user")
			var all []int64
			for j, ep := range split.Endpoint {
				_, _, err := tryFetchIDs(bob, ep.Ticket)
				wantDenied(t, err, "issued to another user")
				ids, _, err := tryFetchIDs(ann, ep.Ticket)
				if err != nil {
					t.Fatalf("ann's part %d: %v", j, err)
				}
				all = append(all, ids...)
			}
			checkOnce(t, all, bigWant)
			if got := fmt.Sprint(fetchInfo(t, ann, small)); got != "[0 1 2 3 4 5 6 7 8 9]" {
				t.Errorf("ann's ticket: got %s", got)
			}
		})
	}

	t.Run("altered", func(t *testing.T) {
		env := ticketEnvelope(t, small.Endpoint[0].Ticket)
		for name, alter := range map[string]func(e map[string]json.RawMessage){
			"other SQL":   func(e map[string]json.RawMessage) { e["d"] = json.RawMessage(`{"q":"SELECT id FROM big"}`) },
			"other user":  func(e map[string]json.RawMessage) { e["u"] = json.RawMessage(`"bob"`) },
			"no mac":      func(e map[string]json.RawMessage) { delete(e, "m") },
			"another mac": func(e map[string]json.RawMessage) { e["m"] = json.RawMessage(`"AAAA"`) },
			"more fields": func(e map[string]json.RawMessage) { e["x"] = json.RawMessage(`1`) },
		} {
			t.Run(name, func(t *testing.T) {
				e := map[string]json.RawMessage{}
				for k, v := range env {
					e[k] = v
				}
				alter(e)
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				tkt := &flight.Ticket{Ticket: mustTicket(t, b)}
				_, err = tryFetchRows(o.ann[0], tkt)
				wantDenied(t, err, "")
				_, err = tryFetchRows(o.bob[0], tkt)
				wantDenied(t, err, "")
			})
		}
	})
	t.Run("another key", func(t *testing.T) {
		h, _ := json.Marshal(map[string]string{"q": "SELECT id FROM small"})
		other := []byte("not the replicas' ticket key, 32")
		tkt := &flight.Ticket{Ticket: mustTicket(t, quiverflight.Seal(t, other, "ann", false, h))}
		_, err := tryFetchRows(o.ann[0], tkt)
		wantDenied(t, err, "signed with another key")
		// The same handle signed with the replicas' key runs.
		tkt = &flight.Ticket{Ticket: mustTicket(t, quiverflight.Seal(t, replicaKey, "ann", false, h))}
		if rows, err := tryFetchRows(o.ann[1], tkt); err != nil || len(rows) != 10 {
			t.Errorf("signed with the replicas' key: got %d rows, %v; want 10", len(rows), err)
		}
	})
}

// ticketHandle is the statement handle, a signed envelope, a statement
// ticket holds.
func ticketHandle(t *testing.T, tkt *flight.Ticket) []byte {
	t.Helper()
	var a anypb.Any
	if err := proto.Unmarshal(tkt.GetTicket(), &a); err != nil {
		t.Fatal(err)
	}
	var st pb.TicketStatementQuery
	if err := a.UnmarshalTo(&st); err != nil {
		t.Fatal(err)
	}
	return st.GetStatementHandle()
}

// ticketEnvelope is the signed envelope a statement ticket holds, as JSON
// fields.
func ticketEnvelope(t *testing.T, tkt *flight.Ticket) map[string]json.RawMessage {
	t.Helper()
	env := map[string]json.RawMessage{}
	if err := json.Unmarshal(ticketHandle(t, tkt), &env); err != nil {
		t.Fatalf("statement handle %q is not an envelope: %v", ticketHandle(t, tkt), err)
	}
	return env
}

// envelopeData is the handle JSON inside a signed envelope.
func envelopeData(t *testing.T, env []byte) []byte {
	t.Helper()
	var e struct {
		D json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(env, &e); err != nil || e.D == nil {
		t.Fatalf("%q is not a signed envelope: %v", env, err)
	}
	return e.D
}
