package server_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/auth/authtest"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

var surfaceUsers = []server.UserSpec{
	{Name: "admin", Password: "adminpw", Role: auth.RoleAdmin},
	{Name: "bi", Password: "bipw", Role: auth.RoleReadOnly},
}

// TestServer_MetricsNeedLogin: /metrics answered anyone. On a server with
// users it now asks for a login of any role (Basic credentials, a bearer
// token or the console's cookie); on a server without users it refuses,
// as the console's API does, a request naming a host other than loopback
// (DNS rebinding). --metrics-addr serves it without login, for scrapers.
func TestServer_MetricsNeedLogin(t *testing.T) {
	const want = "quiver_engine_connections_open"
	open := testutil.StartServer(t, server.Config{HTTPAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0"})
	users := testutil.StartServer(t, server.Config{HTTPAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		Security: server.Security{Users: surfaceUsers}})
	bi := newConsoleClient(t, users, nil)
	bi.login("bi", "bipw")
	token := bi.token()

	type call struct {
		name string
		c    *consoleClient
		path string
		hdr  map[string]string
		code int
	}
	anon := func(srv *server.Server) *consoleClient { return newConsoleClient(t, srv, nil) }
	metricsPort := func(srv *server.Server) *consoleClient {
		c := anon(srv)
		c.base = "http://" + srv.MetricsAddr
		return c
	}
	basic := func(user, pw string) map[string]string {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(user, pw)
		return map[string]string{"Authorization": r.Header.Get("Authorization")}
	}
	for _, tc := range []call{
		{"no users, loopback", anon(open), "/metrics", nil, http.StatusOK},
		{"no users, a rebound host", anon(open), "/metrics", map[string]string{"Host": "attacker.example:9090"}, http.StatusForbidden},
		{"no users, metrics port, a rebound host", metricsPort(open), "/metrics", map[string]string{"Host": "attacker.example"}, http.StatusForbidden},
		{"no users, metrics port", metricsPort(open), "/metrics", nil, http.StatusOK},
		{"users, no login", anon(users), "/metrics", nil, http.StatusUnauthorized},
		{"users, a wrong password", anon(users), "/metrics", basic("bi", "wrong"), http.StatusUnauthorized},
		{"users, a forged token", anon(users), "/metrics", map[string]string{"Authorization": "Bearer x.y.z"}, http.StatusUnauthorized},
		{"users, Basic as readonly", anon(users), "/metrics", basic("bi", "bipw"), http.StatusOK},
		{"users, a bearer token", anon(users), "/metrics", map[string]string{"Authorization": "Bearer " + token}, http.StatusOK},
		{"users, the console's cookie", bi, "/metrics", nil, http.StatusOK},
		{"users, metrics port, no login", metricsPort(users), "/metrics", nil, http.StatusOK},
		{"users, healthz", anon(users), "/healthz", nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := tc.c.request("GET", tc.path, nil, tc.hdr)
			if code != tc.code {
				t.Fatalf("GET %s: %d %.200s, want %d", tc.path, code, body, tc.code)
			}
			switch {
			case code == http.StatusOK && tc.path == "/metrics" && !strings.Contains(string(body), want):
				t.Errorf("GET /metrics: no %s in the answer", want)
			case code != http.StatusOK && strings.Contains(string(body), want):
				t.Errorf("GET /metrics refused with %d, yet the answer holds metrics", code)
			case code == http.StatusUnauthorized && hdr.Get("WWW-Authenticate") == "":
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
}

// startTLSServer starts a server with users and TLS on every port, its
// certificate signed by ca; clientCA, when set, asks Flight's clients for
// certificates too.
func startTLSServer(t *testing.T, ca *authtest.CA, clientCA bool) *server.Server {
	t.Helper()
	cert, key := ca.WriteServerCert(t, t.TempDir())
	sec := server.Security{Users: surfaceUsers, TLSCert: cert, TLSKey: key}
	if clientCA {
		sec.TLSClientCA = ca.CertFile
	}
	return testutil.StartServer(t, server.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Security: sec})
}

// TestServer_HTTPSUnderTLS: with --tls-cert the HTTP port served plain
// HTTP, so Basic credentials and the session cookie (a bearer token Flight
// accepts too) crossed the network in clear, and the cookie had no Secure
// flag. Now the port speaks only HTTPS, with the same certificate, also
// when Flight asks for client certificates, and the cookie is Secure.
func TestServer_HTTPSUnderTLS(t *testing.T) {
	ca := authtest.NewCA(t)
	for _, clientCA := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls-client-ca=%v", clientCA), func(t *testing.T) {
			srv := startTLSServer(t, ca, clientCA)
			plain := &http.Client{Timeout: 30 * time.Second}
			resp, err := plain.Post("http://"+srv.HTTPAddr+"/api/login", "", nil)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("plain HTTP: %s, want the port to refuse it (400: an HTTP request to an HTTPS server)", resp.Status)
				}
			}
			c := newConsoleClient(t, srv, ca.Pool())
			req, _ := http.NewRequest("POST", c.base+"/api/login", nil)
			req.SetBasicAuth("bi", "bipw")
			resp, err = c.hc.Do(req)
			if err != nil {
				t.Fatalf("login over HTTPS: %v", err)
			}
			resp.Body.Close()
			var ck *http.Cookie
			for _, k := range resp.Cookies() {
				if k.Name == "quiver_session" {
					ck = k
				}
			}
			if resp.StatusCode != http.StatusOK || ck == nil || !ck.Secure || !ck.HttpOnly {
				t.Fatalf("login over HTTPS: %s, cookie %+v; want 200 and a Secure, HttpOnly cookie", resp.Status, ck)
			}
			c.login("bi", "bipw")
			if code, msg := c.exec("SELECT 1"); code != http.StatusOK {
				t.Errorf("a query over HTTPS: %d %s", code, msg)
			}
		})
	}
}

// flightWithToken runs SELECT 1 on srv's Flight port with a bearer token.
func flightWithToken(t *testing.T, srv *server.Server, token string) error {
	t.Helper()
	fc, err := flightsql.NewClient(srv.FlightAddr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = fc.Execute(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), "SELECT 1")
	return err
}

// sessionUser is who GET /api/session says the client is, or "".
func sessionUser(t *testing.T, c *consoleClient) string {
	t.Helper()
	code, b, _ := c.request("GET", "/api/session", nil, nil)
	var s struct{ User *string }
	if err := json.Unmarshal(b, &s); err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/session: %d %s, %v", code, b, err)
	}
	if s.User == nil {
		return ""
	}
	return *s.User
}

// TestConsole_LogoutRevokes: after POST /api/logout the session's token
// (the cookie, a bearer token Flight accepts too) kept working on the
// console and on Flight for the rest of its 24 hours. Now logout revokes
// it: the old cookie has no session, Flight refuses it, and so does a
// replica that shares the token key's file; the user's other session
// goes on.
func TestConsole_LogoutRevokes(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "token.key")
	start := func(http bool) *server.Server {
		cfg := server.Config{DB: filepath.Join(t.TempDir(), "q.duckdb"),
			Security: server.Security{Users: surfaceUsers, TokenKeyFile: keyFile}}
		if http {
			cfg.HTTPAddr = "127.0.0.1:0"
		}
		return testutil.StartServer(t, cfg)
	}
	a, replica := start(true), start(false)
	bi, other := newConsoleClient(t, a, nil), newConsoleClient(t, a, nil)
	bi.login("bi", "bipw")
	other.login("bi", "bipw")
	token := bi.token()
	stale := newConsoleClient(t, a, nil)
	stale.hc.Jar.SetCookies(mustURL(t, stale.base), []*http.Cookie{{Name: "quiver_session", Value: token, Path: "/"}})
	for name, srv := range map[string]*server.Server{"flight": a, "replica": replica} {
		if err := flightWithToken(t, srv, token); err != nil {
			t.Fatalf("%s with the console's token before logout: %v", name, err)
		}
	}

	if code, b := bi.post("/api/logout", nil); code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", code, b)
	}
	if u := sessionUser(t, stale); u != "" {
		t.Errorf("the old cookie after logout: a session of %q, want none", u)
	}
	if code, msg := stale.exec("SELECT 1"); code != http.StatusUnauthorized {
		t.Errorf("a query with the old cookie after logout: %d %s, want 401", code, msg)
	}
	if err := flightWithToken(t, a, token); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Flight with the token after logout: %v, want Unauthenticated", err)
	}
	// The replica reads the shared list at most a second late.
	deadline := time.Now().Add(10 * time.Second)
	for err := flightWithToken(t, replica, token); status.Code(err) != codes.Unauthenticated; err = flightWithToken(t, replica, token) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica with the token 10 s after logout: %v, want Unauthenticated", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if u := sessionUser(t, other); u != "bi" {
		t.Errorf("bi's other session after the logout: %q, want it to go on", u)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestServer_MySQLRequiresTLS: under --tls-cert MySQL offered TLS but
// took plaintext logins. Now it requires TLS unless told otherwise
// (--mysql-require-tls=false), and offers it also when Flight asks for
// client certificates, which MySQL clients seldom have.
func TestServer_MySQLRequiresTLS(t *testing.T) {
	ca := authtest.NewCA(t)
	if err := mysql.RegisterTLSConfig("surface", &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	ping := func(srv *server.Server, params string) error {
		db, err := sql.Open("mysql", "bi:bipw@tcp("+srv.MySQLAddr+")/main?"+params)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return db.Ping()
	}
	is3159 := func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 3159
	}
	for _, clientCA := range []bool{false, true} {
		srv := startTLSServer(t, ca, clientCA)
		if err := ping(srv, "tls=false"); !is3159(err) {
			t.Errorf("client CA %v: a plaintext login: %v, want error 3159", clientCA, err)
		}
		if err := ping(srv, "tls=surface"); err != nil {
			t.Errorf("client CA %v: a TLS login: %v", clientCA, err)
		}
	}
	cert, key := ca.WriteServerCert(t, t.TempDir())
	open := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", Security: server.Security{
		Users: surfaceUsers, TLSCert: cert, TLSKey: key, MySQLAllowPlaintext: true}})
	for _, params := range []string{"tls=false", "tls=surface"} {
		if err := ping(open, params); err != nil {
			t.Errorf("plaintext allowed: a login with %s: %v", params, err)
		}
	}
}

// TestServer_ConnectionLimits: with --max-connections 20, one readonly
// user held all 20 connections and the admin's login got error 1040; 25
// sockets that never logged in locked the admin out as well, until the
// handshake timeout closed them. Now a user's connections stop at
// --max-user-connections (half of what the admins' reserve of 2 leaves:
// 9), the last two slots are the admins', and sockets that have not
// logged in count in a pool of their own, whose oldest a new client
// closes: the admin, and another user, log in at once through both
// attacks, on MySQL and on Flight.
func TestServer_ConnectionLimits(t *testing.T) {
	users := append(surfaceUsers[:len(surfaceUsers):len(surfaceUsers)], server.UserSpec{Name: "etl", Password: "etlpw", Role: auth.RoleReadWrite})
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", Security: server.Security{Users: users},
		Limits: server.Limits{MaxConnections: 20, Memory: 1 << 30}})
	ctx := context.Background()
	const perUser = 9 // (20 - 2) / 2

	// victim logs in as user on the endpoint and runs a point query,
	// returning how long the login and query took.
	type endpoint struct {
		name   string
		addr   string
		victim func(user, pw string) (time.Duration, error)
		// hostile opens one connection as bi, and returns what closes it.
		hostile func() (io.Closer, error)
		// full reports whether err is the refusal for the user's limit.
		full func(err error) bool
	}
	mysqlDSN := func(user, pw string) string { return user + ":" + pw + "@tcp(" + srv.MySQLAddr + ")/main?timeout=30s" }
	biDB, err := sql.Open("mysql", mysqlDSN("bi", "bipw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { biDB.Close() })
	biDB.SetMaxIdleConns(0) // a connection given back is closed
	endpoints := []endpoint{
		{"mysql", srv.MySQLAddr, func(user, pw string) (time.Duration, error) {
			start := time.Now()
			db, err := sql.Open("mysql", mysqlDSN(user, pw))
			if err != nil {
				return 0, err
			}
			defer db.Close()
			var n int
			err = db.QueryRowContext(ctx, "SELECT 42").Scan(&n)
			return time.Since(start), err
		}, func() (io.Closer, error) {
			return biDB.Conn(ctx)
		}, func(err error) bool {
			var me *mysql.MySQLError
			return errors.As(err, &me) && me.Number == 1203 && strings.Contains(me.Message, "--max-user-connections")
		}},
		{"flight", srv.FlightAddr, func(user, pw string) (time.Duration, error) {
			start := time.Now()
			c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr, User: user, Password: pw})
			if err != nil {
				return time.Since(start), err
			}
			defer c.Close()
			_, err = testutil.CountRows(ctx, c, "SELECT 42")
			return time.Since(start), err
		}, func() (io.Closer, error) {
			c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr, User: "bi", Password: "bipw"})
			if err != nil {
				return nil, err
			}
			if _, err = testutil.CountRows(ctx, c, "SELECT 1"); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}, func(err error) bool {
			return status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "--max-user-connections")
		}},
	}
	for _, ep := range endpoints {
		t.Run(ep.name, func(t *testing.T) {
			idle, err := ep.victim("admin", "adminpw")
			if err != nil {
				t.Fatalf("the admin before any attack: %v", err)
			}
			t.Logf("%s: the admin's login and point query, idle: %v", ep.name, idle)

			// The hostile user takes every connection it can.
			var held []io.Closer
			for len(held) < 25 {
				c, err := ep.hostile()
				if err != nil {
					if !ep.full(err) {
						t.Errorf("bi's connection %d: %v, want the refusal for --max-user-connections", len(held)+1, err)
					}
					break
				}
				held = append(held, c)
			}
			if len(held) != perUser {
				t.Errorf("bi holds %d connections, want %d (--max-user-connections' default)", len(held), perUser)
			}
			for _, u := range []struct{ name, pw string }{{"admin", "adminpw"}, {"etl", "etlpw"}} {
				d, err := ep.victim(u.name, u.pw)
				t.Logf("%s: %s's login and point query while bi holds %d connections: %v (idle %v)", ep.name, u.name, len(held), d, idle)
				if err != nil {
					t.Errorf("%s while bi holds %d connections: %v", u.name, len(held), err)
				}
			}
			for _, c := range held {
				c.Close()
			}

			// Sockets that connect and say nothing.
			for range 25 {
				c, err := net.Dial("tcp", ep.addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
			}
			d, err := ep.victim("admin", "adminpw")
			t.Logf("%s: the admin's login and point query with 25 idle sockets open: %v (idle %v)", ep.name, d, idle)
			switch {
			case err != nil:
				t.Errorf("the admin with 25 idle sockets open: %v", err)
			case d >= server.DefaultHandshakeTimeout:
				t.Errorf("the admin with 25 idle sockets open took %v, as long as the handshake timeout: the sockets kept it waiting", d)
			}
		})
	}
}
