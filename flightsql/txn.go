package flightsql

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
)

// BeginTransaction opens a transaction on a connection of its own.
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
	s.mu.Unlock()
	txnsOpen.Inc()
	return []byte(t.id), nil
}

// EndTransaction commits or rolls back, and frees the connection. Only
// the user who began the transaction may end it.
func (s *Server) EndTransaction(ctx context.Context, req flightsql.ActionEndTransactionRequest) error {
	id := string(req.GetTransactionId())
	s.mu.Lock()
	t := s.txns[id]
	mine := t != nil && t.owner == owner(ctx)
	if mine {
		delete(s.txns, id)
	}
	s.mu.Unlock()
	switch {
	case t == nil:
		return status.Errorf(codes.InvalidArgument, "unknown or finished transaction %q", id)
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

// BeginSavepoint is refused: DuckDB has no savepoints, and GetSqlInfo says
// so (FLIGHT_SQL_SERVER_TRANSACTION is TRANSACTION, not SAVEPOINT).
func (s *Server) BeginSavepoint(context.Context, flightsql.ActionBeginSavepointRequest) ([]byte, error) {
	return nil, status.Error(codes.Unimplemented, "savepoints are not supported: DuckDB has no SAVEPOINT")
}

// EndSavepoint is refused; see BeginSavepoint.
func (s *Server) EndSavepoint(context.Context, flightsql.ActionEndSavepointRequest) error {
	return status.Error(codes.Unimplemented, "savepoints are not supported: DuckDB has no SAVEPOINT")
}
