package server_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// longQuery keeps DuckDB busy for minutes without producing a row, so it
// holds its run slot until it is canceled. DuckDB's plan puts it in the
// bulk lane (it reads 10^11 rows).
const longQuery = "SELECT count(*) FROM range(100000000000)"

// waitStats waits until cond holds for the server's admission counts.
func waitStats(t *testing.T, srv *server.Server, what string, cond func(admit.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(srv.Admission.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: admission stats %+v", what, srv.Admission.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mysqlDB(t *testing.T, srv *server.Server, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", "root@tcp("+srv.MySQLAddr+")/"+params)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestServer_Admission fills the bulk lane with a long query and checks
// that another bulk query is refused after the queue timeout, over
// Flight (RESOURCE_EXHAUSTED) and MySQL (error 1040), each with a
// message that says what to do, while small queries still run at once;
// and that canceling the long query frees its slot.
func TestServer_Admission(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0",
		Limits: server.Limits{MaxRunning: 2, QueueTimeout: 300 * time.Millisecond, Memory: 1 << 30}})
	if c := srv.Admission.Config(); c.Running != 2 || c.Reserved != 1 {
		t.Fatalf("admission config %+v, want 2 running, 1 reserved for small queries", c)
	}
	c := testutil.Dial(t, srv, client.Config{})
	ctx := context.Background()
	if _, err := c.Exec(ctx, "CREATE TABLE pts AS SELECT range AS id, 'v' || range AS v FROM range(100000)"); err != nil {
		t.Fatal(err)
	}
	longCtx, cancelLong := context.WithCancel(ctx)
	longDone := make(chan error, 1)
	go func() {
		_, err := testutil.CountRows(longCtx, c, longQuery)
		longDone <- err
	}()
	waitStats(t, srv, "the long query to run", func(s admit.Stats) bool { return s.Running[admit.Bulk] == 1 })
	my := mysqlDB(t, srv, "")

	t.Run("bulk over Flight waits, then RESOURCE_EXHAUSTED", func(t *testing.T) {
		start := time.Now()
		_, err := testutil.CountRows(ctx, c, "SELECT * FROM range(50000000)")
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("got %v, want RESOURCE_EXHAUSTED", err)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Errorf("refused after %v, before the queue timeout", waited)
		}
		for _, want := range []string{"server busy", "queue timeout", "--max-running"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
	})
	t.Run("bulk over MySQL waits, then error 1040", func(t *testing.T) {
		var n int64
		err := my.QueryRow("SELECT count(*) FROM range(99999999999)").Scan(&n)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1040 || !strings.Contains(me.Message, "server busy") {
			t.Fatalf("got %v, want error 1040 saying the server is busy", err)
		}
	})
	t.Run("small queries run at once", func(t *testing.T) {
		for _, q := range []string{"SELECT 42", "SELECT v FROM pts WHERE id = 7", "SELECT count(*) FROM pts"} {
			if n, err := testutil.CountRows(ctx, c, q); err != nil || n != 1 {
				t.Errorf("Flight %s: %d rows, %v", q, n, err)
			}
			var v string
			if err := my.QueryRow(q).Scan(&v); err != nil {
				t.Errorf("MySQL %s: %v", q, err)
			}
		}
	})
	cancelLong()
	if err := <-longDone; status.Code(err) != codes.Canceled {
		t.Errorf("canceled long query: %v, want CANCELED", err)
	}
	waitStats(t, srv, "the long query's slot to come back", func(s admit.Stats) bool { return s.Running == [2]int{} && s.Open == [2]int{} })
	t.Run("bulk runs once the slot is free", func(t *testing.T) {
		if n, err := testutil.CountRows(ctx, c, "SELECT * FROM range(300000)"); err != nil || n != 300000 {
			t.Fatalf("got %d rows, %v", n, err)
		}
	})
}

// TestServer_SlowReaderHoldsNoRunSlot checks that a client that stops
// reading a large result gives its run slot back (its result stays open,
// bounded by the pipeline), so another bulk query runs meanwhile.
func TestServer_SlowReaderHoldsNoRunSlot(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0",
		Limits: server.Limits{MaxRunning: 2, QueueTimeout: 5 * time.Second, Memory: 1 << 30}})
	c := testutil.Dial(t, srv, client.Config{})
	ctx := context.Background()
	const big = "SELECT range AS id, repeat('x', 200) AS pad FROM range(20000000)"

	for _, proto := range []string{"flight", "mysql"} {
		t.Run(proto, func(t *testing.T) {
			sctx, stop := context.WithCancel(ctx)
			defer stop()
			switch proto {
			case "flight":
				r, err := c.Query(sctx, big)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Release()
				if !r.Next() { // one batch, then no more reading
					t.Fatal(r.Err())
				}
			case "mysql":
				my := mysqlDB(t, srv, "")
				rows, err := my.QueryContext(sctx, big)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				if !rows.Next() {
					t.Fatal(rows.Err())
				}
			}
			waitStats(t, srv, "the stalled result to pause", func(s admit.Stats) bool {
				return s.Open[admit.Bulk] == 1 && s.Running[admit.Bulk] == 0
			})
			if n, err := testutil.CountRows(ctx, c, "SELECT * FROM range(2000000)"); err != nil || n != 2000000 {
				t.Fatalf("bulk query beside a stalled reader: %d rows, %v", n, err)
			}
			stop()
		})
		waitStats(t, srv, "the stalled result to close", func(s admit.Stats) bool { return s.Open == [2]int{} })
	}
}

// TestServer_QueryTimeout checks the server's --query-timeout, Flight's
// query_timeout session option and MySQL's max_execution_time: each
// cancels a statement that runs longer, with an error that names it.
func TestServer_QueryTimeout(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0",
		Limits: server.Limits{QueryTimeout: 5 * time.Second, Memory: 1 << 30}})
	c := testutil.Dial(t, srv, client.Config{})
	ctx := context.Background()

	t.Run("Flight session option", func(t *testing.T) {
		sctx, res := testutil.SessionCookie(t, c, "query_timeout", "300ms")
		if len(res.Errors) > 0 {
			t.Fatalf("query_timeout refused: %v", res.Errors)
		}
		start := time.Now()
		_, err := testutil.CountRows(sctx, c, longQuery)
		if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "query_timeout") {
			t.Fatalf("got %v, want DEADLINE_EXCEEDED naming query_timeout", err)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("canceled after %v, want about 300ms", took)
		}
		// An update too.
		_, err = c.SQL().ExecuteUpdate(c.Context(sctx), "CREATE TABLE slow AS "+longQuery)
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("CREATE TABLE AS: got %v, want DEADLINE_EXCEEDED", err)
		}
	})
	t.Run("the header's cookie carries the option", func(t *testing.T) {
		// Clients that read cookies from headers only (Arrow Java) must
		// see the session as the call left it, not as it began.
		v, err := flight.NewSessionOptionValue("300ms")
		if err != nil {
			t.Fatal(err)
		}
		var header metadata.MD
		req := &flight.SetSessionOptionsRequest{SessionOptions: map[string]*flight.SessionOptionValue{"query_timeout": &v}}
		if _, err := c.SQL().SetSessionOptions(c.Context(ctx), req, grpc.Header(&header)); err != nil {
			t.Fatal(err)
		}
		cookies := header.Get("set-cookie")
		if len(cookies) == 0 {
			t.Fatal("no session cookie in the header")
		}
		kv, _, _ := strings.Cut(cookies[len(cookies)-1], ";")
		hctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "cookie", kv), 4*time.Second)
		defer cancel()
		if _, err := testutil.CountRows(hctx, c, longQuery); status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "query_timeout") {
			t.Fatalf("with the header's cookie: %v, want the session's query_timeout", err)
		}
	})
	t.Run("bad session option", func(t *testing.T) {
		_, res := testutil.SessionCookie(t, c, "query_timeout", "soon")
		if len(res.Errors) != 1 {
			t.Errorf("query_timeout=soon accepted: %v", res)
		}
	})
	t.Run("server default", func(t *testing.T) {
		start := time.Now()
		_, err := testutil.CountRows(ctx, c, longQuery)
		if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "--query-timeout") {
			t.Fatalf("got %v, want DEADLINE_EXCEEDED naming --query-timeout", err)
		}
		if took := time.Since(start); took < 5*time.Second {
			t.Errorf("canceled after %v, before the 5s timeout", took)
		}
	})
	t.Run("MySQL max_execution_time", func(t *testing.T) {
		my := mysqlDB(t, srv, "")
		conn, err := my.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SET max_execution_time = 300"); err != nil {
			t.Fatal(err)
		}
		var n int64
		err = conn.QueryRowContext(ctx, longQuery).Scan(&n)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 3024 || !strings.Contains(me.Message, "max_execution_time") {
			t.Fatalf("got %v, want error 3024 naming max_execution_time", err)
		}
		// The session goes on.
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
			t.Fatalf("after the timeout: %d, %v", n, err)
		}
	})
}

// TestServer_MaxConnections checks that MySQL logins past
// --max-connections get error 1040, and Flight logins past it
// RESOURCE_EXHAUSTED, while the connections already open keep working.
func TestServer_MaxConnections(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0",
		Limits: server.Limits{MaxConnections: 2, Memory: 1 << 30}})
	ctx := context.Background()
	var conns []*sql.Conn
	my := mysqlDB(t, srv, "")
	for range 2 {
		conn, err := my.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	other := mysqlDB(t, srv, "")
	err := other.PingContext(ctx)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1040 || !strings.Contains(me.Message, "--max-connections") {
		t.Fatalf("a third MySQL login: %v, want error 1040 naming --max-connections", err)
	}
	for i, conn := range conns {
		if err := conn.PingContext(ctx); err != nil {
			t.Errorf("connection %d after the refusal: %v", i, err)
		}
	}

	var flights []*client.Client
	for range 2 {
		c := testutil.Dial(t, srv, client.Config{})
		if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		flights = append(flights, c)
	}
	third := testutil.Dial(t, srv, client.Config{})
	if _, err := third.Exec(ctx, "SELECT 1"); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "--max-connections") {
		t.Errorf("a third Flight connection: %v, want RESOURCE_EXHAUSTED naming --max-connections", err)
	}
	for i, c := range flights {
		if _, err := c.Exec(ctx, fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Errorf("Flight connection %d after the refusal: %v", i, err)
		}
	}
}
