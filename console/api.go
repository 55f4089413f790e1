package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quiverdata/quiver/auth"
)

// New returns the console for opts.
func New(opts Options) (*Console, error) {
	switch opts.Kind {
	case KindServe:
		if opts.DB == nil {
			return nil, errors.New("console: a server's console needs its database")
		}
		if opts.Users != nil && opts.Users.Len() > 0 && opts.Tokens == nil {
			return nil, errors.New("console: users without tokens")
		}
	case KindIngest:
	default:
		return nil, fmt.Errorf("console: unknown kind %q", opts.Kind)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Gatherer == nil {
		opts.Gatherer = prometheus.DefaultGatherer
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	c := &Console{opts: opts, log: opts.Logger.With("component", "console"), csrfKey: newKey(), assets: a,
		failed: make(map[uint64]failure)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/session", c.open(c.handleSession))
	mux.HandleFunc("GET /api/live", c.open(c.user(c.handleLive)))
	if opts.Kind == KindServe {
		mux.HandleFunc("POST /api/login", c.open(c.handleLogin))
		mux.HandleFunc("POST /api/logout", c.open(c.change(c.handleLogout, true)))
		mux.HandleFunc("POST /api/query", c.open(c.change(c.handleQuery, true)))
		mux.HandleFunc("GET /api/query/error", c.open(c.user(c.handleQueryError)))
		mux.HandleFunc("POST /api/download", c.open(c.change(c.handleDownload, true)))
		mux.HandleFunc("GET /api/schema", c.open(c.user(c.handleSchema)))
		mux.HandleFunc("POST /api/cancel", c.open(c.change(c.handleCancel, true)))
	}
	mux.HandleFunc("/api/", c.open(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no console API %s %s", r.Method, r.URL.Path))
	}))
	mux.HandleFunc("/", c.open(c.assets.serve))
	c.mux = mux
	return c, nil
}

// open applies what every request gets: the loopback check of a server
// without users, and headers that keep the page from being framed by
// other sites or sniffed (the page frames its own downloads, to read
// their errors).
func (c *Console) open(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.authOn() {
			if err := localOnly(r); err != nil {
				writeError(w, http.StatusForbidden, "auth", err.Error())
				return
			}
		}
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "SAMEORIGIN")
		hd.Set("Referrer-Policy", "no-referrer")
		h(w, r)
	}
}

type userHandler func(http.ResponseWriter, *http.Request, auth.User)

// user serves only requests with a session.
func (c *Console) user(h userHandler) http.HandlerFunc {
	return c.change(h, false)
}

// change serves state-changing requests: a session, and (csrf) its CSRF
// token in the header or, for a form, its field.
func (c *Console) change(h userHandler, csrf bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, token, ok := c.session(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, "auth", "log in first: no session, or it expired")
			return
		}
		if !csrf {
			h(w, r, u)
			return
		}
		got := r.Header.Get(csrfHeader)
		if got == "" && r.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			got = r.PostFormValue(csrfField)
		}
		if err := c.checkCSRF(r, token, got); err != nil {
			c.log.Warn("console request refused", "user", u.Name, "path", r.URL.Path, "err", err)
			writeError(w, http.StatusForbidden, "csrf", err.Error())
			return
		}
		h(w, r, u)
	}
}

// maxBody bounds a request body: SQL and a few fields.
const maxBody = 4 << 20

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Error: msg, Code: code})
}

// failure is the error that broke a result stream after it began, kept
// for the page to fetch (GET /api/query/error) for a while.
type failure struct {
	user string
	msg  string
}

// queryIDs number the console's results.
var queryIDs atomic.Uint64

// failedKept bounds the broken streams' errors kept.
const failedKept = 256

func (c *Console) noteFailure(id uint64, user, msg string) {
	c.failedMu.Lock()
	defer c.failedMu.Unlock()
	if len(c.failed) >= failedKept {
		for k := range c.failed {
			if k < id-failedKept {
				delete(c.failed, k)
			}
		}
		if len(c.failed) >= failedKept {
			clear(c.failed)
		}
	}
	c.failed[id] = failure{user: user, msg: msg}
}
