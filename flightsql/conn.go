package flightsql

import (
	"context"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
)

// txn is an open transaction: one connection pinned to it. Calls in the
// transaction take its lock, so the connection is used by one call at a
// time. It belongs to the user who began it: nobody else may run
// statements in it, read its uncommitted rows or end it.
type txn struct {
	id    string
	owner string
	mu    sync.Mutex
	conn  *engine.Conn
	last  time.Time // guarded by mu: when its latest call ended
	// client is the client connection its latest call came on; when
	// that connection ends, the transaction is rolled back (guarded by
	// the server's mu; see tieTxnLocked).
	client *clientConn
	// temps are temporary tables ingested in the transaction, dropped
	// when it ends (guarded by mu).
	temps []string
	// lease charges the transaction to the session that began it
	// (Options.Holds); release gives it back.
	lease *admit.Lease
}

// acquire returns the connection a call runs on and the function that
// gives it back: the transaction's connection when txnID names one (which
// must be the caller's), else a pooled connection. The session's catalog
// and schema are applied.
func (s *Server) acquire(ctx context.Context, txnID []byte) (*engine.Conn, func(), error) {
	catalog, schema := sessionDefaults(ctx)
	if len(txnID) > 0 {
		t, err := s.useTxn(ctx, string(txnID))
		if err != nil {
			return nil, nil, err
		}
		if err := t.conn.Use(ctx, catalog, schema); err != nil {
			t.done()
			return nil, nil, toStatus(err)
		}
		return t.conn, t.done, nil
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, nil, status.Errorf(codes.Unavailable, "get connection: %v", err)
	}
	if err := c.Use(ctx, catalog, schema); err != nil {
		c.Release()
		return nil, nil, toStatus(err)
	}
	return c, c.Release, nil
}

// sessionDefaults reads the catalog and schema session options.
func sessionDefaults(ctx context.Context) (catalog, schema string) {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil || sess == nil {
		return "", ""
	}
	if v := sess.GetSessionOption(optCatalog); v != nil {
		catalog = v.GetStringValue()
	}
	if v := sess.GetSessionOption(optSchema); v != nil {
		schema = v.GetStringValue()
	}
	return catalog, schema
}

// prepare prepares sql's last statement on c (running any before it) and
// checks the caller may run it.
func (s *Server) prepare(ctx context.Context, c *engine.Conn, sql string) (*engine.Stmt, bool, error) {
	st, multi, err := c.PrepareLast(ctx, sql, func(st *engine.Stmt) error { return s.authorize(ctx, st) })
	if err != nil {
		return nil, false, toStatus(err)
	}
	return st, multi, nil
}

func (s *Server) authorize(ctx context.Context, st *engine.Stmt) error {
	if s.opts.Authorize == nil {
		return nil
	}
	return s.opts.Authorize(ctx, st)
}
