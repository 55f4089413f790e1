package flightsql_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// The transaction tests wait on the server's idle timeout with short real
// timeouts, not testing/synctest: the server answers over real TCP and
// runs DuckDB through cgo, and a goroutine blocked in a network read or a
// C call is not durably blocked, so a bubble's clock would never move.

// startTxnServer starts a server with users (admin, writer, reader) on a
// database file, whose checkpoints behave as a deployment's do.
func startTxnServer(t *testing.T, lim server.Limits) *server.Server {
	t.Helper()
	return testutil.StartServer(t, server.Config{
		DB:       filepath.Join(t.TempDir(), "txn.duckdb"),
		Limits:   lim,
		Security: server.Security{Users: users},
	})
}

// dialAs connects a client of its own (its own gRPC connection) as user,
// whose password is user + "-pw".
func dialAs(t *testing.T, srv *server.Server, user string) *client.Client {
	t.Helper()
	c, err := dial(t, srv, client.Config{User: user, Password: user + "-pw"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitMetric waits, at most 10 s, for the named counter to pass from.
func waitMetric(t *testing.T, name string, labels map[string]string, from float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, _ := testutil.Metric(t, name, labels); v > from {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v stayed at %v for 10s", name, labels, from)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rolledBack is how many transactions the server rolled back for why.
func rolledBack(t *testing.T, why string) float64 {
	v, _ := testutil.Metric(t, "quiver_flight_transactions_rolled_back_total", map[string]string{"why": why})
	return v
}

// ingestInTxn ingests a row in transaction id through c: a use of a
// transaction's handle by any client, not only the one that began it.
func ingestInTxn(t *testing.T, c *client.Client, id flightsql.Transaction) error {
	t.Helper()
	recs := flatBatches(memory.NewGoAllocator(), 0, 1, 1)
	defer releaseAll(recs)
	_, err := ingest(t, c, recs, &flightsql.ExecuteIngestOpts{Table: "via_handle", TransactionId: id, TableDefinitionOptions: modeCreateAppend})
	return err
}

// slowBatches is a record reader that sleeps before each batch after the
// first: an ingest that takes as long as its client wants.
type slowBatches struct {
	array.RecordReader
	pause time.Duration
	n     int
}

func (r *slowBatches) Next() bool {
	if r.n > 0 {
		time.Sleep(r.pause)
	}
	r.n++
	return r.RecordReader.Next()
}

func TestServer_TxnIdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	srv := startTxnServer(t, server.Limits{TxnIdleTimeout: idle})
	c := dialAs(t, srv, "writer")
	ctx := c.Context(context.Background())
	if _, err := c.Exec(ctx, "CREATE TABLE tx (a INTEGER)"); err != nil {
		t.Fatal(err)
	}

	t.Run("an idle transaction is rolled back and its handle refused", func(t *testing.T) {
		// Two transactions, as the client forgets a handle once it tried
		// to end it: one to commit, one to roll back.
		var txns [2]*flightsql.Txn
		for i := range txns {
			txn, err := c.SQL().BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := txn.ExecuteUpdate(ctx, "INSERT INTO tx VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			txns[i] = txn
		}
		time.Sleep(3 * idle)
		_, err := txns[0].ExecuteUpdate(ctx, "INSERT INTO tx VALUES (2)")
		wantCode(t, err, codes.FailedPrecondition, "was rolled back after 200ms without a call (--txn-idle-timeout)")
		// Nobody else learns anything of it.
		err = ingestInTxn(t, dialAs(t, srv, "admin"), txns[0].ID())
		wantCode(t, err, codes.PermissionDenied, "another user")
		err = txns[0].Commit(ctx)
		wantCode(t, err, codes.FailedPrecondition, "its changes are gone, begin a new one")
		// Rolling back what the server rolled back is no error.
		if err := txns[1].Rollback(ctx); err != nil {
			t.Errorf("rollback: got %v, want none", err)
		}
		if got := scalar(t, c, "SELECT count(*) FROM tx"); got != "0" {
			t.Errorf("rows after the rollback: got %s, want 0", got)
		}
	})

	t.Run("a result streaming keeps it", func(t *testing.T) {
		// A server of its own with a longer timeout: the server's stream
		// ends when its last batch is in gRPC's buffers, and the client
		// may take a while yet to read them (under the race detector,
		// longer than 200 ms), all of which counts as idle.
		const idle = 2 * time.Second
		srv := startTxnServer(t, server.Limits{TxnIdleTimeout: idle})
		c := dialAs(t, srv, "writer")
		ctx := c.Context(context.Background())
		if _, err := c.Exec(ctx, "CREATE TABLE tx (a INTEGER)"); err != nil {
			t.Fatal(err)
		}
		txn, err := c.SQL().BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := txn.ExecuteUpdate(ctx, "INSERT INTO tx VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		// 100 MB: more than gRPC's windows and the server's buffers
		// hold, so the server is still sending while the client waits.
		info, err := txn.Execute(ctx, "SELECT i, rpad(i::VARCHAR, 1000, 'x') AS s FROM range(100000) t(i)")
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for rdr.Next() {
			if n == 0 {
				time.Sleep(3 * idle)
			}
			n += rdr.RecordBatch().NumRows()
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil || n != 100000 {
			t.Fatalf("stream: got %d rows, %v; want 100000", n, err)
		}
		// Its idle time starts when the stream ends, not when it began.
		time.Sleep(idle / 4)
		if _, err := txn.ExecuteUpdate(ctx, "INSERT INTO tx VALUES (2)"); err != nil {
			t.Fatalf("after the stream: %v", err)
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := scalar(t, c, "SELECT count(*) FROM tx"); got != "2" {
			t.Errorf("rows after the commit: got %s, want 2", got)
		}
	})

	t.Run("a call running keeps it", func(t *testing.T) {
		txn, err := c.SQL().BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mem := testmem.CheckedWait(t)
		recs := flatBatches(mem, 0, 3, 100)
		defer releaseAll(recs)
		rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		// An ingest whose client sends a batch every two idle timeouts.
		slow := &slowBatches{RecordReader: rdr, pause: 2 * idle}
		n, err := c.SQL().ExecuteIngest(ctx, slow, &flightsql.ExecuteIngestOpts{Table: "slow", TransactionId: txn.ID(), TableDefinitionOptions: modeCreate})
		if err != nil || n != 300 {
			t.Fatalf("ingest: got %d, %v; want 300", n, err)
		}
		if err := txn.Commit(ctx); err != nil {
			t.Fatalf("commit after the ingest: %v", err)
		}
	})
}

func TestServer_TxnClientClosed(t *testing.T) {
	// An idle timeout of an hour: only the closed connection can explain a
	// rollback within the test.
	srv := startTxnServer(t, server.Limits{TxnIdleTimeout: time.Hour})
	admin := dialAs(t, srv, "admin")
	actx := admin.Context(context.Background())
	if _, err := admin.Exec(actx, "CREATE TABLE tx (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// work runs in the transaction before its client goes.
		work func(t *testing.T, ctx context.Context, txn *flightsql.Txn)
	}{
		{"after an insert", func(t *testing.T, ctx context.Context, txn *flightsql.Txn) {
			if _, err := txn.ExecuteUpdate(ctx, "INSERT INTO tx VALUES (1)"); err != nil {
				t.Fatal(err)
			}
		}},
		{"with a script's result held for its fetch", func(t *testing.T, ctx context.Context, txn *flightsql.Txn) {
			// The held last statement holds the transaction's lock until
			// fetched: it must go too, or the rollback would wait on it.
			if _, err := txn.Execute(ctx, "INSERT INTO tx VALUES (1); SELECT 1"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := dialAs(t, srv, "writer")
			ctx := w.Context(context.Background())
			txn, err := w.SQL().BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tt.work(t, ctx, txn)
			before := rolledBack(t, "connection_closed")
			w.Close()
			waitMetric(t, "quiver_flight_transactions_rolled_back_total", map[string]string{"why": "connection_closed"}, before)

			err = ingestInTxn(t, dialAs(t, srv, "writer"), txn.ID())
			wantCode(t, err, codes.FailedPrecondition, "rolled back when the client connection of its latest call closed")
			if got := scalar(t, admin, "SELECT count(*) FROM tx"); got != "0" {
				t.Errorf("rows after the rollback: got %s, want 0", got)
			}
		})
	}
}

// TestServer_TxnHoldReleased checks that every way a transaction ends,
// by its client or by the server, gives back what it is charged to the
// user's holds: the bytes held go back to where they were, and with
// --max-user-txns 1 the user may begin another. It also checks that a
// transaction follows the connection of its latest call: once another
// connection used it, the one that began it may close and the
// transaction lives on, until that other connection closes.
func TestServer_TxnHoldReleased(t *testing.T) {
	// Two servers: one whose transactions go idle within the test, and
	// one where only the client can explain a rollback.
	start := func(idle time.Duration) *server.Server {
		srv := startTxnServer(t, server.Limits{TxnIdleTimeout: idle, Holds: admit.HoldLimits{UserTxns: 1}})
		admin := dialAs(t, srv, "admin")
		if _, err := admin.Exec(admin.Context(context.Background()), "CREATE TABLE tx (a INTEGER)"); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	short, long := start(500*time.Millisecond), start(time.Hour)
	const script = "INSERT INTO tx VALUES (2); SELECT 1"
	tests := []struct {
		name string
		// end ends the transaction, which w began on srv; why is the
		// label the server counts its rollback under ("": the client
		// ended it); idle runs it on the server whose transactions go
		// idle.
		end  func(t *testing.T, srv *server.Server, w *client.Client, txn *flightsql.Txn)
		why  string
		idle bool
	}{
		{"commit", func(t *testing.T, srv *server.Server, w *client.Client, txn *flightsql.Txn) {
			if err := txn.Commit(w.Context(context.Background())); err != nil {
				t.Fatal(err)
			}
		}, "", false},
		{"rollback", func(t *testing.T, srv *server.Server, w *client.Client, txn *flightsql.Txn) {
			if err := txn.Rollback(w.Context(context.Background())); err != nil {
				t.Fatal(err)
			}
		}, "", false},
		{"idle timeout", func(*testing.T, *server.Server, *client.Client, *flightsql.Txn) {}, "idle", true},
		{"idle timeout with a script's result held", func(t *testing.T, srv *server.Server, w *client.Client, txn *flightsql.Txn) {
			if _, err := txn.Execute(w.Context(context.Background()), script); err != nil {
				t.Fatal(err)
			}
		}, "idle", true},
		{"connection closed", func(_ *testing.T, _ *server.Server, w *client.Client, _ *flightsql.Txn) { w.Close() }, "connection_closed", false},
		{"connection closed with a script's result held", func(t *testing.T, srv *server.Server, w *client.Client, txn *flightsql.Txn) {
			if _, err := txn.Execute(w.Context(context.Background()), script); err != nil {
				t.Fatal(err)
			}
			w.Close()
		}, "connection_closed", false},
		{"connection of its latest call closed", func(t *testing.T, srv *server.Server, w *client.Client, txn *flightsql.Txn) {
			other := dialAs(t, srv, "writer")
			if err := ingestInTxn(t, other, txn.ID()); err != nil {
				t.Fatal(err)
			}
			// A result w holds tells when the server saw w end.
			if _, err := w.SQL().Execute(w.Context(context.Background()), "SELECT 1; SELECT 2"); err != nil {
				t.Fatal(err)
			}
			closes, _ := testutil.Metric(t, "quiver_flight_connection_end_closes_total", nil)
			w.Close()
			waitMetric(t, "quiver_flight_connection_end_closes_total", nil, closes)
			if err := ingestInTxn(t, other, txn.ID()); err != nil {
				t.Fatalf("after the connection that began it closed: got %v, want the transaction open", err)
			}
			other.Close()
		}, "connection_closed", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := long
			if tt.idle {
				srv = short
			}
			base := srv.Holds.Bytes()
			w := dialAs(t, srv, "writer")
			ctx := w.Context(context.Background())
			txn, err := w.SQL().BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := txn.ExecuteUpdate(ctx, "INSERT INTO tx VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			if got := srv.Holds.Bytes(); got <= base {
				t.Fatalf("bytes held in the transaction: got %d, want more than %d", got, base)
			}
			var before float64
			if tt.why != "" {
				before = rolledBack(t, tt.why)
			}
			tt.end(t, srv, w, txn)
			if tt.why != "" {
				waitMetric(t, "quiver_flight_transactions_rolled_back_total", map[string]string{"why": tt.why}, before)
			}
			for deadline := time.Now().Add(10 * time.Second); srv.Holds.Bytes() != base; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("bytes held after the transaction ended: got %d for 10s, want %d", srv.Holds.Bytes(), base)
				}
			}
			next := dialAs(t, srv, "writer")
			nctx := next.Context(context.Background())
			txn2, err := next.SQL().BeginTransaction(nctx)
			if err != nil {
				t.Fatalf("a transaction after the last ended, under --max-user-txns 1: got %v, want one", err)
			}
			if err := txn2.Rollback(nctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestServer_AbandonedTxnFreeze is the freeze of an abandoned write: a
// client begins a transaction, writes (nextval, an insert) and goes away
// or idle; an admin then forces a checkpoint, which waits for that write
// to end. Other clients' reads, inserts and DDL must keep completing
// throughout, the checkpoint must run once the server rolls the write
// back, and the abandoned handle must say it was rolled back. On DuckDB's
// own wait every other statement blocked behind the checkpoint, for as
// long as the abandoned transaction stayed open.
func TestServer_AbandonedTxnFreeze(t *testing.T) {
	const idle = 2 * time.Second
	tests := []struct {
		name       string
		checkpoint string
		leave      func(w *client.Client) // how the writer abandons its transaction
		// waits is whether the checkpoint waits for the idle timeout,
		// long enough to see others go on meanwhile.
		waits   bool
		wantMsg string
	}{
		{"client closes", "SELECT * FROM force_checkpoint()", func(w *client.Client) { w.Close() }, false,
			"client connection of its latest call closed"},
		{"client goes idle", "FORCE CHECKPOINT", func(*client.Client) {}, true,
			"without a call (--txn-idle-timeout)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startTxnServer(t, server.Limits{TxnIdleTimeout: idle, QueryTimeout: 20 * time.Second})
			admin := dialAs(t, srv, "admin")
			actx := admin.Context(context.Background())
			if _, err := admin.Exec(actx, "CREATE SEQUENCE s; CREATE TABLE t (a INTEGER); CREATE TABLE abandoned (a INTEGER)"); err != nil {
				t.Fatal(err)
			}
			others := startOthers(t, srv)
			defer others.halt()
			others.await(4, time.Time{})

			w := dialAs(t, srv, "writer")
			wctx := w.Context(context.Background())
			txn, err := w.SQL().BeginTransaction(wctx)
			if err != nil {
				t.Fatal(err)
			}
			txnScalar(t, w, txn, "SELECT nextval('s')")
			if _, err := txn.ExecuteUpdate(wctx, "INSERT INTO abandoned VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			tt.leave(w)

			// A plain CHECKPOINT fails at once while the write is open,
			// or succeeds once it is gone; it never waits.
			_, _ = admin.Exec(actx, "CHECKPOINT")

			start := time.Now()
			cpDone := make(chan error, 1)
			go func() {
				_, err := testutil.CountRows(actx, admin, tt.checkpoint)
				cpDone <- err
			}()
			if tt.waits {
				// The write is rolled back only at the idle timeout, so
				// the checkpoint waits that long. From a quarter into the
				// wait to three quarters, others must go on.
				time.Sleep(idle / 4)
				from := others.done.Load()
				time.Sleep(idle / 2)
				got := others.done.Load() - from
				select {
				case err := <-cpDone:
					t.Fatalf("the checkpoint ended (%v) before the abandoned write was rolled back", err)
				default:
				}
				if got < 10 {
					t.Errorf("other statements completed in a second of the checkpoint's wait: got %d, want them to go on", got)
				}
			}
			select {
			case err := <-cpDone:
				t.Logf("checkpoint: %v after %v", err, time.Since(start).Round(time.Millisecond))
				if err != nil {
					t.Errorf("checkpoint: got %v, want success once the abandoned write is rolled back", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the checkpoint did not end in 30s")
			}
			others.await(4, time.Now().Add(10*time.Second))
			for _, err := range others.halt() {
				t.Error(err)
			}

			err = ingestInTxn(t, dialAs(t, srv, "writer"), txn.ID())
			wantCode(t, err, codes.FailedPrecondition, tt.wantMsg)
			if got := scalar(t, admin, "SELECT count(*) FROM abandoned"); got != "0" {
				t.Errorf("rows of the abandoned transaction: got %s, want 0", got)
			}
		})
	}
}

// others are clients running statements in a loop, each on a connection
// of its own, until halted: readers read, writers insert and run DDL.
type others struct {
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	done atomic.Int64 // statements completed
	mu   sync.Mutex
	errs []error // of statements that failed, each ending its client
}

func startOthers(t *testing.T, srv *server.Server) *others {
	t.Helper()
	o := &others{stop: make(chan struct{})}
	for i, user := range []string{"reader", "reader", "writer", "writer"} {
		c := dialAs(t, srv, user)
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-o.stop:
					return
				default:
				}
				sql := "SELECT count(*) FROM t"
				if user == "writer" {
					sql = fmt.Sprintf("INSERT INTO t VALUES (%d)", n)
					if n%5 == 0 {
						sql = fmt.Sprintf("CREATE TABLE ddl_%d_%d (a INTEGER)", i, n)
					}
				}
				ctx, cancel := context.WithTimeout(c.Context(context.Background()), 15*time.Second)
				_, err := testutil.CountRows(ctx, c, sql)
				cancel()
				if err != nil {
					o.mu.Lock()
					o.errs = append(o.errs, fmt.Errorf("%s: %s: %w", user, sql, err))
					o.mu.Unlock()
					return
				}
				o.done.Add(1)
			}
		}()
	}
	return o
}

// await waits for n more statements to complete, until deadline (zero:
// 10 s from now).
func (o *others) await(n int64, deadline time.Time) {
	if deadline.IsZero() {
		deadline = time.Now().Add(10 * time.Second)
	}
	for target := o.done.Load() + n; o.done.Load() < target && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// halt stops the clients and returns their errors.
func (o *others) halt() []error {
	o.once.Do(func() { close(o.stop) })
	o.wg.Wait()
	return o.errs
}
