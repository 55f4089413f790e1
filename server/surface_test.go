package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/auth/authtest"
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
