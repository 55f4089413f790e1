package server

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/quiverdata/quiver/internal/panics"
)

var httpPanics = promauto.NewCounter(prometheus.CounterOpts{
	Name: "quiver_http_panics_total",
	Help: "Panics recovered while serving an HTTP request (console, /metrics, /healthz); the request failed with 500 and the server went on. Each one is a bug.",
})

// RecoverHTTP serves next, and answers a request whose handler panicked
// with 500, logging the panic with its stack and counting it. net/http
// recovers a handler's panic too, but only by dropping the connection and
// printing to stderr, past quiver's log and metrics. A response already
// under way cannot turn into a 500: it is cut off, as net/http would, so
// the client does not take it for complete. http.ErrAbortHandler, by which
// a handler aborts a response on purpose, passes through. Every HTTP
// endpoint of quiver is served through it (serve's and ingest's).
func RecoverHTTP(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackedWriter{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			pe := panics.New(p)
			httpPanics.Inc()
			log.Error("recovered a panic serving an HTTP request; the request failed, the server goes on",
				"method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
			if tw.wrote {
				panic(http.ErrAbortHandler)
			}
			http.Error(w, "internal error: the server stopped on a bug while answering this request; it logged it and goes on serving", http.StatusInternalServerError)
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackedWriter remembers whether a response has begun. Unwrap lets
// http.ResponseController reach the connection's writer (flushes).
type trackedWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackedWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackedWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

func (t *trackedWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
