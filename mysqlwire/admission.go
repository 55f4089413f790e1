package mysqlwire

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
)

// statementTimeout is how long a statement may take: the server's query
// timeout, or for a SELECT the session's max_execution_time
// (milliseconds, as MySQL reads it) when that is lower. A session may
// lower the server's limit, never raise it. Zero means no bound;
// fromSession reports whether max_execution_time applies.
func (s *session) statementTimeout(query bool) (d time.Duration, fromSession bool) {
	var asked time.Duration
	if query {
		if v, _, ok := s.variable("max_execution_time"); ok && v != nil {
			if ms, err := strconv.ParseInt(*v, 10, 64); err == nil && ms > 0 && ms < math.MaxInt64/int64(time.Millisecond) {
				asked = time.Duration(ms) * time.Millisecond
			}
		}
	}
	return admit.SessionLimit(s.srv.opts.QueryTimeout, asked)
}

// withTimeout bounds ctx by the statement's timeout; cancel must be
// called.
// It also marks ctx for the admission controller's list of queries, from
// which an admin may cancel it.
func (s *session) withTimeout(ctx context.Context, query bool) (context.Context, context.CancelFunc) {
	d, fromSession := s.statementTimeout(query)
	source := "the server's --query-timeout"
	if fromSession {
		source = "max_execution_time"
	}
	return admit.Bound(ctx, "mysql", s.user.Name, d, source)
}

// classKey is what the classifier knows sql by: its text, in the
// database the session last chose with USE (or COM_INIT_DB), where its
// unqualified names resolve. (An admin's SET search_path is not seen
// here; it can cost a statement its lane, never its result.)
func (s *session) classKey(sql string) admit.Key {
	return admit.Key{Scope: s.database, SQL: sql}
}

// admit waits for stmt's turn to run (package admit): its lane from the
// classifier, by k (see classKey).
func (s *session) admit(ctx context.Context, conn *engine.Conn, stmt *engine.Stmt, k admit.Key) (*admit.Slot, error) {
	var explain func() ([]byte, error)
	if stmt.NumParams() == 0 {
		explain = func() ([]byte, error) { return conn.ExplainJSON(ctx, k.SQL) }
	}
	slot, err := s.srv.opts.Admission.AdmitSQL(ctx, s.srv.opts.Classifier, k, explain)
	if err != nil {
		return nil, s.stmtError(ctx, err)
	}
	return slot, nil
}

// stmtError maps a busy server to error 1040 and the statement timeout to
// error 3024, each with its message; anything else is left to sqlError.
func (s *session) stmtError(ctx context.Context, err error) error {
	var busy *admit.BusyError
	if errors.As(err, &busy) {
		return mysql.NewSQLError(mysql.ERConCount, mysql.SSUnknownSQLState, "%s", busy.Error())
	}
	if te, ok := admit.TimedOut(ctx); ok {
		return mysql.NewSQLError(mysql.ERQueryTimeout, mysql.SSUnknownSQLState,
			"Query execution was interrupted, maximum statement execution time exceeded (%s, %s)", te.D, te.Source)
	}
	var ce *admit.CanceledError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &ce) {
		return mysql.NewSQLError(mysql.ERQueryInterrupted, mysql.SSUnknownSQLState, "Query execution was interrupted: %s", ce.Error())
	}
	return err
}
