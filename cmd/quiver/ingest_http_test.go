package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/internal/testutil"
)

// TestServeMetrics_RecoversPanics: a panic answering a request on quiver
// ingest's HTTP endpoint costs that request a 500, logged with its stack
// and counted, and every request after it is answered (net/http dropped
// the connection and wrote to stderr, past the log and the metric).
func TestServeMetrics_RecoversPanics(t *testing.T) {
	var armed atomic.Bool
	live := func() any {
		if armed.CompareAndSwap(true, false) {
			panic("injected panic in the live view")
		}
		return map[string]int{"rows": 1}
	}
	var log syncbuf.Buffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop, err := serveMetricsOn(ln, live, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(stop)
	hc := &http.Client{Timeout: 10 * time.Second}

	tests := []struct {
		name       string
		path       string
		panics     bool
		wantStatus int
		wantBody   string
	}{
		{"live view panics", "/api/live", true, http.StatusInternalServerError, "internal error"},
		{"live view after it", "/api/live", false, http.StatusOK, `"rows":1`},
		{"healthz", "/healthz", false, http.StatusOK, "ok"},
		{"metrics", "/metrics", false, http.StatusOK, "quiver_http_panics_total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := testutil.Metric(t, "quiver_http_panics_total", nil)
			armed.Store(tt.panics)
			resp, err := hc.Get("http://" + ln.Addr().String() + tt.path)
			if err != nil {
				t.Fatalf("GET %s: %v", tt.path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("GET %s: got %s %q, want %d and %q", tt.path, resp.Status, body, tt.wantStatus, tt.wantBody)
			}
			want := before
			if tt.panics {
				want++
			}
			if after, _ := testutil.Metric(t, "quiver_http_panics_total", nil); after != want {
				t.Errorf("quiver_http_panics_total: got %v, want %v", after, want)
			}
			if tt.panics && !loggedPanic(log.String(), "injected panic in the live view") {
				t.Errorf("log: got %q, want an error record with the panic and its stack", log.String())
			}
		})
	}
}

// loggedPanic reports whether log holds an error record of a recovered
// panic with value v and a stack.
func loggedPanic(log, v string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, v) && strings.Contains(line, "stack=") {
			return true
		}
	}
	return false
}
