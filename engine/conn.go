package engine

import (
	"context"
	"strings"

	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// Conn is one DuckDB connection. A Conn belongs to one goroutine at a time:
// it must never be used by two goroutines at once, and a streaming result
// (Rows) holds its Conn until the Rows is closed.
type Conn struct {
	db        *DB
	conn      duckdb.Connection
	arrowOpts duckdb.ArrowOptions
	broken    bool
	// maybeTxn is set once a transaction statement ran on the connection;
	// Release then rolls back whatever may still be open.
	maybeTxn bool
}

// DB is the database this connection belongs to.
func (c *Conn) DB() *DB { return c.db }

// Release returns the connection to its database's pool. A transaction
// left open on it is rolled back first; a broken connection is closed.
func (c *Conn) Release() {
	if c.conn.Ptr == nil {
		return
	}
	if c.maybeTxn {
		var res duckdb.Result
		duckdb.Query(c.conn, "ROLLBACK", &res) // fails harmlessly when none is open
		duckdb.DestroyResult(&res)
		c.maybeTxn = false
	}
	if c.broken {
		c.Close()
		return
	}
	c.db.put(c)
}

// Close closes the connection, rolling back any open transaction.
func (c *Conn) Close() {
	if c.conn.Ptr == nil {
		return
	}
	duckdb.DestroyArrowOptions(&c.arrowOpts)
	duckdb.Disconnect(&c.conn)
	c.db.mu.Lock()
	c.db.open--
	c.db.mu.Unlock()
	connsOpen.Dec()
}

// Interrupt asks the statement running on this connection to stop. It is
// the one method that may be called from another goroutine.
func (c *Conn) Interrupt() { duckdb.Interrupt(c.conn) }

// Exec runs every statement in sql and returns the number of rows the last
// one changed. Parameters, if given, bind to the last statement.
func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	stmts, err := c.prepareAll(ctx, sql)
	if err != nil {
		return 0, err
	}
	defer closeAll(stmts)
	last := stmts[len(stmts)-1]
	if err := last.BindValues(args...); err != nil {
		return 0, err
	}
	var n int64
	for _, s := range stmts {
		if n, err = s.Exec(ctx); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Query runs every statement in sql but the last to completion, then
// streams the last one's result. Parameters, if given, bind to the last
// statement. The caller must Close the returned Rows.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (*Rows, error) {
	stmts, err := c.prepareAll(ctx, sql)
	if err != nil {
		return nil, err
	}
	last := stmts[len(stmts)-1]
	for _, s := range stmts[:len(stmts)-1] {
		if _, err := s.Exec(ctx); err != nil {
			closeAll(stmts)
			return nil, err
		}
	}
	for _, s := range stmts[:len(stmts)-1] {
		s.Close()
	}
	if err := last.BindValues(args...); err != nil {
		last.Close()
		return nil, err
	}
	rows, err := last.Query(ctx)
	if err != nil {
		last.Close()
		return nil, err
	}
	rows.ownStmt = true
	return rows, nil
}

// Prepare prepares one statement. SQL holding several statements is
// rejected; use Exec or Query for scripts.
func (c *Conn) Prepare(ctx context.Context, sql string) (*Stmt, error) {
	stmts, err := c.prepareAll(ctx, sql)
	if err != nil {
		return nil, err
	}
	if len(stmts) > 1 {
		closeAll(stmts)
		return nil, errorf(KindInvalid, "prepare: %d statements given, a prepared statement holds one", len(stmts))
	}
	return stmts[0], nil
}

// prepareAll splits sql into statements and prepares each. A statement can
// only be prepared after the ones before it have run when it depends on
// them (CREATE TABLE t …; INSERT INTO t …), so on a catalog error the
// earlier statements are run and preparation retried.
func (c *Conn) prepareAll(ctx context.Context, sql string) ([]*Stmt, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(sql) == "" {
		return nil, errorf(KindInvalid, "empty statement")
	}
	var ext duckdb.ExtractedStatements
	n := duckdb.ExtractStatements(c.conn, sql, &ext)
	defer duckdb.DestroyExtracted(&ext)
	if n == 0 {
		msg := duckdb.ExtractStatementsError(ext)
		if msg == "" {
			return nil, errorf(KindInvalid, "no statement in %q", sql)
		}
		return nil, errorFromMessage(msg)
	}
	stmts := make([]*Stmt, 0, n)
	for i := duckdb.IdxT(0); i < n; i++ {
		s := &Stmt{c: c}
		if duckdb.PrepareExtractedStatement(c.conn, ext, i, &s.ps) == duckdb.StateError {
			msg := duckdb.PrepareError(s.ps)
			duckdb.DestroyPrepare(&s.ps)
			if i > 0 && n > 1 {
				// A later statement may depend on an earlier one: run
				// what was prepared so far, then prepare again.
				for _, p := range stmts {
					if _, err := p.Exec(ctx); err != nil {
						closeAll(stmts)
						return nil, err
					}
				}
				closeAll(stmts)
				stmts = stmts[:0]
				s = &Stmt{c: c}
				if duckdb.PrepareExtractedStatement(c.conn, ext, i, &s.ps) == duckdb.StateError {
					msg = duckdb.PrepareError(s.ps)
					duckdb.DestroyPrepare(&s.ps)
					return nil, errorFromMessage(msg)
				}
				stmts = append(stmts, s)
				continue
			}
			closeAll(stmts)
			return nil, errorFromMessage(msg)
		}
		stmts = append(stmts, s)
	}
	return stmts, nil
}

func closeAll(stmts []*Stmt) {
	for _, s := range stmts {
		s.Close()
	}
}

// errorFromMessage builds an engine error from a DuckDB message of the form
// "Catalog Error: …", where the C API gives no error type.
func errorFromMessage(msg string) error {
	kind := KindInternal
	prefix, _, ok := strings.Cut(msg, " Error: ")
	if ok {
		switch prefix {
		case "Parser", "Syntax", "Binder", "Conversion", "Invalid Input", "Out of Range",
			"Not implemented", "Invalid type", "Mismatch Type", "Invalid Configuration", "Decimal", "Divide by Zero":
			kind = KindInvalid
		case "Catalog":
			kind = KindNotFound
			if strings.Contains(msg, "already exists") {
				kind = KindConstraint
			}
		case "Constraint":
			kind = KindConstraint
		case "INTERRUPT":
			kind = KindCanceled
		case "Permission":
			kind = KindPermission
		case "TransactionContext", "Transaction":
			kind = KindTransaction
		case "Out of Memory":
			kind = KindResource
		}
	}
	return &Error{Kind: kind, Msg: msg}
}
