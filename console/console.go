package console

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// Kind is what process serves the console.
const (
	KindServe  = "serve"
	KindIngest = "ingest"
)

// Options configure a console.
type Options struct {
	// Kind is KindServe (SQL, schema, live server view) or KindIngest
	// (the live ingest view only).
	Kind string
	// DB runs the console's SQL; nil for KindIngest.
	DB *engine.DB
	// Users and Tokens authenticate, as on Flight. With no users (nil or
	// empty) everyone is the anonymous admin, and only loopback clients
	// are served.
	Users  *auth.Store
	Tokens *auth.Tokens
	// Authorize refuses a statement the user's role does not permit.
	Authorize func(auth.User, *engine.Stmt) error
	// Admission and Classifier admit the console's statements as the
	// other endpoints' are; Admission also lists and cancels queries.
	Admission    *admit.Controller
	Classifier   *admit.Classifier
	QueryTimeout time.Duration
	// Live adds the "ingest" section to /api/live (KindIngest).
	Live func() any
	// Pipelines adds the "pipelines" section to /api/live (KindServe):
	// the Kafka pipelines quiver serve --ingest runs; nil: none.
	Pipelines func() any
	// Gatherer supplies the metrics; nil means Prometheus' default.
	Gatherer prometheus.Gatherer
	// SecureCookies marks the session cookie Secure, so that a browser
	// never sends it over plain HTTP: set it when the console is served
	// over HTTPS (a request that came over TLS gets it anyway).
	SecureCookies bool
	Logger        *slog.Logger
}

// Console is the console's HTTP handler.
type Console struct {
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	csrfKey []byte
	assets  *assets

	failedMu sync.Mutex
	failed   map[uint64]failure
}

var _ http.Handler = (*Console)(nil)

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }
