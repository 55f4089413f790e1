package flightsql

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// heldQuery is the last statement of a script, prepared on its connection
// and waiting for its fetch by the user who ran the script (owner).
type heldQuery struct {
	owner   string
	sql     string
	stmt    *engine.Stmt
	release func()
	created time.Time
	// lease charges it to the session that ran the script; conn is the
	// connection that did, which closes it when it ends.
	lease *admit.Lease
	conn  *clientConn
	// txn is the transaction the script ran in, if any: the held
	// statement holds its lock until fetched, and goes with it.
	txn string
}

func (h *heldQuery) close() {
	h.stmt.Close()
	h.release()
	h.lease.Release()
	h.conn.forget(h)
}

// takeHeld removes and returns the held statement id names, if it is the
// caller's; nil when there is none.
func (s *Server) takeHeld(ctx context.Context, id string) (*heldQuery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hq := s.held[id]
	if hq == nil {
		return nil, nil
	}
	if hq.owner != owner(ctx) {
		return nil, errNotOwner("statement result", id)
	}
	delete(s.held, id)
	return hq, nil
}

// dropHeld forgets and closes hq, held under id, unless a fetch or a
// cancel took it first.
func (s *Server) dropHeld(id string, hq *heldQuery) {
	s.mu.Lock()
	mine := s.held[id] == hq
	if mine {
		delete(s.held, id)
	}
	s.mu.Unlock()
	if mine {
		hq.close()
	}
}

// countSchema is the result schema of DDL and DML.
var countSchema = arrow.NewSchema([]arrow.Field{{Name: "Count", Type: arrow.PrimitiveTypes.Int64}}, nil)

// GetFlightInfoStatement plans a statement. DDL and DML run here, at once,
// so they take effect whether or not the client fetches; a query is only
// prepared, for its schema, and runs when fetched. A read query outside a
// transaction goes to the Planner, which may split it into several
// endpoints that any replica can serve.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	// Preparing and classifying a statement are small work, which bulk
	// results yield to; running DDL or DML, or planning a bulk query's
	// endpoints, is not.
	planned := s.opts.Admission.Urgent()
	defer planned()
	c, release, err := s.acquire(ctx, cmd.GetTransactionId())
	if err != nil {
		return nil, err
	}
	// The statement and the connection are let go however this ends, a
	// panic included (a transaction's stays locked otherwise), unless a
	// held query takes them.
	var st *engine.Stmt
	held := false
	defer func() {
		if held {
			return
		}
		if st != nil {
			st.Close()
		}
		release()
	}()
	st, multi, err := s.prepare(ctx, c, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	if !st.IsQuery() {
		planned()
		n, err := s.execStmt(ctx, c, st, cmd.GetQuery())
		if err != nil {
			return nil, err
		}
		return s.statementInfo(ctx, desc, countSchema, handle{Count: &n})
	}
	schema, err := st.Schema()
	if err != nil {
		return nil, toStatus(err)
	}
	if multi {
		// The statements before it have run; keep the last one prepared.
		lease, err := s.holdSession(ctx).Take(admit.HoldResult, int64(len(cmd.GetQuery())))
		if err != nil {
			return nil, toStatus(err) // the deferred close lets st and the connection go
		}
		h := handle{Held: newID()}
		hq := &heldQuery{owner: owner(ctx), sql: cmd.GetQuery(), stmt: st, release: release, created: time.Now(),
			lease: lease, conn: connOf(ctx), txn: string(cmd.GetTransactionId())}
		s.mu.Lock()
		s.held[h.Held] = hq
		s.mu.Unlock()
		held = true
		if !hq.conn.onEnd(hq, func() { s.dropHeld(h.Held, hq) }) {
			s.dropHeld(h.Held, hq)
		}
		return s.statementInfo(ctx, desc, schema, h)
	}
	read := st.Access() == auth.AccessRead
	st.Close()
	st = nil
	catalog, dbSchema := sessionDefaults(ctx)
	h := handle{Query: cmd.GetQuery(), Txn: string(cmd.GetTransactionId()), Catalog: catalog, Schema: dbSchema}
	if h.Txn != "" || !read {
		return s.statementInfo(ctx, desc, schema, h)
	}
	if lane, ok := s.classify(ctx, c, h.Query); ok {
		// A small query gains nothing from parallel endpoints, so it
		// skips the planner, whose own queries cost more than it does.
		h.Lane = lane.String()
		if lane == admit.Small {
			return s.statementInfo(ctx, desc, schema, h)
		}
	}
	planned()
	eps, err := s.endpoints(ctx, c, h)
	if err != nil {
		return nil, err
	}
	return s.flightInfoEndpoints(desc, schema, eps), nil
}

// classify picks sql's admission lane on c (package admit): from its
// history, or its plan's estimate (a plan that reads files, such as a
// lake table's, is never small by its estimate). ok is false when the
// server has no classifier.
func (s *Server) classify(ctx context.Context, c *engine.Conn, sql string) (admit.Lane, bool) {
	if s.opts.Classifier == nil {
		return admit.Bulk, false
	}
	return s.opts.Classifier.Lane(ctx, classKey(ctx, sql), func() ([]byte, error) { return c.ExplainJSON(ctx, sql) }), true
}

// statementInfo is the FlightInfo of one endpoint whose ticket is h,
// signed for the caller.
func (s *Server) statementInfo(ctx context.Context, desc *flight.FlightDescriptor, schema *arrow.Schema, h handle) (*flight.FlightInfo, error) {
	tkt, err := s.statementTicket(ctx, h)
	if err != nil {
		return nil, err
	}
	return s.flightInfo(desc, schema, tkt), nil
}

// flightInfo is the FlightInfo of one endpoint whose ticket is ticket.
func (s *Server) flightInfo(desc *flight.FlightDescriptor, schema *arrow.Schema, ticket []byte) *flight.FlightInfo {
	return s.flightInfoEndpoints(desc, schema, []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}})
}

// flightInfoEndpoints is the FlightInfo of a result in eps. Its row count
// is unknown until fetched.
func (s *Server) flightInfoEndpoints(desc *flight.FlightDescriptor, schema *arrow.Schema, eps []*flight.FlightEndpoint) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.mem),
		FlightDescriptor: desc,
		Endpoint:         eps,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// GetSchemaStatement returns a statement's result schema without running
// it.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	c, release, err := s.acquire(ctx, cmd.GetTransactionId())
	if err != nil {
		return nil, err
	}
	defer release()
	st, err := c.Prepare(ctx, cmd.GetQuery())
	if err != nil {
		return nil, toStatus(err)
	}
	defer st.Close()
	schema := countSchema
	if st.IsQuery() {
		if schema, err = st.Schema(); err != nil {
			return nil, toStatus(err)
		}
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, s.mem)}, nil
}

// DoPutCommandStatementUpdate runs DDL or DML and returns the rows changed.
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	c, release, err := s.acquire(ctx, cmd.GetTransactionId())
	if err != nil {
		return 0, err
	}
	defer release()
	st, _, err := s.prepare(ctx, c, cmd.GetQuery())
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return s.execStmt(ctx, c, st, cmd.GetQuery())
}

// PollFlightInfoStatement plans the statement at once: quiver's FlightInfo
// is ready as soon as the statement is prepared, so the poll is complete.
func (s *Server) PollFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	info, err := s.GetFlightInfoStatement(ctx, cmd, desc)
	if err != nil {
		return nil, err
	}
	return &flight.PollInfo{Info: info, Progress: proto1()}, nil
}

// PollFlightInfoPreparedStatement is the prepared-statement form of
// PollFlightInfoStatement.
func (s *Server) PollFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	info, err := s.GetFlightInfoPreparedStatement(ctx, cmd, desc)
	if err != nil {
		return nil, err
	}
	return &flight.PollInfo{Info: info, Progress: proto1()}, nil
}

func proto1() *float64 { v := 1.0; return &v }
