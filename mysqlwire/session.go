package mysqlwire

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// statusNoBackslashEscapes is SERVER_STATUS_NO_BACKSLASH_ESCAPES: string
// literals take a backslash as an ordinary character, as DuckDB does.
const statusNoBackslashEscapes = 0x0200

// session is the state of one client connection: who logged in, its engine
// connection, MySQL session variables, transaction state and prepared
// statements.
//
// vitess calls a connection's handler methods one at a time, except that a
// COM_STMT_EXECUTE opening a server-side cursor keeps running in its own
// goroutine while later commands arrive. mu is held for the whole of each
// command, so the engine connection is only ever used by one goroutine,
// and a command that arrives while a cursor holds it is refused (errBusy).
type session struct {
	srv *Server
	c   *mysql.Conn
	tc  *timeoutConn
	id  uint32
	log *slog.Logger

	// ctx ends when the connection closes or the server kills it.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex // held while a command runs; guards what follows (user and host are set once, at login)

	user auth.User
	host string

	conn       *engine.Conn // taken at login; nil after a reset gave it back
	dirty      bool         // conn holds session state: close it, don't pool it
	database   string       // what the last USE on conn named; "" for the server's default
	autocommit bool
	inTxn      bool
	vars       map[string]*string // MySQL session variables set by the client; nil value is NULL
	locks      tableLocks         // what LOCK TABLES holds (lock.go)
	savepoints savepoints         // SAVEPOINT names (savepoint.go)
	deferred   []deferredTable    // tables created with foreign_key_checks=0, their foreign keys to add (fk.go)
	stmts      map[uint32]*prepared
	holds      *admit.HoldSession // what stmts hold, charged to Options.Holds
	text       rowSender

	qmu     sync.Mutex         // guards qcancel, and user and host for other goroutines
	qcancel context.CancelFunc // cancels the running statement (KILL QUERY)

	release func() // gives the login's connection slot back (admit.Conns); nil before login
}

func newSession(srv *Server, c *mysql.Conn) *session {
	s := &session{
		srv:        srv,
		c:          c,
		id:         c.ConnectionID,
		autocommit: true,
		vars:       make(map[string]*string),
		stmts:      make(map[uint32]*prepared),
	}
	s.tc, _ = c.Conn.(*timeoutConn)
	s.log = srv.log.With(logConn, s.id)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.syncFlags()
	return s
}

// sessionOf returns the session vitess keeps for c.
func sessionOf(c *mysql.Conn) *session {
	s, _ := c.ClientData.(*session)
	return s
}

// login records the authenticated user, takes the session's engine
// connection and ends the handshake deadline. It runs on the connection's
// goroutine before any command.
func (s *session) login(u auth.User, host string, release func()) error {
	conn, err := s.srv.db.Conn(s.ctx)
	if err != nil {
		return err
	}
	s.conn, s.release = conn, release
	s.holds = s.srv.opts.Holds.Session(u.Name)
	s.qmu.Lock()
	s.user, s.host = u, host
	s.qmu.Unlock()
	s.log = s.log.With(logUser, u.Name)
	if s.tc != nil {
		s.tc.authenticated()
	}
	return nil
}

// authorize checks the session's user may run stmt, through
// Options.Authorize when the server set one.
func (s *session) authorize(stmt *engine.Stmt) error {
	check := func(u auth.User) error { return stmt.Authorize(context.Background(), u) }
	if a := s.srv.opts.Authorize; a != nil {
		check = func(u auth.User) error { return a(u, stmt) }
	}
	if err := check(s.user); err != nil {
		return errorf(mysql.ERSpecifiedAccessDenied, sqlStateSyntax, "Access denied; %v", err)
	}
	return nil
}

// refreshUser reads the session's user again from the users store before
// a command: a role changed by a users-file reload or quiver user applies
// to the next statement, and a removed user's session runs nothing more.
func (s *session) refreshUser() error {
	users := s.srv.opts.Users
	if users == nil || s.srv.authDisabled() {
		return nil
	}
	u, ok := users.Lookup(s.userName())
	if !ok {
		return errorf(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError,
			"Access denied for user '%s': the user no longer exists; this connection can run nothing more", s.userName())
	}
	s.qmu.Lock()
	s.user.Role = u.Role
	s.qmu.Unlock()
	return nil
}

// kill interrupts the running statement and closes the connection. It may
// be called from any goroutine.
func (s *session) kill() {
	s.cancel()
	s.c.Close()
}

// interrupt cancels the statement running on the session, if any. It may
// be called from any goroutine.
func (s *session) interrupt() {
	s.qmu.Lock()
	if s.qcancel != nil {
		s.qcancel()
	}
	s.qmu.Unlock()
}

// userName is the logged-in user's name. It may be called from any
// goroutine.
func (s *session) userName() string {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return s.user.Name
}

// running reports whether a statement is running. It may be called from
// any goroutine.
func (s *session) running() bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return s.qcancel != nil
}

// statementContext returns the context a statement runs under, which
// interrupt cancels, and the function that ends it.
func (s *session) statementContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.qmu.Lock()
	s.qcancel = cancel
	// The user rides along for the database's prepare hook, which
	// refuses some statements before DuckDB prepares them.
	ctx = auth.ContextWithUser(ctx, s.user)
	s.qmu.Unlock()
	return ctx, func() {
		s.qmu.Lock()
		s.qcancel = nil
		s.qmu.Unlock()
		cancel()
	}
}

// engineConn returns the session's engine connection. It is taken at login,
// and again after COM_RESET_CONNECTION gave back one that held state.
func (s *session) engineConn(ctx context.Context) (*engine.Conn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	conn, err := s.srv.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	s.conn = conn
	return conn, nil
}

// releaseConn gives the engine connection back: to the pool when the
// client left no state on it, else closed, so that one client's default
// schema, temporary tables or settings never reach another client.
func (s *session) releaseConn() {
	if s.conn == nil {
		return
	}
	if s.dirty {
		s.conn.Close()
	} else {
		s.conn.Release() // rolls back an open transaction
	}
	s.conn, s.dirty, s.inTxn, s.database = nil, false, false, ""
}

// close ends the session when its connection has gone.
func (s *session) close() {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeStatements()
	s.releaseConn()
	if s.release != nil {
		s.release()
	}
	s.srv.removeSession(s)
}

// reset returns the session to the state of a new connection, for
// COM_RESET_CONNECTION.
func (s *session) reset() {
	s.closeStatements()
	if s.inTxn && s.conn != nil {
		if _, err := s.conn.Exec(s.ctx, "ROLLBACK"); err != nil {
			s.dirty = true // let the pool not have it
		}
	}
	s.inTxn = false
	if s.dirty {
		s.releaseConn()
	}
	s.autocommit = true
	s.vars = make(map[string]*string)
	s.locks, s.savepoints, s.deferred = tableLocks{}, savepoints{}, nil
	s.syncFlags()
}

// syncFlags sets the status flags vitess sends in OK and EOF packets.
func (s *session) syncFlags() {
	var flags uint16
	if s.noBackslashEscapes() {
		flags |= statusNoBackslashEscapes
	}
	if s.autocommit {
		flags |= mysql.ServerStatusAutocommit
	}
	if s.inTxn {
		flags |= mysql.ServerInTransaction
	}
	s.c.StatusFlags = flags
}

// clientWatchDelay is how long a statement runs before the session starts
// watching for its client to hang up; shorter statements pay nothing.
const clientWatchDelay = 100 * time.Millisecond

// watchClient interrupts the running statement if the client closes its
// connection, which a statement busy computing would otherwise only learn
// when it writes its result. It must only be used while the connection's
// goroutine runs the statement (not for a cursor, whose fetches vitess
// reads meanwhile). The returned function ends the watch.
func (s *session) watchClient() func() {
	if s.tc == nil {
		return func() {}
	}
	var (
		mu    sync.Mutex
		ended bool
		stop  func()
	)
	timer := time.AfterFunc(clientWatchDelay, func() {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			stop = watchPeerClose(s.tc.Conn, func() {
				s.log.Debug("mysql client hung up; interrupting its statement")
				s.interrupt()
			})
		}
	})
	return func() {
		timer.Stop()
		mu.Lock()
		ended = true
		st := stop
		mu.Unlock()
		if st != nil {
			st()
		}
	}
}
