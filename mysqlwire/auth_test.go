package mysqlwire

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/auth/authtest"
	"github.com/quiverdata/quiver/engine"
)

// newUsers returns a store with alice (read-write) and reader (read-only).
func newUsers(t testing.TB) *auth.Store {
	t.Helper()
	users := auth.NewStore()
	if err := users.Add("alice", "s3cret pass", auth.RoleReadWrite); err != nil {
		t.Fatalf("add alice: %v", err)
	}
	if err := users.Add("reader", "readpw", auth.RoleReadOnly); err != nil {
		t.Fatalf("add reader: %v", err)
	}
	return users
}

func TestServer_Auth(t *testing.T) {
	ts := startServer(t, Options{Users: newUsers(t)})
	tests := []struct {
		name, user, password string
		want                 uint16 // 0: login succeeds
	}{
		{"right password", "alice", "s3cret pass", 0},
		{"wrong password", "alice", "wrong", 1045},
		{"no password", "alice", "", 1045},
		{"unknown user", "mallory", "s3cret pass", 1045},
		{"empty user", "", "", 1045},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := ts.openAs(t, tt.user, tt.password, "", "")
			var who string
			err := db.QueryRow("SELECT CURRENT_USER()").Scan(&who)
			if got := mysqlErrNum(err); got != tt.want {
				t.Fatalf("login error = %v (number %d), want number %d", err, got, tt.want)
			}
			if tt.want == 0 && who != tt.user+"@%" {
				t.Errorf("CURRENT_USER() = %q, want %s@%%", who, tt.user)
			}
			if tt.want != 0 && !strings.Contains(err.Error(), "Access denied") {
				t.Errorf("error %q does not say access denied", err)
			}
		})
	}
}

func TestServer_ReadOnlyRole(t *testing.T) {
	ts := startServer(t, Options{Users: newUsers(t)})
	admin := ts.openAs(t, "alice", "s3cret pass", "", "")
	if _, err := admin.Exec("CREATE TABLE ro (x INTEGER); INSERT INTO ro VALUES (1)"); err != nil {
		t.Fatalf("setup: %v", err)
	}
	reader := ts.openAs(t, "reader", "readpw", "", "")
	var n int
	if err := reader.QueryRow("SELECT count(*) FROM ro").Scan(&n); err != nil || n != 1 {
		t.Fatalf("reader SELECT = %d, %v", n, err)
	}
	for _, stmt := range []string{"INSERT INTO ro VALUES (2)", "CREATE TABLE ro2 (x INTEGER)", "DELETE FROM ro", "DROP TABLE ro"} {
		_, err := reader.Exec(stmt)
		if got := mysqlErrNum(err); got != 1227 {
			t.Errorf("reader %s: %v, want error 1227", stmt, err)
		}
	}
	if _, err := reader.Exec("INSERT INTO ro VALUES (?)", 3); mysqlErrNum(err) != 1227 {
		t.Errorf("reader prepared INSERT: %v, want error 1227", err)
	}
	var ro int
	if err := reader.QueryRow("SELECT @@read_only").Scan(&ro); err != nil || ro != 1 {
		t.Errorf("reader @@read_only = %d, %v; want 1", ro, err)
	}
	if err := admin.QueryRow("SELECT count(*) FROM ro").Scan(&n); err != nil || n != 1 {
		t.Errorf("rows after refused writes = %d, %v; want 1", n, err)
	}
}

func TestServer_ServeRefusesOpenListenerWithoutUsers(t *testing.T) {
	db, err := engine.Open(context.Background(), engine.Options{Path: ":memory:", Logger: testLogger()})
	if err != nil {
		t.Fatalf("open engine: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := New(db, Options{Logger: testLogger()})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen on all interfaces: %v", err)
	}
	err = srv.Serve(ln)
	if err == nil || errors.Is(err, ErrServerClosed) || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("Serve on %s without users = %v, want a loopback error", ln.Addr(), err)
	}
}

func TestServer_HandshakeTimeout(t *testing.T) {
	ts := startServer(t, Options{HandshakeTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	// Read the greeting, then say nothing: the server must hang up.
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	start := time.Now()
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("server kept a silent connection open for 5 s")
			}
			break
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("server hung up after %v, want about 200ms", d)
	}
	waitFor(t, 5*time.Second, "the session to go", func() bool { return ts.sessionCount() == 0 })
}

func TestServer_TLS(t *testing.T) {
	ca := authtest.NewCA(t)
	certFile, keyFile := ca.WriteServerCert(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("load certificate: %v", err)
	}
	ts := startServer(t, Options{Users: newUsers(t), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	if err := mysqldriver.RegisterTLSConfig("mysqlwire-test", &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatalf("register TLS config: %v", err)
	}
	db := ts.openAs(t, "alice", "s3cret pass", "", "tls=mysqlwire-test")
	var ssl string
	if err := db.QueryRow("SELECT @@have_ssl").Scan(&ssl); err != nil || ssl != "YES" {
		t.Errorf("@@have_ssl over TLS = %q, %v; want YES", ssl, err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM range(100000)").Scan(&n); err != nil || n != 100000 {
		t.Errorf("query over TLS = %d, %v", n, err)
	}
}

// TestServer_UserChangesReachOpenSessions checks an open connection follows
// its user's role as the store changes it, and that a removed user's
// connection can run nothing more.
func TestServer_UserChangesReachOpenSessions(t *testing.T) {
	users := newUsers(t)
	ts := startServer(t, Options{Users: users})
	admin := ts.openAs(t, "alice", "s3cret pass", "", "")
	if _, err := admin.Exec("CREATE TABLE rc (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	reader := ts.openAs(t, "reader", "readpw", "", "")
	reader.SetMaxOpenConns(1)
	if _, err := reader.Exec("INSERT INTO rc VALUES (1)"); mysqlErrNum(err) != 1227 {
		t.Fatalf("reader INSERT: %v, want 1227", err)
	}
	if err := users.SetRole("reader", auth.RoleReadWrite); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec("INSERT INTO rc VALUES (2)"); err != nil {
		t.Errorf("INSERT after the role became readwrite: %v", err)
	}
	if err := users.SetRole("reader", auth.RoleReadOnly); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec("INSERT INTO rc VALUES (3)"); mysqlErrNum(err) != 1227 {
		t.Errorf("INSERT after the role went back to readonly: %v, want 1227", err)
	}
	if err := users.Delete("reader"); err != nil {
		t.Fatal(err)
	}
	var n int
	err := reader.QueryRow("SELECT count(*) FROM rc").Scan(&n)
	if mysqlErrNum(err) != 1045 {
		t.Errorf("SELECT after the user was removed: %v, want 1045", err)
	}
	if err := admin.QueryRow("SELECT count(*) FROM rc").Scan(&n); err != nil || n != 1 {
		t.Errorf("rows: %d, %v; want 1", n, err)
	}
}

// TestServer_RequireTLS: a server with TLS offered it but did not require
// it, so mysql --skip-ssl logged in and queried in clear. With RequireTLS
// a plaintext login is refused with error 3159 before its password is
// checked, from the Go driver and from the mysql CLI, and a TLS login
// still works.
func TestServer_RequireTLS(t *testing.T) {
	ca := authtest.NewCA(t)
	certFile, keyFile := ca.WriteServerCert(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("load certificate: %v", err)
	}
	ts := startServer(t, Options{Users: newUsers(t), RequireTLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	if err := mysqldriver.RegisterTLSConfig("mysqlwire-require", &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatalf("register TLS config: %v", err)
	}
	t.Run("go driver", func(t *testing.T) {
		for _, pw := range []string{"s3cret pass", "wrong"} {
			err := ts.openAs(t, "alice", pw, "", "tls=false").Ping()
			var me *mysqldriver.MySQLError
			if !errors.As(err, &me) || me.Number != 3159 || !strings.Contains(me.Message, "--mysql-require-tls") {
				t.Errorf("a plaintext login (password %q): %v, want error 3159 naming --mysql-require-tls", pw, err)
			}
		}
		var n int
		if err := ts.openAs(t, "alice", "s3cret pass", "", "tls=mysqlwire-require").QueryRow("SELECT 42").Scan(&n); err != nil || n != 42 {
			t.Errorf("a TLS login: %d, %v", n, err)
		}
	})
	t.Run("mysql CLI", func(t *testing.T) {
		out, stderr, err := mysqlCLI(t, ts, "alice", "s3cret pass", "--skip-ssl", "-e", "SELECT 'leaked'")
		if err == nil || strings.Contains(out, "leaked") || !strings.Contains(stderr, "3159") {
			t.Errorf("mysql --skip-ssl: %v, out %q, stderr %q; want ERROR 3159", err, out, stderr)
		}
		out, stderr, err = mysqlCLI(t, ts, "alice", "s3cret pass", "--ssl", "--ssl-ca="+ca.CertFile, "-e", "SELECT CURRENT_USER()")
		if err != nil || out != "CURRENT_USER()\nalice@%\n" {
			t.Errorf("mysql --ssl: %q, %v, %s", out, err, stderr)
		}
	})
	if _, err := New(ts.db, Options{RequireTLS: true}); err == nil {
		t.Error("RequireTLS without a TLS configuration: got no error")
	}
}
