package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/quiverdata/quiver/engine"
)

// testServer is a Server on 127.0.0.1:0 over an in-memory database.
type testServer struct {
	*Server
	db   *engine.DB
	addr string
	done chan error // Serve's result
}

// testLogger is quiet unless MYSQLWIRE_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("MYSQLWIRE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func init() {
	// go-sql-driver logs "unexpected EOF" and the like to stderr when a
	// test cuts a connection on purpose.
	mysql.SetLogger(log{})
}

type log struct{}

func (log) Print(...any) {}

// startServer starts a server and registers its shutdown with t.
func startServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", Logger: testLogger()})
	if err != nil {
		t.Fatalf("open engine: %v", err)
	}
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	srv, err := New(db, opts)
	if err != nil {
		db.Close()
		t.Fatalf("new server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ts := &testServer{Server: srv, db: db, addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close server: %v", err)
		}
		select {
		case err := <-ts.done:
			if !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return after Close")
		}
		db.Close()
	})
	return ts
}

// dsn is a go-sql-driver DSN for the server with extra parameters
// ("parseTime=true&multiStatements=true").
func (ts *testServer) dsn(user, password, db, params string) string {
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s?timeout=5s", user, password, ts.addr, db)
	if params != "" {
		dsn += "&" + params
	}
	return dsn
}

// open returns a database/sql handle on the server, closed with t.
func (ts *testServer) open(t testing.TB, params string) *sql.DB {
	t.Helper()
	return ts.openAs(t, "u", "", "", params)
}

func (ts *testServer) openAs(t testing.TB, user, password, db, params string) *sql.DB {
	t.Helper()
	sqlDB, err := sql.Open("mysql", ts.dsn(user, password, db, params))
	if err != nil {
		t.Fatalf("open client: %v", err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	return sqlDB
}

// conn returns one client connection, so that session state holds.
func (ts *testServer) conn(t testing.TB, params string) *sql.Conn {
	t.Helper()
	c, err := ts.open(t, params).Conn(context.Background())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mysqlErrNum is the MySQL error number of err, or 0.
func mysqlErrNum(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
