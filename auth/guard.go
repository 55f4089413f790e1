package auth

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is a token bucket of failed logins (a rate.Limiter each name and
// address): Burst failures may come at once, then one more each Every. A
// login is refused unchecked while its bucket is empty.
type Limit struct {
	Burst int
	Every time.Duration
}

// The default limits. A person mistyping a password a few times never
// meets them; a guesser gets about ten tries a minute per user name (from
// any number of addresses) and thirty a minute per address (over any
// number of names), against the hundreds that the Argon2id cost alone
// would let through on a large machine.
var (
	DefaultUserLimit = Limit{Burst: 10, Every: 6 * time.Second}
	DefaultAddrLimit = Limit{Burst: 30, Every: 2 * time.Second}
)

// maxTracked bounds the buckets a Guard keeps per kind. Buckets refill to
// full and are then forgotten, so only names and addresses that failed
// lately count; past the bound, the fullest are dropped first.
const maxTracked = 100_000

// Log attribute keys of the audit log.
const (
	logKeyProto  = "proto"
	logKeyWait   = "retry_after"
	logKeyReason = "reason"
)

// Guard limits and audits logins, for every endpoint that checks
// passwords (Flight's Basic credentials and Handshake, the MySQL
// protocol's mysql_native_password). An endpoint calls Allow before it
// checks a password, and Failed or Succeeded after. Failed logins are
// counted per user name and per client address in token buckets (Limit);
// while either is empty, Allow refuses the login without checking the
// password, so a guesser cannot use the server's CPU to try passwords
// faster than the limits.
//
// A per-user limit lets anyone slow down a user's logins by failing them
// on purpose: the user is delayed, never locked out, and a client that has
// logged in keeps its token. Guard is safe for concurrent use.
type Guard struct {
	cfg guardConfig

	mu    sync.Mutex
	users map[string]*rate.Limiter
	addrs map[string]*rate.Limiter
}

// GuardOption configures a Guard.
type GuardOption func(*guardConfig)

type guardConfig struct {
	audit      *slog.Logger
	user, addr Limit
	now        func() time.Time
}

// WithAuditLog sets the logger that records every login, failed login and
// refusal. Give it a logger of its own (the server's carries audit=true)
// so that the audit trail can be kept apart. The default discards them.
func WithAuditLog(l *slog.Logger) GuardOption { return func(c *guardConfig) { c.audit = l } }

// WithLimits sets the token buckets of failed logins per user name and
// per client address; the defaults are DefaultUserLimit and
// DefaultAddrLimit.
func WithLimits(perUser, perAddr Limit) GuardOption {
	return func(c *guardConfig) { c.user, c.addr = perUser, perAddr }
}

// WithGuardClock sets the clock the buckets refill by, for tests.
func WithGuardClock(now func() time.Time) GuardOption { return func(c *guardConfig) { c.now = now } }

func (c *guardConfig) validate() error {
	for _, l := range []Limit{c.user, c.addr} {
		if l.Burst < 1 || l.Every <= 0 {
			return fmt.Errorf("login limit %+v: want a burst of at least 1 and a positive interval", l)
		}
	}
	if c.now == nil {
		return fmt.Errorf("nil clock")
	}
	return nil
}

// NewGuard returns a Guard.
func NewGuard(opts ...GuardOption) (*Guard, error) {
	cfg := guardConfig{user: DefaultUserLimit, addr: DefaultAddrLimit, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new login guard: %w", err)
	}
	if cfg.audit == nil {
		cfg.audit = slog.New(slog.DiscardHandler)
	}
	return &Guard{cfg: cfg, users: map[string]*rate.Limiter{}, addrs: map[string]*rate.Limiter{}}, nil
}

// LimitedError is a login refused by a Guard. It wraps ErrRateLimited.
type LimitedError struct {
	// Wait is how long until the next login may be checked.
	Wait time.Duration
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("%v: try again in %v", ErrRateLimited, e.Wait.Round(time.Second))
}

func (e *LimitedError) Unwrap() error { return ErrRateLimited }

// Allow returns nil when a login by user from addr (HOST or HOST:PORT)
// may be checked, or a *LimitedError, which it also audits. proto names
// the endpoint ("flight", "mysql").
func (g *Guard) Allow(proto, user, addr string) error {
	host := hostOf(addr)
	now := g.cfg.now()
	g.mu.Lock()
	wait := max(bucketWait(g.users, user, now, g.cfg.user), bucketWait(g.addrs, host, now, g.cfg.addr))
	g.mu.Unlock()
	if wait == 0 {
		return nil
	}
	g.cfg.audit.Warn("login refused: too many failed logins", logKeyProto, proto, logKeyUser, user, logKeyPeer, host, logKeyWait, wait.Round(time.Second))
	return &LimitedError{Wait: wait}
}

// Failed records a failed login, taking a token from the user's and the
// address's buckets, and audits it with the reason (not shown to the
// client).
func (g *Guard) Failed(proto, user, addr string, reason error) {
	host := hostOf(addr)
	now := g.cfg.now()
	g.mu.Lock()
	take(g.users, user, now, g.cfg.user)
	take(g.addrs, host, now, g.cfg.addr)
	g.mu.Unlock()
	g.cfg.audit.Warn("login failed", logKeyProto, proto, logKeyUser, user, logKeyPeer, host, logKeyReason, reason)
}

// Succeeded audits a login.
func (g *Guard) Succeeded(proto, user, addr string) {
	g.cfg.audit.Info("login", logKeyProto, proto, logKeyUser, user, logKeyPeer, hostOf(addr))
}

// level is the tokens in key's bucket of m at now, at most l.Burst. A
// name or address without a bucket has a full one.
func level(m map[string]*rate.Limiter, key string, now time.Time, l Limit) float64 {
	b := m[key]
	if b == nil {
		return float64(l.Burst)
	}
	return b.TokensAt(now)
}

// bucketWait is how long until key's bucket in m holds a token: 0 when it does.
func bucketWait(m map[string]*rate.Limiter, key string, now time.Time, l Limit) time.Duration {
	lvl := level(m, key, now, l)
	if lvl >= 1 {
		return 0
	}
	return time.Duration((1 - lvl) * float64(l.Every))
}

// take removes a token from key's bucket in m, making the bucket if
// needed, and keeps m within maxTracked buckets. An empty bucket stays
// empty rather than going into debt: Allow already refuses while it is,
// so a failure that raced past it costs no more waiting.
func take(m map[string]*rate.Limiter, key string, now time.Time, l Limit) {
	b := m[key]
	if b == nil {
		if len(m) >= maxTracked {
			evict(m, now, l)
		}
		b = rate.NewLimiter(rate.Every(l.Every), l.Burst)
		m[key] = b
	}
	b.AllowN(now, 1)
}

// evict forgets the buckets that have refilled, or, when none has, the
// fullest tenth.
func evict(m map[string]*rate.Limiter, now time.Time, l Limit) {
	for k, b := range m {
		if b.TokensAt(now) >= float64(l.Burst) {
			delete(m, k)
		}
	}
	if len(m) < maxTracked {
		return
	}
	for tenths := 9; tenths >= 0 && len(m) >= maxTracked; tenths-- {
		cut := float64(l.Burst) * float64(tenths) / 10
		for k, b := range m {
			if b.TokensAt(now) >= cut {
				delete(m, k)
			}
		}
	}
}

// hostOf is addr without its port.
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
