package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/internal/duckdbsql"
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
	// maybeTemp is set once a CREATE ran: the connection may own
	// temporary objects, which must not reach the pool's next user.
	maybeTemp bool
	// catalog and schema are what Use last set.
	catalog, schema string
	// inHook is set while the database's PrepareHook runs on c.
	inHook bool
	// maybeUse is set once a SET ran, USE included: Release then puts
	// the database's defaults back for the pool's next user.
	maybeUse bool
	// checkStmts are the statements the check of what a non-admin's
	// statement would call runs (authorizeCalls), prepared when first
	// needed.
	checkStmts map[string]duckdb.PreparedStatement
	// allowed are the files the lake catalog planned for the statement
	// being prepared (AllowFiles); each prepare clears them.
	allowed map[string]bool
	// inTxn is set while an explicit transaction (BEGIN) is open, which
	// began at txnGeneration of the plan cache; txnUnknown when a
	// transaction statement could not be told apart. changesCatalog is
	// set while a statement that may change the catalog runs on c, or
	// its transaction holds one uncommitted (see planCache).
	inTxn, txnUnknown, changesCatalog bool
	txnGeneration                     uint64
	// inCheckpointCheck is set while forcesCheckpoint plans a statement
	// again, so that its EXPLAIN is not checked in turn.
	inCheckpointCheck bool
	// stmts are the statements kept for their text (stmtcache.go).
	stmts stmtCache
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
	c.inTxn, c.txnUnknown = false, false
	c.endCatalogChange()
	if c.maybeUse {
		c.maybeUse = false
		var res duckdb.Result
		if duckdb.Query(c.conn, "USE "+QuoteIdent(c.db.DefaultCatalog())+".main", &res) == duckdb.StateError {
			c.broken = true
		}
		duckdb.DestroyResult(&res)
		c.catalog, c.schema = "", ""
	}
	if c.maybeTemp {
		c.maybeTemp = false
		if c.hasTempObjects() {
			// Temporary objects live as long as their connection.
			c.Close()
			return
		}
	}
	if c.broken {
		c.Close()
		return
	}
	c.db.put(c)
}

// hasTempObjects reports whether the connection created temporary tables,
// views, sequences or macros.
func (c *Conn) hasTempObjects() bool {
	const q = `SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary)
		+ (SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal)
		+ (SELECT count(*) FROM duckdb_sequences() WHERE temporary)
		+ (SELECT count(*) FROM duckdb_functions() WHERE database_name = 'temp' AND NOT internal)`
	var res duckdb.Result
	defer duckdb.DestroyResult(&res)
	if duckdb.Query(c.conn, q, &res) == duckdb.StateError {
		return true // be safe: do not pool what we cannot check
	}
	return duckdb.ValueInt64(&res, 0, 0) > 0
}

// interruptOnCancel interrupts the running statement if ctx is canceled
// until the returned stop is called. stop reports whether it stopped the
// interrupt from happening. If the interrupt had already started, stop
// waits for it to finish and marks the connection broken (Release closes
// it): an interrupt that lands late, or the flag it leaves, must never
// reach the next statement, or the next user of a pooled connection.
func (c *Conn) interruptOnCancel(ctx context.Context) func() bool {
	done := make(chan struct{})
	after := context.AfterFunc(ctx, func() {
		defer close(done)
		c.Interrupt()
	})
	stopped, ok := false, false
	return func() bool {
		if stopped {
			return ok
		}
		stopped, ok = true, after()
		if !ok {
			<-done
			c.broken = true
		}
		return ok
	}
}

// Close closes the connection, rolling back any open transaction.
func (c *Conn) Close() {
	if c.conn.Ptr == nil {
		return
	}
	c.endCatalogChange()
	c.stmts.clear()
	for _, ps := range c.checkStmts {
		duckdb.DestroyPrepare(&ps)
	}
	c.checkStmts = nil
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
	last, _, err := c.PrepareLast(ctx, sql, nil)
	if err != nil {
		return 0, err
	}
	defer last.Close()
	if err := last.BindValues(args...); err != nil {
		return 0, err
	}
	return last.Exec(ctx)
}

// Query runs every statement in sql but the last to completion, then
// streams the last one's result. Parameters, if given, bind to the last
// statement. The caller must Close the returned Rows.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (*Rows, error) {
	return c.query(ctx, false, sql, args...)
}

// QueryTransient is Query for a consumer that keeps nothing of a batch
// once it has released it (Stmt.QueryTransient).
func (c *Conn) QueryTransient(ctx context.Context, sql string, args ...any) (*Rows, error) {
	return c.query(ctx, true, sql, args...)
}

func (c *Conn) query(ctx context.Context, transient bool, sql string, args ...any) (*Rows, error) {
	last, _, err := c.PrepareLast(ctx, sql, nil)
	if err != nil {
		return nil, err
	}
	if err := last.BindValues(args...); err != nil {
		last.Close()
		return nil, err
	}
	rows, err := last.query(ctx, transient)
	if err != nil {
		last.Close()
		return nil, err
	}
	rows.ownStmt = true
	return rows, nil
}

// QueryInt64 runs a query whose first row's first column is a BIGINT, and
// returns that value.
func (c *Conn) QueryInt64(ctx context.Context, sql string, args ...any) (int64, error) {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, errors.New("no row")
	}
	col, ok := rows.RecordBatch().Column(0).(*array.Int64)
	if !ok || col.Len() == 0 {
		return 0, fmt.Errorf("want one BIGINT, got %s", rows.RecordBatch().Column(0).DataType())
	}
	return col.Value(0), nil
}

// PrepareLast runs every statement in sql but the last, then prepares the
// last one and returns it; multi reports whether there were several. Each
// statement is prepared only after the ones before it ran, so a script may
// use what it creates (CREATE TABLE t …; INSERT INTO t …). check, when not
// nil, is asked about each statement before it runs, the last one
// included: an error stops the script there.
func (c *Conn) PrepareLast(ctx context.Context, sql string, check func(*Stmt) error) (stmt *Stmt, multi bool, err error) {
	return c.prepare(ctx, sql, true, check)
}

// Prepare prepares one statement. SQL holding several statements is
// rejected; use Exec or Query for scripts.
func (c *Conn) Prepare(ctx context.Context, sql string) (*Stmt, error) {
	st, _, err := c.prepare(ctx, sql, false, nil)
	return st, err
}

func (c *Conn) prepare(ctx context.Context, sql string, script bool, check func(*Stmt) error) (*Stmt, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if strings.TrimSpace(sql) == "" {
		return nil, false, errorf(KindInvalid, "empty statement")
	}
	if strings.IndexByte(sql, 0) >= 0 {
		// DuckDB reads SQL as a C string: it would run the text up to
		// the NUL and ignore the rest, which no check could follow.
		return nil, false, errorf(KindInvalid, "the statement holds a NUL byte")
	}
	// Before the hook, which may parse the text itself (a lake table's
	// scan is planned from its syntax tree).
	if err := c.db.checkShape(sql); err != nil {
		attrs := []any{"err", err.Error(), "bytes", len(sql)}
		if u, ok := auth.UserFromContext(ctx); ok {
			attrs = append(attrs, "user", u.Name)
		}
		c.db.log.Warn("statement refused before parse", attrs...)
		return nil, false, err
	}
	if !c.inHook {
		c.allowed = nil
	}
	if err := c.runHook(ctx, sql); err != nil {
		return nil, false, err
	}
	// After the hook, whose refusal may say more (a server's export
	// root), and before DuckDB binds anything.
	if err := c.refuseBeforeBind(ctx, sql); err != nil {
		c.db.log.Warn("statement refused before prepare: it would read files as it binds", "err", err.Error())
		return nil, false, err
	}
	if s := c.takeStmt(sql); s != nil {
		if check != nil {
			if err := check(s); err != nil {
				s.Close()
				return nil, false, err
			}
		}
		return s, false, nil
	}
	generation, keepable := c.planCacheGeneration()
	var ext duckdb.ExtractedStatements
	n := duckdb.ExtractStatements(c.conn, sql, &ext)
	defer duckdb.DestroyExtracted(&ext)
	if n == 0 {
		msg := duckdb.ExtractStatementsError(ext)
		if msg == "" {
			return nil, false, errorf(KindInvalid, "no statement in %q", sql)
		}
		return nil, false, errorFromMessage(msg)
	}
	if n > 1 && !script {
		return nil, false, fmt.Errorf("prepare: %d statements given: %w", n, ErrScript)
	}
	texts := scriptTexts(c, sql, int(n), check != nil)
	for i := duckdb.IdxT(0); i < n; i++ {
		s := &Stmt{c: c, text: texts[i]}
		if duckdb.PrepareExtractedStatement(c.conn, ext, i, &s.ps) == duckdb.StateError {
			msg := duckdb.PrepareError(s.ps)
			duckdb.DestroyPrepare(&s.ps)
			text := texts[i]
			if text == "" {
				text = sql
			}
			return nil, n > 1, c.prepareFailed(ctx, text, msg)
		}
		if n == 1 {
			s.forceCheckpoint = c.forcesCheckpoint(ctx, sql)
			s.keep, s.generation = keepable && c.keepable(s, sql), generation
		}
		if check != nil {
			if err := check(s); err != nil {
				s.Close()
				return nil, n > 1, err
			}
		}
		if i == n-1 {
			return s, n > 1, nil
		}
		_, err := s.Exec(ctx)
		s.Close()
		if err != nil {
			return nil, true, err
		}
	}
	panic("unreachable")
}

// scriptTexts returns the text of each of the n statements DuckDB found
// in sql, for a check that reads them (a statement's own text is what
// its plan is checked by). DuckDB does not give a script's statements'
// texts, so the script is split by duckdbsql's lexer, and the split is
// held against DuckDB's parser: as many statements as DuckDB found, and
// each text one statement to DuckDB on its own. Where they disagree,
// the texts are empty and a check refuses what it cannot read.
func scriptTexts(c *Conn, sql string, n int, checked bool) []string {
	texts := make([]string, n)
	if n == 1 {
		texts[0] = sql
		return texts
	}
	if !checked {
		return texts
	}
	stmts, err := duckdbsql.Split(sql)
	if err != nil || len(stmts) != n {
		return texts
	}
	for i, st := range stmts {
		if c.CountStatements(st.Text) != 1 {
			return make([]string, n)
		}
		texts[i] = st.Text
	}
	return texts
}

// Use makes catalog and schema the connection's defaults for unqualified
// names (DuckDB's USE). Empty values mean the database's defaults. It only
// issues USE when the defaults change.
func (c *Conn) Use(ctx context.Context, catalog, schema string) error {
	if catalog == c.catalog && schema == c.schema {
		return nil
	}
	target := ""
	switch {
	case catalog == "" && schema == "":
		target = QuoteIdent(c.db.DefaultCatalog()) + ".main"
	case catalog == "":
		target = QuoteIdent(schema)
	case schema == "":
		target = QuoteIdent(catalog)
	default:
		target = QuoteIdent(catalog) + "." + QuoteIdent(schema)
	}
	if _, err := c.Exec(ctx, "USE "+target); err != nil {
		return err
	}
	c.catalog, c.schema = catalog, schema
	return nil
}

// errorFromMessage builds an engine error from a DuckDB message of the form
// "Catalog Error: …", where the C API gives no error type.
func errorFromMessage(msg string) error {
	if msg == "" {
		msg = "DuckDB reported an error without a message"
	}
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
