package server_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"
	"time"

	"github.com/quiverdata/quiver/server"
)

// consoleClient is a browser's view of a server's HTTP port: a cookie jar,
// the CSRF token of its session, and the scheme the port speaks.
type consoleClient struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

// newConsoleClient talks to srv's HTTP port over plain HTTP, or over
// HTTPS trusting roots when roots is not nil.
func newConsoleClient(t *testing.T, srv *server.Server, roots *x509.CertPool) *consoleClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &consoleClient{t: t, base: "http://" + srv.HTTPAddr, hc: &http.Client{Jar: jar, Timeout: time.Minute}}
	if roots != nil {
		c.base = "https://" + srv.HTTPAddr
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		c.hc.Transport = tr
		t.Cleanup(tr.CloseIdleConnections)
	}
	return c
}

// request sends one request; hdr may hold headers, set as given.
func (c *consoleClient) request(method, path string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, b, resp.Header
}

// login logs in with Basic credentials and keeps the session's cookie and
// CSRF token.
func (c *consoleClient) login(user, password string) {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.base+"/api/login", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.SetBasicAuth(user, password)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("login %s: %v", user, err)
	}
	defer resp.Body.Close()
	var s struct{ CSRF *string }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusOK || s.CSRF == nil {
		c.t.Fatalf("login %s: %s, %v", user, resp.Status, err)
	}
	c.csrf = *s.CSRF
}

// session fetches the CSRF token of a server without users.
func (c *consoleClient) session() {
	c.t.Helper()
	code, b, _ := c.request("GET", "/api/session", nil, nil)
	var s struct{ CSRF *string }
	if err := json.Unmarshal(b, &s); err != nil || code != http.StatusOK || s.CSRF == nil {
		c.t.Fatalf("GET /api/session: %d %s, %v", code, b, err)
	}
	c.csrf = *s.CSRF
}

// post sends a state-changing request with the session's CSRF token.
func (c *consoleClient) post(path string, v any) (int, []byte) {
	c.t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	code, b, _ := c.request("POST", path, body, map[string]string{"Content-Type": "application/json", "X-CSRF-Token": c.csrf})
	return code, b
}

// exec runs sql in the console and returns the answer's status and
// body, an error's text when it failed.
func (c *consoleClient) exec(sql string) (int, string) {
	c.t.Helper()
	code, b := c.post("/api/query", map[string]any{"sql": sql})
	if code != http.StatusOK {
		var e struct{ Error, Code string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return code, fmt.Sprintf("%s: %s", e.Code, e.Error)
		}
	}
	return code, string(b)
}

// token is the session cookie's value: the bearer token the login issued.
func (c *consoleClient) token() string {
	c.t.Helper()
	u, err := url.Parse(c.base)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == "quiver_session" {
			return ck.Value
		}
	}
	c.t.Fatal("no session cookie")
	return ""
}
