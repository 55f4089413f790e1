package client

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// Txn is a transaction opened with Begin: its statements run on one
// server connection and see each other's changes until Commit or
// Rollback. The server rolls it back when it makes no call for the
// server's transaction idle timeout, or when the client closes. A Txn
// runs one call at a time: the server makes a second wait for the first.
type Txn struct {
	c  *Client
	tx *flightsql.Txn
}

// Begin opens a transaction (Flight SQL BeginTransaction).
func (c *Client) Begin(ctx context.Context) (*Txn, error) {
	tx, err := c.sql.BeginTransaction(c.Context(ctx))
	if err != nil {
		return nil, err
	}
	return &Txn{c: c, tx: tx}, nil
}

// Query runs a statement in the transaction and streams its result, as
// Client.Query does.
func (t *Txn) Query(ctx context.Context, sql string) (*Result, error) {
	ctx = t.c.Context(ctx)
	info, err := t.tx.Execute(ctx, sql)
	if err != nil {
		return nil, err
	}
	return t.c.fetch(ctx, info)
}

// Exec runs DDL or DML in the transaction and returns the rows changed.
func (t *Txn) Exec(ctx context.Context, sql string) (int64, error) {
	return t.tx.ExecuteUpdate(t.c.Context(ctx), sql)
}

// Commit ends the transaction, keeping its changes.
func (t *Txn) Commit(ctx context.Context) error { return t.tx.Commit(t.c.Context(ctx)) }

// Rollback ends the transaction, dropping its changes.
func (t *Txn) Rollback(ctx context.Context) error { return t.tx.Rollback(t.c.Context(ctx)) }
