package flightsql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
)

// BeginTransaction opens a transaction on a connection of its own. It is
// rolled back when it makes no call for the transaction idle timeout, or
// when the client connection its latest call came on closes.
func (s *Server) BeginTransaction(ctx context.Context, _ flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	lease, err := s.holdSession(ctx).Take(admit.HoldTxn, 0)
	if err != nil {
		return nil, toStatus(err)
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		lease.Release()
		return nil, status.Errorf(codes.Unavailable, "get connection: %v", err)
	}
	if _, err := c.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
		c.Release()
		lease.Release()
		return nil, toStatus(err)
	}
	t := &txn{id: newID(), owner: owner(ctx), conn: c, last: time.Now(), lease: lease}
	s.mu.Lock()
	s.txns[t.id] = t
	txnsOpen.Inc()
	cc := connOf(ctx)
	tied := s.tieTxnLocked(t, cc)
	s.mu.Unlock()
	if !tied {
		// Its client is gone already: nobody would ever use it.
		s.txnClientClosed(t, cc)
		return nil, status.Error(codes.Canceled, "begin transaction: the client connection closed")
	}
	return []byte(t.id), nil
}

// EndTransaction commits or rolls back, and frees the connection. Only
// the user who began the transaction may end it. Rolling back a
// transaction the server already rolled back succeeds; committing it
// fails with FailedPrecondition, saying why it was rolled back.
func (s *Server) EndTransaction(ctx context.Context, req flightsql.ActionEndTransactionRequest) error {
	id := string(req.GetTransactionId())
	s.mu.Lock()
	t := s.txns[id]
	mine := t != nil && t.owner == owner(ctx)
	if mine {
		delete(s.txns, id)
		t.client.forget(t)
	}
	s.mu.Unlock()
	switch {
	case t == nil:
		err := s.txnGone(ctx, id)
		var ended *txnEndedError
		if errors.As(err, &ended) && req.GetAction() == flightsql.EndTransactionRollback {
			return nil
		}
		return toStatus(err)
	case !mine:
		return errNotOwner("transaction", id)
	}
	txnsOpen.Dec()
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.release()
	switch req.GetAction() {
	case flightsql.EndTransactionCommit:
		if _, err := t.conn.Exec(ctx, "COMMIT"); err != nil {
			return toStatus(err)
		}
	case flightsql.EndTransactionRollback:
		if _, err := t.conn.Exec(ctx, "ROLLBACK"); err != nil {
			return toStatus(err)
		}
	default:
		t.conn.Exec(ctx, "ROLLBACK")
		return status.Errorf(codes.InvalidArgument, "unknown end-transaction action %v; the transaction was rolled back", req.GetAction())
	}
	return nil
}

// useTxn takes the caller's transaction id for a call: it waits for the
// transaction's call before it to end, and ties the transaction to the
// call's client connection. The call gives it back with done.
func (s *Server) useTxn(ctx context.Context, id string) (*txn, error) {
	s.mu.Lock()
	t := s.txns[id]
	s.mu.Unlock()
	if t == nil {
		return nil, toStatus(s.txnGone(ctx, id))
	}
	if t.owner != owner(ctx) {
		return nil, errNotOwner("transaction", id)
	}
	t.mu.Lock()
	// It may have ended while this call waited for the one before.
	s.mu.Lock()
	live := s.txns[id] == t
	cc := connOf(ctx)
	tied := !live || s.tieTxnLocked(t, cc)
	s.mu.Unlock()
	if !live || !tied {
		t.mu.Unlock()
		if !tied {
			// This call's connection ended while it waited: the
			// transaction goes as its client did.
			s.txnClientClosed(t, cc)
		}
		return nil, toStatus(s.txnGone(ctx, id))
	}
	return t, nil
}

// tieTxnLocked ties t to cc, the client connection of its latest call,
// which rolls it back when it ends (a nil cc, a call from no connection,
// leaves it where it was). It reports false when cc has ended already;
// the caller then rolls t back with txnClientClosed(t, cc). The caller
// holds s.mu, and t is open.
func (s *Server) tieTxnLocked(t *txn, cc *clientConn) bool {
	if cc == nil || cc == t.client {
		return true
	}
	t.client.forget(t)
	t.client = cc
	return cc.onEnd(t, func() { s.txnClientClosed(t, cc) })
}

// txnClientClosed rolls t back because cc, the client connection of its
// latest call, ended; a t that ended already, or moved to another
// connection since, is left alone. The rollback runs on a goroutine of
// its own: a call of the transaction may still be ending (its context is
// canceled with the connection), and gRPC's transport waits on its stats
// handler, which calls this.
func (s *Server) txnClientClosed(t *txn, cc *clientConn) {
	s.mu.Lock()
	live := s.txns[t.id] == t && t.client == cc
	if live {
		s.dropTxnLocked(t, whyClosed, time.Now())
	}
	s.mu.Unlock()
	if !live {
		return
	}
	// Every ConnEnd comes before grpc.Server's Stop or GracefulStop
	// returns, and every call of a transaction before its handler
	// returns, so before Shutdown waits on s.wg.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.rollBack(nil, []*txn{t}, whyClosed)
	}()
}

// done ends a call of the transaction: its idle time starts now.
func (t *txn) done() {
	t.last = time.Now()
	t.mu.Unlock()
}

// txnGone is the error for a transaction id that names no open
// transaction: a *txnEndedError when the server rolled it back on its
// own (and the caller began it), else an unknown or finished
// transaction.
func (s *Server) txnGone(ctx context.Context, id string) error {
	s.mu.Lock()
	e, ok := s.ended[id]
	s.mu.Unlock()
	switch {
	case !ok:
		return status.Errorf(codes.InvalidArgument, "unknown or finished transaction %q", id)
	case e.owner != owner(ctx):
		return errNotOwner("transaction", id)
	}
	return &txnEndedError{id: id, reason: e.reason}
}

// txnEndedError refuses a transaction the server rolled back on its own,
// saying why: the client learns that its writes are gone, rather than
// that the handle is unknown.
type txnEndedError struct {
	id, reason string
}

func (e *txnEndedError) Error() string {
	return fmt.Sprintf("transaction %s was rolled back %s; its changes are gone, begin a new one", e.id, e.reason)
}

// endedTxn is a transaction the server rolled back on its own, kept for
// the idle timeout (Options.IdleTimeout) so that its handle's next use
// says why.
type endedTxn struct {
	owner, reason string
	at            time.Time
}

// maxEndedTxns bounds the rolled-back transactions remembered, against a
// client that begins and abandons them in a loop; past it, an arbitrary
// one is forgotten (its handle is then just unknown).
const maxEndedTxns = 10000

// Why the server rolls back a transaction on its own (the why label of
// quiver_flight_transactions_rolled_back_total).
const (
	whyIdle   = "idle"
	whyClosed = "connection_closed"
)

// dropTxnLocked takes t out of the open transactions and remembers why;
// the caller holds s.mu and then rolls t back with rollBack.
func (s *Server) dropTxnLocked(t *txn, why string, now time.Time) {
	reason := "when the client connection of its latest call closed"
	if why == whyIdle {
		reason = fmt.Sprintf("after %v without a call (--txn-idle-timeout)", s.opts.TxnIdleTimeout)
	}
	delete(s.txns, t.id)
	t.client.forget(t)
	if len(s.ended) >= maxEndedTxns {
		for id := range s.ended {
			delete(s.ended, id)
			break
		}
	}
	s.ended[t.id] = endedTxn{owner: t.owner, reason: reason, at: now}
	txnsOpen.Dec()
	txnsRolledBack.WithLabelValues(why).Inc()
}

// rollBack closes held results, then rolls back transactions, all
// already taken out of the server's maps. A held result of a
// transaction holds the transaction's lock, so it goes first; a call of
// the transaction still running (its client gone, its context canceled)
// is waited for.
func (s *Server) rollBack(held []*heldQuery, txns []*txn, why string) {
	for _, h := range held {
		h.close()
	}
	for _, t := range txns {
		t.mu.Lock()
		t.release()
		t.mu.Unlock()
		s.log.Info("rolled back transaction", "txn", t.id, "user", t.owner, "why", why)
	}
}

// BeginSavepoint is refused: DuckDB has no savepoints, and GetSqlInfo says
// so (FLIGHT_SQL_SERVER_TRANSACTION is TRANSACTION, not SAVEPOINT).
func (s *Server) BeginSavepoint(context.Context, flightsql.ActionBeginSavepointRequest) ([]byte, error) {
	return nil, status.Error(codes.Unimplemented, "savepoints are not supported: DuckDB has no SAVEPOINT")
}

// EndSavepoint is refused; see BeginSavepoint.
func (s *Server) EndSavepoint(context.Context, flightsql.ActionEndSavepointRequest) error {
	return status.Error(codes.Unimplemented, "savepoints are not supported: DuckDB has no SAVEPOINT")
}
