package admit

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// What clients keep on the server between statements (prepared
// statements and the parameters bound to them, open transactions, results
// held for a later fetch) costs memory whether or not anything runs. Holds
// bounds it three ways: per session (a Flight or MySQL connection), per
// user (all of a user's sessions, on every endpoint) and server-wide, where
// it is charged to the memory budget's share for it (Budget.Held). A
// request past a bound is refused with a *LimitError that names the bound
// and its flag; nothing already held is taken away.

// HoldKind is a kind of handle a session holds.
type HoldKind int

const (
	// HoldPrepared is a prepared statement.
	HoldPrepared HoldKind = iota
	// HoldTxn is an open transaction, which keeps a DuckDB connection.
	HoldTxn
	// HoldResult is a result held for a later fetch, which keeps a
	// DuckDB connection (the last statement of a Flight script).
	HoldResult
	// HoldParams is bound parameters alone, held while a statement runs
	// with them (a batch of parameter rows for an update).
	HoldParams
)

var holdNames = [...]string{"prepared statements", "open transactions", "held results", "parameter sets"}

func (k HoldKind) String() string { return holdNames[k] }

// HoldLimits are Holds' bounds. Zero fields take the defaults given.
type HoldLimits struct {
	// Prepared, Txns and Held bound the prepared statements, open
	// transactions and held results of one session. Defaults 1024, 8
	// and 8: a JDBC pool's statement cache is a few hundred statements,
	// and a client runs one transaction at a time on a connection (a
	// Flight connection carries a few clients' calls at most).
	Prepared, Txns, Held int
	// UserPrepared, UserTxns and UserHeld bound the same for all of one
	// user's sessions. Defaults 4096, 32 and 32: four sessions' worth,
	// so that one user cannot take every DuckDB connection.
	UserPrepared, UserTxns, UserHeld int
	// ParamBytes bounds the parameters bound to one statement. Default
	// 64 MiB, MySQL's max_allowed_packet: a million rows of 64 bytes.
	ParamBytes int64
	// SessionParamBytes and UserParamBytes bound the parameters bound in
	// one session and in all of one user's. Defaults 256 MiB and 512
	// MiB; the server-wide Memory bounds them too.
	SessionParamBytes, UserParamBytes int64
	// Memory bounds everything held, all users together: the memory
	// budget's Held share. Default 256 MiB.
	Memory int64
}

// Default hold limits (see HoldLimits).
const (
	DefaultPrepared          = 1024
	DefaultUserPrepared      = 4096
	DefaultTxns              = 8
	DefaultUserTxns          = 32
	DefaultHeld              = 8
	DefaultUserHeld          = 32
	DefaultParamBytes        = 64 << 20
	DefaultSessionParamBytes = 256 << 20
	DefaultUserParamBytes    = 512 << 20
)

// HoldBytes is what a handle costs besides its SQL and parameters: for a
// prepared statement its schemas and cache entry (a few KiB); for a
// transaction or a held result, the DuckDB connection it keeps and what
// it holds prepared. Measured: 1,000 DuckDB connections, each in a
// transaction that read a table, took 13 MiB, about 13 KiB each; 64 KiB
// leaves room for wide statements and the Go side. What a transaction
// writes is DuckDB's, within its memory_limit.
var HoldBytes = [...]int64{HoldPrepared: 8 << 10, HoldTxn: 64 << 10, HoldResult: 64 << 10, HoldParams: 0}

func (l HoldLimits) withDefaults() HoldLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Prepared, DefaultPrepared)
	def(&l.UserPrepared, DefaultUserPrepared)
	def(&l.Txns, DefaultTxns)
	def(&l.UserTxns, DefaultUserTxns)
	def(&l.Held, DefaultHeld)
	def(&l.UserHeld, DefaultUserHeld)
	def64(&l.ParamBytes, DefaultParamBytes)
	def64(&l.SessionParamBytes, DefaultSessionParamBytes)
	def64(&l.UserParamBytes, DefaultUserParamBytes)
	def64(&l.Memory, 256<<20)
	return l
}

// The flags that set each bound, for the errors that name them.
var (
	sessionFlags = [...]string{"--max-prepared", "--max-txns", "--max-held", ""}
	userFlags    = [...]string{"--max-user-prepared", "--max-user-txns", "--max-user-held", ""}
)

// LimitError refuses a request that would pass a bound of Holds. Over
// Flight it is RESOURCE_EXHAUSTED.
type LimitError struct {
	// What was asked for and the bound it would pass, in words ("10 prepared
	// statements in this session"), the bound's value and its flag.
	What  string
	Limit string
	Flag  string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("resource limit: %s would pass the limit of %s (%s); close what the session no longer needs, or ask the operator to raise %s",
		e.What, e.Limit, e.Flag, e.Flag)
}

// holdCounts are what one session or user holds.
type holdCounts struct {
	n      [3]int // by HoldKind, HoldParams excepted
	params int64  // parameter bytes
}

// Holds keeps the accounts. Its methods are safe for concurrent use. A
// nil *Holds bounds nothing, and its sessions' leases cost nothing.
type Holds struct {
	lim   HoldLimits
	mu    sync.Mutex
	bytes int64 // charged, server-wide
	users map[string]*holdCounts
	freed func() // see OnFreed
}

// freedNotice is the least a release gives back for OnFreed's function
// to hear of it.
const freedNotice = 1 << 20

// OnFreed sets a function called, on its own goroutine, when a release
// gives back at least a MiB: the server returns idle memory to the system
// there, so that a client that bound much and left does not leave the
// server at its peak.
func (h *Holds) OnFreed(fn func()) {
	h.mu.Lock()
	h.freed = fn
	h.mu.Unlock()
}

// NewHolds returns the accounts with limits lim.
func NewHolds(lim HoldLimits) *Holds {
	return &Holds{lim: lim.withDefaults(), users: map[string]*holdCounts{}}
}

// Limits are the bounds, defaults filled in.
func (h *Holds) Limits() HoldLimits {
	if h == nil {
		return HoldLimits{}.withDefaults()
	}
	return h.lim
}

// Bytes is the memory charged for what every session holds.
func (h *Holds) Bytes() int64 {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes
}

// HoldSession is one session's account: a Flight connection's calls by
// one user, or a MySQL connection.
type HoldSession struct {
	h    *Holds
	user string
	c    holdCounts // under h.mu
}

// Session opens an account for a session of user.
func (h *Holds) Session(user string) *HoldSession {
	return &HoldSession{h: h, user: user}
}

// Lease is one handle's charge: its count, its fixed bytes and the
// parameter bytes bound to it. Its methods are safe for concurrent use.
type Lease struct {
	s        *HoldSession
	kind     HoldKind
	fixed    int64
	params   int64
	released bool
}

// Take charges a handle of kind, costing HoldBytes[kind] plus extra
// bytes (its SQL's length, say), to the session. It returns a
// *LimitError, and charges nothing, when that would pass a bound.
func (s *HoldSession) Take(kind HoldKind, extra int64) (*Lease, error) {
	l := &Lease{s: s, kind: kind}
	if s == nil || s.h == nil {
		return l, nil
	}
	h := s.h
	cost := HoldBytes[kind] + max(extra, 0)
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.user(s.user)
	if kind != HoldParams {
		if lim := h.sessionLimit(kind); s.c.n[kind] >= lim {
			return nil, s.refuse(kind, fmt.Sprintf("%d %s in this session", s.c.n[kind]+1, kind), lim, sessionFlags[kind])
		}
		if lim := h.userLimit(kind); u.n[kind] >= lim {
			return nil, s.refuse(kind, fmt.Sprintf("%d %s of user %s", u.n[kind]+1, kind, s.user), lim, userFlags[kind])
		}
	}
	if err := h.charge(s, cost); err != nil {
		return nil, err
	}
	if kind != HoldParams {
		s.c.n[kind]++
		u.n[kind]++
	}
	l.fixed = cost
	heldGauge.WithLabelValues(kindLabel[kind]).Inc()
	return l, nil
}

// SetParams makes n the bytes of parameters bound to the lease's handle,
// in place of what it held. It returns a *LimitError, and changes
// nothing, when n would pass a bound; a smaller n always succeeds.
func (l *Lease) SetParams(n int64) error {
	if l == nil || l.s == nil || l.s.h == nil {
		return nil
	}
	s, h := l.s, l.s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.released {
		return nil
	}
	d := n - l.params
	if d > 0 {
		u := h.user(s.user)
		lim := h.lim
		switch {
		case n > lim.ParamBytes:
			return s.refuse(HoldParams, fmt.Sprintf("%s of parameters bound to one statement", sizeString(n)), lim.ParamBytes, "--max-param-bytes")
		case s.c.params+d > lim.SessionParamBytes:
			return s.refuse(HoldParams, fmt.Sprintf("%s of parameters bound in this session", sizeString(s.c.params+d)), lim.SessionParamBytes, "--max-session-param-bytes")
		case u.params+d > lim.UserParamBytes:
			return s.refuse(HoldParams, fmt.Sprintf("%s of parameters bound by user %s", sizeString(u.params+d), s.user), lim.UserParamBytes, "--max-user-param-bytes")
		}
		if err := h.charge(s, d); err != nil {
			return err
		}
	} else {
		h.bytes += d
		if h.freed != nil && -d >= freedNotice {
			go h.freed()
		}
	}
	l.params = n
	s.c.params += d
	h.user(s.user).params += d
	heldBytes.Set(float64(h.bytes))
	return nil
}

// Release gives the lease's charge back. Releasing again does nothing.
func (l *Lease) Release() {
	if l == nil || l.s == nil || l.s.h == nil {
		return
	}
	s, h := l.s, l.s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.released {
		return
	}
	l.released = true
	u := h.user(s.user)
	if l.kind != HoldParams {
		s.c.n[l.kind]--
		u.n[l.kind]--
	}
	s.c.params -= l.params
	u.params -= l.params
	h.bytes -= l.fixed + l.params
	if u.n == [3]int{} && u.params == 0 {
		delete(h.users, s.user)
	}
	heldGauge.WithLabelValues(kindLabel[l.kind]).Dec()
	heldBytes.Set(float64(h.bytes))
	if h.freed != nil && l.fixed+l.params >= freedNotice {
		go h.freed()
	}
}

// user returns user's counts; h.mu is held.
func (h *Holds) user(name string) *holdCounts {
	u := h.users[name]
	if u == nil {
		u = &holdCounts{}
		h.users[name] = u
	}
	return u
}

func (h *Holds) sessionLimit(k HoldKind) int {
	return [...]int{h.lim.Prepared, h.lim.Txns, h.lim.Held}[k]
}

func (h *Holds) userLimit(k HoldKind) int {
	return [...]int{h.lim.UserPrepared, h.lim.UserTxns, h.lim.UserHeld}[k]
}

// charge adds n bytes server-wide, within Memory; h.mu is held.
func (h *Holds) charge(s *HoldSession, n int64) error {
	if h.bytes+n > h.lim.Memory {
		return s.refuse(HoldParams, fmt.Sprintf("%s held by every session (%s more for this one)", sizeString(h.bytes+n), sizeString(n)),
			h.lim.Memory, "--memory, whose share this is")
	}
	h.bytes += n
	heldBytes.Set(float64(h.bytes))
	return nil
}

// refuse counts a refusal and returns its error; limit is a count (int)
// or bytes (int64).
func (s *HoldSession) refuse(k HoldKind, what string, limit any, flag string) error {
	lim := fmt.Sprint(limit)
	if b, ok := limit.(int64); ok {
		lim = sizeString(b)
	}
	holdRefused.WithLabelValues(kindLabel[k]).Inc()
	return &LimitError{What: what, Limit: lim, Flag: flag}
}

// sizeString writes n bytes in MiB, KiB or bytes, whichever is whole.
func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

var kindLabel = [...]string{"prepared", "txn", "result", "params"}

var (
	heldGauge = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "quiver_admit_held_handles",
		Help: "Handles clients hold between statements, by kind (prepared, txn, result, params).",
	}, []string{"kind"})
	heldBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_admit_held_bytes",
		Help: "Memory charged to the budget for what clients hold between statements: bound parameters, prepared statements, transactions, held results.",
	})
	holdRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "quiver_admit_hold_refused_total",
		Help: "Requests refused for passing a per-session, per-user or server-wide bound on what clients hold, by kind.",
	}, []string{"kind"})
)
