package server_test

import (
	"fmt"
	"net/http"
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
