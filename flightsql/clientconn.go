package flightsql

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/stats"
)

// clientConns is the gRPC stats handler that numbers each client
// connection (HTTP/2 transport) and tells the server when one closes, so
// that what a client left open on it goes at once rather than at an idle
// timeout: a process that dies, or a driver that closes its connection
// without ending its transaction, rolls it back.
//
// What is tied to a connection: a transaction, to the connection its
// latest call came on (a client that reconnected and went on using it
// moves it to the new connection); a script's held last statement, to
// the connection that ran the script. Prepared statements are not: their
// handles carry their SQL and run on any connection and any replica, and
// they hold no DuckDB connection, so the idle timeout suffices.
//
// Behind a proxy that multiplexes clients over its own connections (an L7
// load balancer), a client closing its connection closes none of the
// server's; its transaction then goes at the transaction idle timeout. A
// transaction is bound to the replica holding its DuckDB connection in
// any case: its tickets list no other location.
type clientConns struct {
	s    *Server
	next atomic.Uint64
}

type clientConnKey struct{}

// clientConn is the number of the client connection a call came on; 0
// for a context that came through no connection.
func clientConn(ctx context.Context) uint64 {
	id, _ := ctx.Value(clientConnKey{}).(uint64)
	return id
}

// TagConn numbers a new connection; every call on it sees the number
// (the contexts of its streams derive from the one returned).
func (h *clientConns) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, clientConnKey{}, h.next.Add(1))
}

// HandleConn rolls back what the connection left open when it ends.
func (h *clientConns) HandleConn(ctx context.Context, st stats.ConnStats) {
	if _, ok := st.(*stats.ConnEnd); ok {
		h.s.clientClosed(clientConn(ctx))
	}
}

// TagRPC is part of stats.Handler; calls need nothing more.
func (h *clientConns) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC is part of stats.Handler; calls need nothing more.
func (h *clientConns) HandleRPC(context.Context, stats.RPCStats) {}

// clientClosed rolls back the transactions whose latest call came on
// client connection id, and closes the held results of the scripts it
// ran. The rollbacks run on a goroutine of their own: a call of the
// transaction may still be ending (its context is canceled with the
// connection), and gRPC's transport waits on this handler.
func (s *Server) clientClosed(id uint64) {
	if id == 0 {
		return
	}
	now := time.Now()
	var held []*heldQuery
	var txns []*txn
	s.mu.Lock()
	for hid, h := range s.held {
		if h.client == id {
			delete(s.held, hid)
			held = append(held, h)
		}
	}
	for _, t := range s.txns {
		if t.client == id {
			s.dropTxnLocked(t, whyClosed, now)
			txns = append(txns, t)
		}
	}
	s.mu.Unlock()
	if len(held) == 0 && len(txns) == 0 {
		return
	}
	// Every ConnEnd comes before grpc.Server's Stop or GracefulStop
	// returns, so before Shutdown waits on s.wg.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.rollBack(held, txns, whyClosed)
	}()
}
