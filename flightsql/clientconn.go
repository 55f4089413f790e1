package flightsql

import (
	"context"
	"sync"

	"google.golang.org/grpc/stats"

	"github.com/quiverdata/quiver/admit"
)

// What a client keeps on the server belongs to a gRPC client connection
// (HTTP/2 transport), as a MySQL session's belongs to its connection:
// when the connection ends (the client closed it, or vanished and
// keepalive found out within a minute, or it sat idle past the idle
// timeout), it goes at once, not at the idle reaper's next pass, and the
// memory it held goes back to the budget. gRPC's stats handler says when
// a connection begins and ends (connTracker); each connection's
// clientConn rides on the context of every call made over it, and runs
// what was registered with onEnd when it ends.
//
// What is tied to a connection:
//   - a prepared statement and a script's held last statement, to the
//     connection that made them. A prepared statement's handle stays
//     valid: it carries its SQL (and small parameters), so a client that
//     reconnects may go on using it; this server prepares it again.
//   - a transaction, to the connection its latest call came on (a client
//     that reconnected and went on using it moves it to the new
//     connection). It is rolled back when that connection closes: a
//     process that dies, or a driver that closes its connection without
//     ending its transaction.
//
// Behind a proxy that multiplexes clients over its own connections (an L7
// load balancer), a client closing its connection closes none of the
// server's; what it held then goes at the idle timeouts. A transaction is
// bound to the replica holding its DuckDB connection in any case: its
// tickets list no other location.

// clientConn is one client connection: its accounts with the server's
// Holds, one per user who called over it, and what to close when it ends.
type clientConn struct {
	holds *admit.Holds

	mu       sync.Mutex
	ended    bool
	sessions map[string]*admit.HoldSession
	closers  map[any]func()
}

type clientConnKey struct{}

// connTracker is the gRPC stats handler that gives each connection its
// clientConn and closes what it holds when it ends.
type connTracker struct{ holds *admit.Holds }

func (t connTracker) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, clientConnKey{}, &clientConn{holds: t.holds})
}

func (connTracker) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); ok {
		if cc, _ := ctx.Value(clientConnKey{}).(*clientConn); cc != nil {
			cc.end()
		}
	}
}

func (connTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (connTracker) HandleRPC(context.Context, stats.RPCStats) {}

// connOf is the connection ctx's call came over; nil outside a call.
func connOf(ctx context.Context) *clientConn {
	cc, _ := ctx.Value(clientConnKey{}).(*clientConn)
	return cc
}

// session is user's account on the connection; a call made outside any
// connection (none in the server) gets an account of its own.
func (cc *clientConn) session(h *admit.Holds, user string) *admit.HoldSession {
	if cc == nil {
		return h.Session(user)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.sessions == nil {
		cc.sessions = map[string]*admit.HoldSession{}
	}
	s := cc.sessions[user]
	if s == nil {
		s = h.Session(user)
		cc.sessions[user] = s
	}
	return s
}

// onEnd has closeFn called, once, when the connection ends, unless
// forget(key) comes first; a later onEnd for the same key replaces it.
// It reports false, and registers nothing, when the connection has ended
// already: the caller closes at once. closeFn runs in gRPC's transport,
// which waits for it, so what may block goes on a goroutine of its own.
func (cc *clientConn) onEnd(key any, closeFn func()) bool {
	if cc == nil {
		return true
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.ended {
		return false
	}
	if cc.closers == nil {
		cc.closers = map[any]func(){}
	}
	cc.closers[key] = closeFn
	return true
}

// forget drops what onEnd registered for key.
func (cc *clientConn) forget(key any) {
	if cc == nil {
		return
	}
	cc.mu.Lock()
	delete(cc.closers, key)
	cc.mu.Unlock()
}

// end closes everything the connection holds.
func (cc *clientConn) end() {
	cc.mu.Lock()
	cc.ended = true
	closers := cc.closers
	cc.closers = nil
	cc.mu.Unlock()
	for _, fn := range closers {
		fn()
	}
	if len(closers) > 0 {
		connEndCloses.Add(float64(len(closers)))
	}
}
