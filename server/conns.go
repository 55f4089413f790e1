package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
)

// Connections, on Flight as on MySQL, are counted in two pools
// (admit.Conns): those still logging in, and those logged in. One user
// held every connection of a server started with --max-connections 20,
// so that the admin's login got error 1040; and 25 sockets that never
// logged in locked the admin out too, until the 10 s handshake timeout
// closed them. Now:
//   - a connection that has not logged in counts only against the
//     pending pool (--max-handshakes): when a new one comes to a full
//     pool the oldest is closed, so idle sockets cannot keep a client out,
//     and each is closed --handshake-timeout (5 s) after it came;
//   - a logged-in connection counts against --max-connections, the last
//     --admin-reserved-connections (2) of which only admins may take,
//     and against its user's --max-user-connections, admins excepted.
//
// A MySQL connection logs in with its handshake. A Flight connection has
// no login of its own: it counts as logged in, as the user of its first
// call that authenticates (a Basic login or a bearer token), until it
// closes; gRPC's health checks, which need no credentials, do not log a
// connection in. A call on a connection that cannot log in gets
// RESOURCE_EXHAUSTED, and the connection is closed at its handshake
// timeout. A Flight connection whose login call is still running at the
// timeout (a Basic login waits its turn for an Argon2id check, and a
// thousand clients logging in at once wait seconds) gets another
// timeout's time.

// DefaultAdminReserved is Limits.AdminReservedConnections' default.
const DefaultAdminReserved = 2

// DefaultHandshakeTimeout is Limits.HandshakeTimeout's default: a client
// on a LAN logs in within milliseconds (a Flight Basic login's Argon2id
// check takes about 50 ms), one across the world within a second or two.
const DefaultHandshakeTimeout = 5 * time.Second

// connDefaults fills in the connection limits' defaults; MaxConnections
// must be set.
func (l *Limits) connDefaults() {
	switch {
	case l.AdminReservedConnections == 0:
		l.AdminReservedConnections = min(DefaultAdminReserved, l.MaxConnections/2)
	case l.AdminReservedConnections < 0:
		l.AdminReservedConnections = 0
	}
	if l.MaxUserConnections <= 0 {
		l.MaxUserConnections = max(1, (l.MaxConnections-l.AdminReservedConnections)/2)
	}
	if l.MaxHandshakes <= 0 {
		l.MaxHandshakes = l.MaxConnections
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = DefaultHandshakeTimeout
	}
}

// connLimits are the limits of one endpoint.
func (l Limits) connLimits() admit.ConnLimits {
	return admit.ConnLimits{Max: l.MaxConnections, AdminReserved: l.AdminReservedConnections,
		PerUser: l.MaxUserConnections, MaxPending: l.MaxHandshakes}
}

// connListener counts Flight's connections: each is pending from its
// accept until a call logs it in (login, from the interceptors), and is
// closed at its handshake timeout if none has.
type connListener struct {
	net.Listener
	conns     *admit.Conns
	handshake time.Duration
	log       *slog.Logger

	mu     sync.Mutex
	byPeer map[string]*countedConn // open connections, by the client's address
}

func newConnListener(ln net.Listener, lim Limits, log *slog.Logger) *connListener {
	return &connListener{Listener: ln, conns: admit.NewConns("flight", lim.connLimits()), handshake: lim.HandshakeTimeout,
		log: log, byPeer: map[string]*countedConn{}}
}

func (l *connListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countedConn{Conn: c, l: l, peer: c.RemoteAddr().String()}
	l.mu.Lock()
	l.byPeer[cc.peer] = cc
	l.mu.Unlock()
	flightConnsOpen.Inc()
	cc.mu.Lock()
	cc.pending = l.conns.Pend(func() { cc.Close() })
	cc.timer = time.AfterFunc(l.handshake, cc.handshakeOver)
	cc.mu.Unlock()
	return cc, nil
}

// countedConn is one Flight connection.
type countedConn struct {
	net.Conn
	l    *connListener
	peer string
	once sync.Once

	mu       sync.Mutex
	pending  *admit.Pending
	timer    *time.Timer
	release  func() // set once a call logged it in
	inflight int    // calls running on it
}

// handshakeOver closes the connection unless a call has logged it in,
// or is running (logging in, most likely).
func (c *countedConn) handshakeOver() {
	c.mu.Lock()
	in := c.release != nil
	if !in && c.inflight > 0 {
		c.timer.Reset(c.l.handshake)
		in = true
	}
	c.mu.Unlock()
	if !in {
		c.l.log.Debug("flight connection closed: no login within the handshake timeout", "peer", c.peer, "handshake_timeout", c.l.handshake)
		c.Close()
	}
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.byPeer[c.peer] == c {
			delete(c.l.byPeer, c.peer)
		}
		c.l.mu.Unlock()
		c.mu.Lock()
		c.pending.Done()
		if c.timer != nil {
			c.timer.Stop()
		}
		if c.release != nil {
			c.release()
		}
		c.mu.Unlock()
		flightConnsOpen.Dec()
	})
	return c.Conn.Close()
}

// conn is the connection a call came on, or nil.
func (l *connListener) conn(ctx context.Context) *countedConn {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byPeer[p.Addr.String()]
}

// enter counts a call running on its connection, from before it is
// authenticated, until the function it returns is called.
func (l *connListener) enter(ctx context.Context) func() {
	c := l.conn(ctx)
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	c.inflight++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.inflight--
		c.mu.Unlock()
	}
}

// login logs the call's connection in as the call's user, unless it is
// in already; a connection past a limit gets RESOURCE_EXHAUSTED.
func (l *connListener) login(ctx context.Context) error {
	u, ok := auth.UserFromContext(ctx)
	if !ok {
		return nil
	}
	c := l.conn(ctx)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.release != nil {
		return nil
	}
	release, err := l.conns.Admit(u.Name, u.Role.IsAdmin())
	if err != nil {
		flightConnsRefused.Inc()
		var ce *admit.ConnError
		if errors.As(err, &ce) {
			l.log.Warn("flight login refused: too many connections", "user", u.Name, "peer", c.peer, "err", err)
		}
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	c.release = release
	c.pending.Done()
	c.timer.Stop()
	return nil
}

// enterUnary and enterStream run before the authentication
// interceptors, and count the call on its connection.
func (l *connListener) enterUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	defer l.enter(ctx)()
	return h(ctx, req)
}

func (l *connListener) enterStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	defer l.enter(ss.Context())()
	return h(srv, ss)
}

// unary and stream run after the authentication interceptors, which put
// the caller in the context.
func (l *connListener) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := l.login(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (l *connListener) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := l.login(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}
