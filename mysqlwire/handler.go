package mysqlwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/engine"
)

// handler implements vitess's mysql.Handler over the engine. Per-connection
// state lives in a session kept in the connection's ClientData.
type handler struct{ srv *Server }

var _ mysql.Handler = (*handler)(nil)

func (h *handler) NewConnection(c *mysql.Conn) {
	defer h.srv.recoverConnPanic(c, nil)
	sess := newSession(h.srv, c)
	c.ClientData = sess
	connectionsOpen.Inc()
	h.srv.addSession(sess)
	sess.log.Debug("mysql connection opened", logRemote, c.RemoteAddr().String())
}

func (h *handler) ConnectionClosed(c *mysql.Conn) {
	defer h.srv.recoverConnPanic(c, nil)
	sess := sessionOf(c)
	if sess == nil {
		return
	}
	sess.close()
	connectionsOpen.Dec()
	sess.log.Debug("mysql connection closed")
}

func (h *handler) ConnectionAborted(c *mysql.Conn, reason string) error {
	h.srv.log.Debug("mysql connection aborted", logConn, c.ConnectionID, "reason", reason)
	return nil
}

// ComInitDB switches the default database, for COM_INIT_DB and for the
// database named in the login packet.
func (h *handler) ComInitDB(c *mysql.Conn, name string) (err error) {
	s := sessionOf(c)
	if !s.mu.TryLock() {
		return errBusy
	}
	defer s.mu.Unlock()
	defer s.recoverPanic(&err)
	ctx, done := s.statementContext()
	defer done()
	if err := s.useDatabase(ctx, name); err != nil {
		return sqlError(err)
	}
	return nil
}

// ComQuery runs a query for a client that did not ask for multiple
// statements. If the text holds several anyway, all run and the last one's
// result is returned.
func (h *handler) ComQuery(_ context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (err error) {
	s := sessionOf(c)
	if !s.mu.TryLock() {
		return errBusy
	}
	defer s.mu.Unlock()
	defer s.recoverPanic(&err)
	if err := s.startCommand(); err != nil {
		return err
	}
	s.sweepStatements()
	stmts := splitStatements(query, s.quoting())
	if len(stmts) == 0 {
		if hasComment(query) {
			return callback(&sqltypes.Result{}, false) // comments only: an OK, as in MySQL
		}
		return errEmptyQuery
	}
	for i, stmt := range stmts {
		out := &sink{send: func(r *sqltypes.Result) error { return callback(r, false) }, sender: &s.text}
		out.discard = i < len(stmts)-1
		err := s.run(cmdQuery, stmt, func(ctx context.Context) (int64, error) {
			defer s.watchClient()()
			return s.runStatement(ctx, stmt, out)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ComMultiQuery runs the first statement of query and returns the rest,
// which vitess hands back until nothing is left.
func (h *handler) ComMultiQuery(_ context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (rest string, err error) {
	s := sessionOf(c)
	if !s.mu.TryLock() {
		return "", errBusy
	}
	defer s.mu.Unlock()
	defer s.recoverPanic(&err)
	if err := s.startCommand(); err != nil {
		return "", err
	}
	s.sweepStatements()
	stmt, rest := splitStatement(query, s.quoting())
	for isBlankSQL(stmt) && rest != "" {
		stmt, rest = splitStatement(rest, s.quoting())
	}
	if isBlankSQL(stmt) {
		if hasComment(query) {
			return "", callback(&sqltypes.Result{}, false) // comments only: an OK, as in MySQL
		}
		return "", errEmptyQuery
	}
	more := rest != ""
	out := &sink{send: func(r *sqltypes.Result) error { return callback(r, more) }, sender: &s.text}
	err = s.run(cmdQuery, stmt, func(ctx context.Context) (int64, error) {
		defer s.watchClient()()
		return s.runStatement(ctx, stmt, out)
	})
	if err != nil {
		return "", err // MySQL stops a multi-statement query at its first error
	}
	return rest, nil
}

func (h *handler) WarningCount(*mysql.Conn) uint16 { return 0 }

// ComResetConnection returns the session to a fresh connection's state.
func (h *handler) ComResetConnection(c *mysql.Conn) (err error) {
	s := sessionOf(c)
	if !s.mu.TryLock() {
		return errBusy
	}
	defer s.mu.Unlock()
	defer s.recoverPanic(&err)
	s.reset()
	return nil
}

// ParserOptionsForConnection tells vitess's parser, which reads prepared
// statements to count their parameters, that "…" quotes an identifier, as
// in DuckDB.
func (h *handler) ParserOptionsForConnection(*mysql.Conn) (sqlparser.ParserOptions, error) {
	return sqlparser.ParserOptions{AnsiQuotes: true}, nil
}

// recoverPanic turns a panic in the handler into an error for the client,
// so that one bad value does not take the connection down with a stack
// trace. It counts and logs the panic: each one is a bug.
func (s *session) recoverPanic(err *error) {
	if r := recover(); r != nil {
		handlerPanics.Inc()
		s.log.Error("mysql handler panic", "panic", r, "stack", string(debug.Stack()))
		*err = errorf(mysql.ERUnknownError, mysql.SSUnknownSQLState, "internal error: %v", r)
	}
}

// recoverConnPanic is recoverPanic for the handler's calls outside a
// command: a connection opening or closing, a login. vitess recovers
// those too, but takes them for a malformed packet (vtlog.go); here they
// are logged with their stack and counted like any handler panic. A login
// fails with an error in *err; otherwise the connection is closed, and
// only it ends.
func (srv *Server) recoverConnPanic(c *mysql.Conn, err *error) {
	if r := recover(); r != nil {
		handlerPanics.Inc()
		srv.log.Error("mysql handler panic", logConn, c.ConnectionID, "panic", r, "stack", string(debug.Stack()))
		if err != nil {
			*err = errorf(mysql.ERUnknownError, mysql.SSUnknownSQLState, "internal error: %v", r)
			return
		}
		c.Close()
	}
}

// sink is where a statement's outcome goes.
type sink struct {
	// send passes a result (rows, or an OK when it has no fields) to
	// vitess.
	send func(*sqltypes.Result) error
	// sender formats result rows; its binary flag picks the protocol.
	sender *rowSender
	// discard runs the statement for its effect only: a statement before
	// the last one of a query sent without multi-statement support.
	discard bool
}

// emit passes a result to vitess. An error here is the client's
// connection failing, not the statement.
func (o *sink) emit(r *sqltypes.Result) error {
	if err := o.send(r); err != nil {
		return &sendError{err}
	}
	return nil
}

func (o *sink) ok(affected uint64) error {
	if o.discard {
		return nil
	}
	return o.emit(&sqltypes.Result{RowsAffected: affected})
}

func (o *sink) result(r *sqltypes.Result) error {
	if o.discard {
		return nil
	}
	if r.Fields == nil {
		return o.ok(r.RowsAffected)
	}
	return o.emit(r)
}

// sendError is a failure to write a result to the client.
type sendError struct{ err error }

func (e *sendError) Error() string { return "send result: " + e.err.Error() }
func (e *sendError) Unwrap() error { return e.err }

// run runs one statement under a context KILL QUERY can cancel, and
// records it in the metrics and, when it fails, the log.
func (s *session) run(command, sql string, fn func(ctx context.Context) (int64, error)) error {
	start := time.Now()
	s.srv.questions.Add(1)
	queriesTotal.WithLabelValues(command).Inc()
	ctx, done := s.statementContext()
	defer done()
	rows, err := fn(ctx)
	queryDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		se := sqlError(err)
		queryErrors.WithLabelValues(strconv.Itoa(se.Num)).Inc()
		level := slog.LevelDebug
		var send *sendError
		if se.Num == mysql.ERUnknownError && !errors.As(err, &send) {
			level = slog.LevelWarn // not the client's mistake
		}
		s.log.Log(ctx, level, "mysql statement failed", logSQL, truncate(sql, 200), logCode, se.Num, logErr, se.Message, logRows, rows)
		return se
	}
	s.log.Debug("mysql statement", logSQL, truncate(sql, 200), logRows, rows, logDur, time.Since(start))
	return nil
}

// runStatement runs one statement: through the compatibility layer when it
// is one DuckDB cannot answer, else on DuckDB.
func (s *session) runStatement(ctx context.Context, sql string, out *sink) (int64, error) {
	text := stripSQL(sql)
	if text == "" {
		return 0, out.ok(0) // an executable comment for a later version, which MySQL skips
	}
	c, handled, err := s.compat(ctx, text)
	switch {
	case err != nil:
		return 0, err
	case handled && c.sql == "":
		return int64(len(c.res.Rows)), out.result(c.res)
	case handled:
		sql = c.sql
	default:
		sql = duckSQL(sql)
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return 0, err
	}
	stmt, err := conn.Prepare(ctx, sql)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	return s.execute(ctx, stmt, sql, out)
}

// execute runs a prepared engine statement and sends its outcome: rows for
// a query, else an OK with the rows changed.
func (s *session) execute(ctx context.Context, stmt *engine.Stmt, sql string, out *sink) (int64, error) {
	if err := s.authorize(stmt); err != nil {
		return 0, err
	}
	typ := stmt.Type()
	if err := s.beforeStatement(ctx, typ); err != nil {
		return 0, err
	}
	query := stmt.IsQuery() && !out.discard
	ctx, cancel := s.withTimeout(ctx, query)
	defer cancel()
	key := s.classKey(sql)
	slot, err := s.admit(ctx, stmt.Conn(), stmt, key)
	if err != nil {
		return 0, err
	}
	var sent int64
	defer func() { slot.Finish(s.srv.opts.Classifier, key, sent) }()
	if query {
		// The rows are formatted into the sender's own buffers before
		// the next batch is read, so the batches' strings may come from
		// the recycling allocator (Stmt.QueryTransient).
		rows, err := stmt.QueryTransient(ctx)
		s.afterStatement(typ, sql)
		if err != nil {
			return 0, s.stmtError(ctx, err)
		}
		defer rows.Close()
		// The run slot is given back while a chunk of rows goes to the
		// client, which may be slow to read.
		send := out.emit
		if slot != nil {
			send = func(r *sqltypes.Result) error {
				slot.Pause()
				err := out.emit(r)
				if rerr := slot.Resume(ctx); err == nil && rerr != nil {
					err = s.stmtError(ctx, rerr)
				}
				return err
			}
		}
		sent, err = out.sender.sendRows(rows, send)
		return sent, s.stmtError(ctx, err)
	}
	n, err := stmt.Exec(ctx)
	s.afterStatement(typ, sql)
	if err != nil {
		return 0, s.stmtError(ctx, err)
	}
	return 0, out.ok(uint64(max(n, 0)))
}

// beforeStatement opens the implicit transaction of autocommit=0.
func (s *session) beforeStatement(ctx context.Context, typ duckdb.StatementType) error {
	if s.autocommit || s.inTxn || typ == duckdb.StatementTypeTransaction {
		return nil
	}
	if _, err := s.conn.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("begin implicit transaction: %w", err)
	}
	s.inTxn = true
	s.syncFlags()
	return nil
}

// afterStatement tracks what a statement did to the session: a transaction
// statement opens or ends a transaction, and any statement that may leave
// state on the engine connection (SET, USE, CREATE TEMP, PREPARE, ATTACH,
// …) marks it not to be pooled.
func (s *session) afterStatement(typ duckdb.StatementType, sql string) {
	switch typ {
	case duckdb.StatementTypeSelect, duckdb.StatementTypeInsert, duckdb.StatementTypeUpdate,
		duckdb.StatementTypeDelete, duckdb.StatementTypeExplain, duckdb.StatementTypeRelation,
		duckdb.StatementTypeAnalyze, duckdb.StatementTypeMergeInto:
	case duckdb.StatementTypeTransaction:
		word := strings.ToUpper(firstWord(stripSQL(sql)))
		s.inTxn = word == "BEGIN" || word == "START"
		s.syncFlags()
	default:
		s.dirty = true
	}
}

// firstWord returns the leading keyword of a statement.
func firstWord(text string) string {
	end := 0
	for end < len(text) && isIdentByte(text[end]) {
		end++
	}
	return text[:end]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
