package flightsql_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	quiverflight "github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/internal/testutil"
)

// panicServer is a Flight SQL server whose code a test can make panic:
// its allocator panics where the test arms it (testutil.TrapAllocator),
// and its Authorize panics once when authz is set.
type panicServer struct {
	mem    *testutil.TrapAllocator
	authz  atomic.Bool
	log    syncbuf.Buffer
	client *client.Client
}

func startPanicServer(t *testing.T) *panicServer {
	t.Helper()
	ps := &panicServer{mem: testutil.NewTrapAllocator()}
	ctx := context.Background()
	var engineLog syncbuf.Buffer
	db, err := engine.Open(ctx, engine.Options{Allocator: ps.mem, Logger: slog.New(slog.NewTextHandler(&engineLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		// Every connection a panicked call held was given back.
		if log := engineLog.String(); strings.Contains(log, "connections still open") {
			t.Errorf("engine log at close: got %q, want every connection given back", log)
		}
	})
	srv, err := quiverflight.New(db, quiverflight.Options{
		Logger: slog.New(slog.NewTextHandler(&ps.log, nil)),
		Authorize: func(context.Context, *engine.Stmt) error {
			if ps.authz.CompareAndSwap(true, false) {
				panic("injected panic: authorize")
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	ps.client = dialAddr(t, ln.Addr().String())
	return ps
}

// fetchAll reads a ticket's whole stream and returns the rows it held
// and the stream's error.
func fetchAll(ctx context.Context, c *client.Client, tkt *flight.Ticket) (int64, error) {
	rdr, err := c.SQL().DoGet(ctx, tkt)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	return n, rdr.Err()
}

// TestServer_RecoversPanics: a panic injected into the server's code,
// on the call's goroutine or on one the call started (the DoGet producer,
// a metadata stream, DuckDB pulling an upload through a cgo callback),
// costs that call an Internal error and nothing else: it is logged with
// its stack and counted, and the server goes on answering.
func TestServer_RecoversPanics(t *testing.T) {
	ps := startPanicServer(t)
	c := ps.client
	sql := c.SQL()
	const (
		getInfo = "/arrow.flight.protocol.FlightService/GetFlightInfo"
		doGet   = "/arrow.flight.protocol.FlightService/DoGet"
		doPut   = "/arrow.flight.protocol.FlightService/DoPut"
	)
	tests := []struct {
		name   string
		method string
		// call makes the call that panics; it arms the trap itself,
		// after any call that must not.
		call func(ctx context.Context) error
		// where is a function that the logged stack must show.
		where string
	}{{
		name:   "unary",
		method: getInfo,
		call: func(ctx context.Context) error {
			ps.authz.Store(true)
			_, err := sql.Execute(ctx, "SELECT 1")
			return err
		},
		where: "flightsql.(*Server).authorize",
	}, {
		// The transaction's connection is locked while a call runs on
		// it: the panicked call must unlock it, or every later call of
		// the transaction waits for good.
		name:   "unary in a transaction",
		method: getInfo,
		call: func(ctx context.Context) error {
			txn, err := sql.BeginTransaction(ctx)
			if err != nil {
				return err
			}
			ps.authz.Store(true)
			_, perr := txn.Execute(ctx, "SELECT 1")
			if _, err := txn.Execute(ctx, "SELECT 2"); err != nil {
				t.Errorf("the transaction's next call: %v", err)
			}
			if err := txn.Commit(ctx); err != nil {
				t.Errorf("commit: %v", err)
			}
			return perr
		},
		where: "flightsql.(*Server).authorize",
	}, {
		name:   "DoGet handler",
		method: doGet,
		call: func(ctx context.Context) error {
			info, err := sql.Execute(ctx, "SELECT 1")
			if err != nil {
				return err
			}
			ps.authz.Store(true)
			_, err = fetchAll(ctx, c, info.Endpoint[0].Ticket)
			return err
		},
		where: "flightsql.(*Server).doGetQuery",
	}, {
		// A billion rows: the producer is held back by flow control, so
		// the trap, armed once the first batch is in, goes off mid-stream.
		name:   "DoGet producer mid-stream",
		method: doGet,
		call: func(ctx context.Context) error {
			info, err := sql.Execute(ctx, "SELECT range AS i FROM range(1000000000)")
			if err != nil {
				return err
			}
			rdr, err := sql.DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				return err
			}
			defer rdr.Release()
			if !rdr.Next() {
				t.Fatalf("no first batch: %v", rdr.Err())
			}
			ps.mem.Arm("flightsql.drain")
			for rdr.Next() {
			}
			return rdr.Err()
		},
		where: "flightsql.drain",
	}, {
		name:   "metadata stream goroutine",
		method: doGet,
		call: func(ctx context.Context) error {
			info, err := sql.GetCatalogs(ctx)
			if err != nil {
				return err
			}
			ps.mem.Arm("flightsql.(*Server).streamQuery.func")
			_, err = fetchAll(ctx, c, info.Endpoint[0].Ticket)
			return err
		},
		where: "flightsql.(*Server).streamQuery.func",
	}, {
		// DuckDB pulls an upload's batches through cgo callbacks on its
		// own threads, where nothing outside the callback can recover.
		name:   "DoPut ingest read by DuckDB",
		method: doPut,
		call: func(ctx context.Context) error {
			recs := flatBatches(memory.NewGoAllocator(), 0, 3, 1000)
			defer releaseAll(recs)
			rdr, err := array.NewRecordReader(flatSchema, recs)
			if err != nil {
				t.Fatal(err)
			}
			defer rdr.Release()
			ps.mem.Arm("ipcx.(*GroupReader).Next")
			_, err = sql.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "ingested", TableDefinitionOptions: modeCreate})
			return err
		},
		where: "cdata.streamGetNext",
	}, {
		name:   "DoPut through arrow-go's router",
		method: doPut,
		call: func(ctx context.Context) error {
			ps.authz.Store(true)
			_, err := sql.ExecuteUpdate(ctx, "CREATE TABLE t (i INT)")
			return err
		},
		where: "flightsql.(*Server).DoPutCommandStatementUpdate",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(c.Context(context.Background()), time.Minute)
			defer cancel()
			before, _ := testutil.Metric(t, "quiver_flight_panics_total", map[string]string{"method": tt.method})
			logged := len(ps.log.String())

			err := tt.call(ctx)
			ps.mem.Disarm()
			ps.authz.Store(false)
			wantCode(t, err, codes.Internal, "stopped on a bug in the server")

			after, _ := testutil.Metric(t, "quiver_flight_panics_total", map[string]string{"method": tt.method})
			if after != before+1 {
				t.Errorf("quiver_flight_panics_total{method=%q}: got %v, want %v", tt.method, after, before+1)
			}
			log := ps.log.String()[logged:]
			if !strings.Contains(log, "recovered a panic serving a call") || !strings.Contains(log, "injected panic") {
				t.Errorf("log: got %q, want the recovered panic", log)
			}
			if !strings.Contains(log, tt.where) {
				t.Errorf("logged stack: got %q, want it to show %s", log, tt.where)
			}
			// The server goes on: the same client's next calls work.
			if n, _ := queryAll(t, c, "SELECT range FROM range(100000)"); n != 100000 {
				t.Errorf("query after the panic: got %d rows, want 100000", n)
			}
		})
	}

	t.Run("nothing left behind", func(t *testing.T) {
		// The panicked ingest rolled back; the same ingest now works.
		rows, err := testutil.CountRows(context.Background(), c, "SELECT count(*) FROM ingested")
		if err == nil {
			t.Errorf("table of the panicked ingest: got %v rows, want no table", rows)
		}
		recs := flatBatches(memory.NewGoAllocator(), 0, 3, 1000)
		defer releaseAll(recs)
		if n, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "ingested", TableDefinitionOptions: modeCreate}); err != nil || n != 3000 {
			t.Errorf("ingest after the panic: got %d, %v; want 3000", n, err)
		}
	})
}
