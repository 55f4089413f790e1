package flightsql

import (
	"context"
	"sync"

	"google.golang.org/grpc/stats"

	"github.com/quiverdata/quiver/admit"
)

// A client's prepared statements and held results belong to the gRPC
// connection that made them, as a MySQL session's belong to its
// connection: when the connection ends (the client closed it, or
// vanished and keepalive found out within a minute, or it sat idle past
// the idle timeout), they are dropped at once, not at the idle reaper's
// next pass, and the memory they held goes back to the budget. Handles
// stay valid: a prepared statement's handle carries its SQL (and small
// parameters), so a client that reconnects may go on using it; this
// server prepares it again. gRPC's stats handler says when a connection
// begins and ends (connTracker); each connection's clientConn rides on
// the context of every call made over it.

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
// forget(key) comes first. It reports false, and registers nothing, when
// the connection has ended already: the caller closes at once.
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
