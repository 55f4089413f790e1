package mysqlwire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/version"
)

// Users checks mysql_native_password logins. *auth.Store implements it.
type Users interface {
	// Len is the number of users; with none, authentication is off.
	Len() int
	// VerifyNativePassword checks the client's scramble of the 20-byte
	// salt the server sent, and returns the user with its role.
	VerifyNativePassword(name string, salt, authResponse []byte) (auth.User, error)
	// Lookup returns a user as it is now: sessions read their user again
	// before each command, so a changed role or a removed user takes
	// effect on open connections too.
	Lookup(name string) (auth.User, bool)
}

// Options configure a Server. The zero value serves without
// authentication, on loopback only.
type Options struct {
	// Logger receives the endpoint's logs; nil means slog.Default().
	Logger *slog.Logger
	// Users authenticates logins. Nil, or a store with no users, turns
	// authentication off: every login is accepted with the admin role, and
	// Serve refuses a listener that is not on loopback.
	Users Users
	// ServerVersion is the version announced to clients. Clients parse it,
	// so it should look like a MySQL version; the default is
	// "8.0.33-quiver".
	ServerVersion string
	// TLSConfig, when set, lets clients switch to TLS after the greeting.
	TLSConfig *tls.Config
	// RequireTLS refuses a login that did not switch to TLS, before its
	// password is checked, as MySQL's require_secure_transport does:
	// mysql_native_password keeps the password off the wire, but not the
	// statements and results that follow. It needs TLSConfig.
	RequireTLS bool
	// HandshakeTimeout bounds the time from accepting a connection to a
	// successful login; the default is 5 s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection that sends no command for this long,
	// like MySQL's wait_timeout; the default is 8 h.
	IdleTimeout time.Duration
	// WriteTimeout closes a connection whose client stops reading a result
	// for this long, like MySQL's net_write_timeout; the default is 60 s.
	WriteTimeout time.Duration
	// Authorize, when set, decides whether u may run stmt, in place of
	// stmt.Authorize(u): the server audits there, as it does for Flight.
	Authorize func(u auth.User, stmt *engine.Stmt) error
	// Admission, when set, decides when each statement runs (package
	// admit), and Classifier its lane. Nil: every statement runs at once.
	Admission  *admit.Controller
	Classifier *admit.Classifier
	// Holds, when set, bounds each connection's and user's prepared
	// statements and the parameters bound to them (holds.go).
	Holds *admit.Holds
	// QueryTimeout bounds every statement, its wait for a turn included;
	// a session's max_execution_time may lower it for SELECTs, never
	// raise it. Zero: no bound.
	QueryTimeout time.Duration
	// MaxConnections refuses a login, with error 1040, while this many
	// clients are logged in; the last AdminReservedConnections of them
	// only admins may take. MaxUserConnections refuses one user's login
	// past that many of theirs, admins' excepted, with error 1203.
	// MaxPendingConnections bounds the connections still logging in,
	// which do not count against MaxConnections: past it, the oldest of
	// them is closed (admit.ConnLimits). Zero: no limit.
	MaxConnections           int
	AdminReservedConnections int
	MaxUserConnections       int
	MaxPendingConnections    int
}

// defaultServerVersion is the version the handshake announces: a MySQL
// 8.0 that clients parse as one (they read the leading numbers), then
// which quiver this is.
var defaultServerVersion = "8.0.33-quiver-" + version.Get().Version

func (o *Options) setDefaults() {
	if st, ok := o.Users.(*auth.Store); ok && st == nil {
		o.Users = nil
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ServerVersion == "" {
		o.ServerVersion = defaultServerVersion
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 5 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 8 * time.Hour
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 60 * time.Second
	}
}

// Server is a MySQL-protocol endpoint over one engine database. It is safe
// for concurrent use. Each client connection gets its own engine
// connection, taken when the client has logged in and given back when it
// goes away: to the pool, or closed if the client left session state on it
// (USE, SET, temporary tables, …) that the next client must not inherit.
type Server struct {
	db      *engine.DB
	opts    Options
	log     *slog.Logger
	started time.Time

	duckSettings   map[string]bool // DuckDB's own setting names, for SET
	versionComment string
	questions      atomic.Int64
	conns          *admit.Conns

	mu        sync.Mutex
	sessions  map[uint32]*session
	listeners []*mysql.Listener
	closed    bool
}

// Log attribute keys.
const (
	logConn   = "conn"
	logUser   = "user"
	logRemote = "remote"
	logAddr   = "addr"
	logErr    = "err"
	logCode   = "code"
	logSQL    = "sql"
	logRows   = "rows"
	logDur    = "duration"
)

// New returns a Server over db. It reads DuckDB's version and setting
// names once; db must stay open until the Server is closed.
func New(db *engine.DB, opts Options) (*Server, error) {
	if db == nil {
		return nil, errors.New("new mysql server: nil database")
	}
	if opts.RequireTLS && opts.TLSConfig == nil {
		return nil, errors.New("new mysql server: TLS is required but there is no TLS configuration")
	}
	opts.setDefaults()
	s := &Server{
		db:       db,
		opts:     opts,
		log:      opts.Logger.With("component", "mysql"),
		started:  time.Now(),
		sessions: make(map[uint32]*session),
		conns: admit.NewConns("mysql", admit.ConnLimits{Max: opts.MaxConnections, AdminReserved: opts.AdminReservedConnections,
			PerUser: opts.MaxUserConnections, MaxPending: opts.MaxPendingConnections}),
	}
	if err := s.loadEngineInfo(); err != nil {
		return nil, fmt.Errorf("new mysql server: %w", err)
	}
	redirectVitessLog(s.log)
	return s, nil
}

// loadEngineInfo reads what the compatibility layer needs from DuckDB.
func (s *Server) loadEngineInfo() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to engine: %w", err)
	}
	defer conn.Release()
	rows, err := queryStrings(ctx, conn, "SELECT lower(name) FROM duckdb_settings()")
	if err != nil {
		return fmt.Errorf("read duckdb settings: %w", err)
	}
	s.duckSettings = make(map[string]bool, len(rows))
	for _, r := range rows {
		if r[0] != nil {
			s.duckSettings[*r[0]] = true
		}
	}
	rows, err = queryStrings(ctx, conn, "SELECT version()")
	if err != nil || len(rows) != 1 || rows[0][0] == nil {
		return fmt.Errorf("read duckdb version: %w", err)
	}
	s.versionComment = "quiver (DuckDB " + *rows[0][0] + ")"
	return nil
}

// authDisabled reports whether logins go unchecked.
func (s *Server) authDisabled() bool {
	return s.opts.Users == nil || s.opts.Users.Len() == 0
}

// Serve accepts MySQL clients on ln until Close or Shutdown, and then
// returns ErrServerClosed. The caller binds ln (127.0.0.1:0 picks a free
// port); Serve may be called for several listeners. Without users, a
// listener that is not on loopback is refused.
func (s *Server) Serve(ln net.Listener) error {
	if s.authDisabled() && !isLoopback(ln.Addr()) {
		ln.Close()
		return fmt.Errorf("serve mysql on %s: no user is configured, so only a loopback address is allowed", ln.Addr())
	}
	acc := &acceptor{Listener: ln, srv: s}
	l, err := mysql.NewListenerWithConfig(mysql.ListenerConfig{
		Listener:           acc,
		AuthServer:         &authServer{srv: s},
		Handler:            &handler{srv: s},
		ConnReadBufferSize: mysql.DefaultConnBufferSize,
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("serve mysql on %s: %w", ln.Addr(), err)
	}
	l.ServerVersion = s.opts.ServerVersion
	l.TLSConfig = s.opts.TLSConfig

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()

	s.log.Info("mysql endpoint serving", logAddr, ln.Addr().String(), "auth", !s.authDisabled())
	l.Accept()

	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrServerClosed
	}
	l.Close() // accepting failed for good; connections already open go on
	return fmt.Errorf("serve mysql on %s: %w", ln.Addr(), acc.err)
}

// Shutdown stops accepting connections, lets every running command finish
// and send its result, and closes each connection once it is idle. When
// ctx ends first, it closes the rest as Close does and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, sess := range s.stopAccepting() {
		sess.tc.drain()
	}
	if err := s.waitSessions(ctx); err != nil {
		s.closeSessions()
		return err
	}
	return nil
}

// Close stops accepting connections, interrupts running statements and
// closes every connection, waiting (a few seconds at most) until each has
// given its engine connection back.
func (s *Server) Close() error {
	s.stopAccepting()
	return s.closeSessions()
}

// stopAccepting closes the listeners and returns the open sessions.
func (s *Server) stopAccepting() []*session {
	s.mu.Lock()
	s.closed = true
	lns := s.listeners
	s.listeners = nil
	sessions := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	for _, l := range lns {
		l.Close()
	}
	return sessions
}

// closeSessions force-closes every session and waits for them to go.
func (s *Server) closeSessions() error {
	s.mu.Lock()
	for _, sess := range s.sessions {
		sess.kill()
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.waitSessions(ctx); err != nil {
		return fmt.Errorf("close mysql server: %w", err)
	}
	return nil
}

// waitSessions waits until no session is left.
func (s *Server) waitSessions(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		n := len(s.sessions)
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d connections still open: %w", n, ctx.Err())
		case <-tick.C:
		}
	}
}

// addSession registers a new connection; after Close it is killed at once.
func (s *Server) addSession(sess *session) {
	s.mu.Lock()
	s.sessions[sess.id] = sess
	closed := s.closed
	s.mu.Unlock()
	if closed {
		sess.kill()
	}
}

func (s *Server) removeSession(sess *session) {
	s.mu.Lock()
	if s.sessions[sess.id] == sess {
		delete(s.sessions, sess.id)
	}
	s.mu.Unlock()
}

// session returns the open session with the given connection id.
func (s *Server) session(id uint32) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// sessionCount is the number of open connections.
func (s *Server) sessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

func isLoopback(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// acceptor wraps the caller's listener: it retries transient accept errors
// (running out of file descriptors must not stop the server) and gives
// each connection its deadlines.
type acceptor struct {
	net.Listener
	srv *Server
	err error // the error that ended accepting
}

func (a *acceptor) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := a.Listener.Accept()
		if err == nil {
			connectionsTotal.Inc()
			tc := newTimeoutConn(&meteredConn{Conn: c}, a.srv.opts)
			// Until it logs in it counts against the pending pool, which
			// closes the oldest idle one to make room for a new client.
			tc.pending = a.srv.conns.Pend(func() { c.Close() })
			return tc, nil
		}
		if errors.Is(err, net.ErrClosed) || !transientAcceptError(err) {
			a.err = err
			return nil, err
		}
		delay = min(max(2*delay, 5*time.Millisecond), time.Second)
		a.srv.log.Warn("accept mysql connection; retrying", logErr, err, "delay", delay)
		time.Sleep(delay)
	}
}

func transientAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EINTR)
}

// timeoutConn gives a client connection its deadlines: one absolute
// deadline for the handshake, then an idle deadline renewed before each
// read and a write deadline renewed before each write. Draining makes the
// next read report end of file, which ends the connection cleanly between
// commands.
type timeoutConn struct {
	net.Conn
	idle, write time.Duration
	authed      atomic.Bool
	pending     *admit.Pending // the place in the pending pool until login

	mu       sync.Mutex
	draining bool
}

func newTimeoutConn(c net.Conn, opts Options) *timeoutConn {
	c.SetDeadline(time.Now().Add(opts.HandshakeTimeout))
	return &timeoutConn{Conn: c, idle: opts.IdleTimeout, write: opts.WriteTimeout}
}

func (c *timeoutConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.draining {
		c.mu.Unlock()
		return 0, io.EOF
	}
	if c.authed.Load() {
		c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *timeoutConn) Write(p []byte) (int, error) {
	if c.authed.Load() {
		c.Conn.SetWriteDeadline(time.Now().Add(c.write))
	}
	return c.Conn.Write(p)
}

// authenticated ends the handshake deadline, and the connection's place
// in the pending pool.
func (c *timeoutConn) authenticated() {
	c.authed.Store(true)
	c.Conn.SetDeadline(time.Time{})
	c.pending.Done()
}

// Close closes the connection and gives up its place in the pending
// pool, if it still has one.
func (c *timeoutConn) Close() error {
	c.pending.Done()
	return c.Conn.Close()
}

// drain makes the connection end at its next read, and wakes a read that
// is waiting for the client's next command.
func (c *timeoutConn) drain() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.draining = true
	c.Conn.SetReadDeadline(time.Now())
	c.mu.Unlock()
}
