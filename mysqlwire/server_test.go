package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// cutDialer records the connections go-sql-driver dials, so a test can cut
// one in the middle of a result.
type cutDialer struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (d *cutDialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.mu.Unlock()
	}
	return c, err
}

func (d *cutDialer) cutAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
}

var cutDialers sync.Map // network name -> *cutDialer

// openCuttable opens a client whose connections the test can cut.
func (ts *testServer) openCuttable(t *testing.T) (*sql.DB, *cutDialer) {
	t.Helper()
	d := &cutDialer{}
	network := fmt.Sprintf("cut%p", d)
	cutDialers.Store(network, d)
	mysql.RegisterDialContext(network, d.dial)
	db, err := sql.Open("mysql", fmt.Sprintf("u@%s(%s)/", network, ts.addr))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, d
}

func TestServer_ClientDisconnectMidResult(t *testing.T) {
	ts := startServer(t, Options{})
	other := ts.conn(t, "")
	if got := one(t, other, "SELECT 1"); got != "1" {
		t.Fatalf("warm-up: %s", got)
	}
	baseline := runtime.NumGoroutine()

	for round := range 3 {
		db, cut := ts.openCuttable(t)
		rows, err := db.Query("SELECT range, 'padding to make the rows wider' FROM range(1000000000)")
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		for i := 0; i < 1000 && rows.Next(); i++ {
		}
		cut.cutAll()
		for rows.Next() {
		}
		if rows.Err() == nil {
			t.Errorf("round %d: reading on after the cut did not fail", round)
		}
		rows.Close()
		db.Close()

		// The server keeps serving the other client meanwhile.
		if got := one(t, other, fmt.Sprintf("SELECT %d", round)); got != fmt.Sprint(round) {
			t.Errorf("other client got %s", got)
		}
	}
	waitFor(t, 10*time.Second, "cut sessions to close", func() bool { return ts.sessionCount() == 1 })
	waitFor(t, 10*time.Second, "goroutines to return to the baseline", func() bool {
		return runtime.NumGoroutine() <= baseline+2
	})
	if got := one(t, other, "SELECT count(*) FROM range(1000)"); got != "1000" {
		t.Errorf("after cuts: %s", got)
	}
}

func TestServer_Close(t *testing.T) {
	ts := startServer(t, Options{})
	idle := ts.conn(t, "")
	one(t, idle, "SELECT 1")
	busy := ts.conn(t, "")
	errc := make(chan error, 1)
	go func() {
		_, err := busy.ExecContext(context.Background(), "SELECT count(*) FROM range(1000000000000)")
		errc <- err
	}()
	waitFor(t, 5*time.Second, "the long query to start", func() bool {
		for _, s := range snapshotSessions(ts.Server) {
			if s.running() {
				return true
			}
		}
		return false
	})
	start := time.Now()
	if err := ts.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Errorf("long query succeeded across Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("long query still running after Close")
	}
	select {
	case err := <-ts.done:
		if !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve = %v, want ErrServerClosed", err)
		}
		ts.done <- err // for the cleanup's check
	case <-time.After(5 * time.Second):
		t.Fatalf("Serve did not return")
	}
	if _, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		t.Errorf("server still accepts connections after Close")
	}
	if n := ts.sessionCount(); n != 0 {
		t.Errorf("%d sessions left after Close", n)
	}
}

func TestServer_Shutdown(t *testing.T) {
	ts := startServer(t, Options{})
	idle := ts.conn(t, "")
	one(t, idle, "SELECT 1")
	streaming := ts.conn(t, "")
	rows, err := streaming.QueryContext(context.Background(), "SELECT range FROM range(200000)")
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	// Open rows hold their connection: a failure below must close them
	// before the connection's cleanup, or that cleanup waits forever.
	t.Cleanup(func() { rows.Close() })
	if !rows.Next() {
		t.Fatalf("no first row: %v", rows.Err())
	}

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- ts.Shutdown(ctx)
	}()
	waitFor(t, 15*time.Second, "the idle connection to close", func() bool { return ts.sessionCount() == 1 })

	// The result in flight is drained to the end.
	n := 1
	for rows.Next() {
		n++
		if n%50000 == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := rows.Err(); err != nil || n != 200000 {
		t.Errorf("streamed %d rows with error %v during Shutdown, want 200000 and no error", n, err)
	}
	rows.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Shutdown did not return")
	}
	if n := ts.sessionCount(); n != 0 {
		t.Errorf("%d sessions left after Shutdown", n)
	}
}

func TestServer_ConcurrentClients(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "")
	db.SetMaxOpenConns(16)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				var got int64
				if err := db.QueryRow(fmt.Sprintf("SELECT sum(range) FROM range(%d)", 1000+w*i)).Scan(&got); err != nil {
					errs <- err
					return
				}
				n := int64(1000 + w*i)
				if got != n*(n-1)/2 {
					errs <- fmt.Errorf("sum = %d, want %d", got, n*(n-1)/2)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func snapshotSessions(s *Server) []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		out = append(out, sess)
	}
	return out
}
