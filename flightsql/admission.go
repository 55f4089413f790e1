package flightsql

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// optQueryTimeout is the session option that bounds each of the session's
// statements: a duration ("30s", "2m"), or a number of milliseconds; 0 or
// empty goes back to the server's. It may lower the server's
// --query-timeout, never raise it (admit.SessionLimit).
const optQueryTimeout = "query_timeout"

// parseTimeout reads a query_timeout session option value.
func parseTimeout(v *flight.SessionOptionValue) (time.Duration, error) {
	switch x := v.GetOptionValue().(type) {
	case *pb.SessionOptionValue_StringValue:
		if ms, err := strconv.ParseInt(x.StringValue, 10, 64); err == nil && ms >= 0 {
			return time.Duration(ms) * time.Millisecond, nil
		}
		d, err := time.ParseDuration(x.StringValue)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("query_timeout %q: want a duration such as 30s, or milliseconds", x.StringValue)
		}
		return d, nil
	case *pb.SessionOptionValue_Int64Value:
		if x.Int64Value < 0 {
			return 0, fmt.Errorf("query_timeout %d: want milliseconds, not negative", x.Int64Value)
		}
		return time.Duration(x.Int64Value) * time.Millisecond, nil
	case *pb.SessionOptionValue_DoubleValue:
		if x.DoubleValue < 0 {
			return 0, fmt.Errorf("query_timeout %g: want seconds, not negative", x.DoubleValue)
		}
		return time.Duration(x.DoubleValue * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("query_timeout: want a string, an integer or a double")
}

// queryTimeout is the caller's session option where it is below the
// server's --query-timeout, else the server's; fromSession reports which.
func (s *Server) queryTimeout(ctx context.Context) (d time.Duration, fromSession bool) {
	var asked time.Duration
	if sess, err := session.GetSessionFromContext(ctx); err == nil && sess != nil {
		if v := sess.GetSessionOption(optQueryTimeout); v != nil {
			if d, err := parseTimeout(v); err == nil {
				asked = d
			}
		}
	}
	return admit.SessionLimit(s.opts.QueryTimeout, asked)
}

// withQueryTimeout bounds ctx by the caller's query timeout, and marks it
// for the admission controller's list of queries, from which an admin may
// cancel it. The cancel function must be called.
func (s *Server) withQueryTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	u, _ := auth.UserFromContext(ctx)
	d, fromSession := s.queryTimeout(ctx)
	source := "the server's --query-timeout"
	if fromSession {
		source = "the session's " + optQueryTimeout + " option"
	}
	return admit.Bound(ctx, "flight", u.Name, d, source)
}

// classKey is what the classifier knows sql by: its text in the scope
// of the caller's session, the catalog and schema that unqualified names
// resolve in (see sessionDefaults). A USE run as SQL inside a
// transaction is not seen here; the statements after it are classified
// as in the session's scope, which can cost them their lane, never their
// result.
func classKey(ctx context.Context, sql string) admit.Key {
	catalog, schema := sessionDefaults(ctx)
	if catalog == "" && schema == "" {
		return admit.Key{SQL: sql}
	}
	return admit.Key{Scope: engine.QuoteIdent(catalog) + "." + engine.QuoteIdent(schema), SQL: sql}
}

// preadmit admits sql before a connection is taken for it, when its
// ticket names its lane (ticketLane, from GetFlightInfo) or the
// classifier knows it from an earlier run: a query waiting its turn then
// holds no DuckDB connection. ok is false when the query must be
// prepared and admitted with admitStmt. k is the query's key (classKey).
func (s *Server) preadmit(ctx context.Context, k admit.Key, ticketLane string) (slot *admit.Slot, ok bool, err error) {
	if s.opts.Admission == nil {
		return nil, true, nil
	}
	lane, ok := admit.ParseLane(ticketLane)
	if !ok {
		lane, ok = s.opts.Classifier.Known(k)
	}
	if !ok {
		return nil, false, nil
	}
	admit.NoteSQL(ctx, k.SQL)
	slot, err = s.opts.Admission.Admit(ctx, lane)
	if err != nil {
		return nil, true, s.admitStatus(ctx, err)
	}
	return slot, true, nil
}

// admitStmt waits for st's turn to run (package admit) and returns its
// slot; k is its key (classKey), by which the classifier remembers it. A
// nil controller admits at once.
func (s *Server) admitStmt(ctx context.Context, c *engine.Conn, st *engine.Stmt, k admit.Key) (*admit.Slot, error) {
	var explain func() ([]byte, error)
	if st.NumParams() == 0 {
		explain = func() ([]byte, error) { return c.ExplainJSON(ctx, k.SQL) }
	}
	slot, err := s.opts.Admission.AdmitSQL(ctx, s.opts.Classifier, k, explain)
	if err != nil {
		return nil, s.admitStatus(ctx, err)
	}
	return slot, nil
}

// execStmt runs a statement that returns no rows once it is admitted,
// under the caller's query timeout, and returns the rows it changed.
func (s *Server) execStmt(ctx context.Context, c *engine.Conn, st *engine.Stmt, sql string) (int64, error) {
	ctx, cancel := s.withQueryTimeout(ctx)
	defer cancel()
	q, err := s.admitRun(ctx, c, st, sql)
	if err != nil {
		return 0, err
	}
	defer s.finish(q)
	n, err := st.Exec(ctx)
	return n, s.ctxStatus(ctx, err)
}

// admitRun admits st, whose text is sql (see admitStmt), and returns its
// run.
func (s *Server) admitRun(ctx context.Context, c *engine.Conn, st *engine.Stmt, sql string) (*queryRun, error) {
	k := classKey(ctx, sql)
	slot, err := s.admitStmt(ctx, c, st, k)
	if err != nil {
		return nil, err
	}
	return &queryRun{slot: slot, key: k}, nil
}

// admitStatus maps an admission or timeout error to its status:
// RESOURCE_EXHAUSTED for a busy server, DEADLINE_EXCEEDED for the query
// timeout.
func (s *Server) admitStatus(ctx context.Context, err error) error {
	var busy *admit.BusyError
	if errors.As(err, &busy) {
		return status.Error(codes.ResourceExhausted, busy.Error())
	}
	return s.ctxStatus(ctx, err)
}

// ctxStatus maps err to a status, naming the query timeout when that is
// what ended ctx.
func (s *Server) ctxStatus(ctx context.Context, err error) error {
	if te, ok := admit.TimedOut(ctx); ok {
		return status.Error(codes.DeadlineExceeded, te.Error())
	}
	var ce *admit.CanceledError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &ce) {
		return status.Error(codes.Canceled, ce.Error())
	}
	return toStatus(err)
}
