package mysqlwire

import (
	"context"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverdata/quiver/auth"
)

// panickyUsers is a user store whose checks panic on demand: a login as
// "boom", and every Lookup (which each command makes) while lookups is set.
type panickyUsers struct {
	*auth.Store
	lookups atomic.Bool
}

func (u *panickyUsers) VerifyNativePassword(name string, salt, resp []byte) (auth.User, error) {
	if name == "boom" {
		panic("injected panic: verify")
	}
	return u.Store.VerifyNativePassword(name, salt, resp)
}

func (u *panickyUsers) Lookup(name string) (auth.User, bool) {
	if u.lookups.Load() {
		panic("injected panic: lookup")
	}
	return u.Store.Lookup(name)
}

// TestHandler_RecoversPanics: a panic in quiver's handler code costs one
// login, or one query, an error and nothing else. vitess would recover a
// login's panic itself, but by dropping the connection without a word,
// and logging it as a malformed packet: it is counted and logged as the
// handler's bug it is, and the client is told.
func TestHandler_RecoversPanics(t *testing.T) {
	users := &panickyUsers{Store: newUsers(t)}
	ts := startServer(t, Options{Users: users})

	t.Run("login", func(t *testing.T) {
		handler, protocol := testutil.ToFloat64(handlerPanics), testutil.ToFloat64(protocolPanics)
		err := ts.openAs(t, "boom", "pw", "", "").Ping()
		if got := mysqlErrNum(err); got != 1105 || !strings.Contains(err.Error(), "injected panic") {
			t.Errorf("login that panicked: got %v (number %d), want error 1105 with the panic", err, got)
		}
		if got := testutil.ToFloat64(handlerPanics); got != handler+1 {
			t.Errorf("quiver_mysql_panics_total: got %v, want %v", got, handler+1)
		}
		if got := testutil.ToFloat64(protocolPanics); got != protocol {
			t.Errorf("quiver_mysql_protocol_panics_total: got %v, want %v", got, protocol)
		}
		var n int
		if err := ts.openAs(t, "alice", "s3cret pass", "", "").QueryRow("SELECT 1").Scan(&n); err != nil || n != 1 {
			t.Errorf("next login's query: got %d, %v; want 1", n, err)
		}
	})

	t.Run("query", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := ts.openAs(t, "alice", "s3cret pass", "", "").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		handler := testutil.ToFloat64(handlerPanics)
		users.lookups.Store(true)
		_, err = conn.ExecContext(ctx, "SELECT 1")
		users.lookups.Store(false)
		if got := mysqlErrNum(err); got != 1105 || !strings.Contains(err.Error(), "injected panic") {
			t.Errorf("query that panicked: got %v (number %d), want error 1105 with the panic", err, got)
		}
		if got := testutil.ToFloat64(handlerPanics); got != handler+1 {
			t.Errorf("quiver_mysql_panics_total: got %v, want %v", got, handler+1)
		}
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT 2").Scan(&n); err != nil || n != 2 {
			t.Errorf("the connection's next query: got %d, %v; want 2", n, err)
		}
	})
}
