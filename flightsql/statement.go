package flightsql

import (
	"context"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/engine"
)

// handle is what a statement ticket carries. A query ticket holds its SQL,
// so it can be fetched again and survives a server restart; DDL and DML ran
// when the FlightInfo was made, so their ticket carries the count.
type handle struct {
	Query   string `json:"q,omitempty"`
	Txn     string `json:"t,omitempty"`
	Catalog string `json:"c,omitempty"`
	Schema  string `json:"s,omitempty"`
	// Held names a statement that was prepared and kept for the fetch,
	// because it followed other statements in a script.
	Held string `json:"h,omitempty"`
	// Count is the row count of a statement that already ran.
	Count *int64 `json:"n,omitempty"`
}

// heldQuery is the last statement of a script, prepared on its connection
// and waiting for its fetch.
type heldQuery struct {
	stmt    *engine.Stmt
	release func()
	created time.Time
}

func (h *heldQuery) close() {
	h.stmt.Close()
	h.release()
}

// countSchema is the result schema of DDL and DML.
var countSchema = arrow.NewSchema([]arrow.Field{{Name: "Count", Type: arrow.PrimitiveTypes.Int64}}, nil)

// GetFlightInfoStatement plans a statement. DDL and DML run here, at once,
// so they take effect whether or not the client fetches; a query is only
// prepared, for its schema, and runs when fetched.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	c, release, err := s.acquire(ctx, cmd.GetTransactionId())
	if err != nil {
		return nil, err
	}
	st, multi, err := s.prepare(ctx, c, cmd.GetQuery())
	if err != nil {
		release()
		return nil, err
	}
	if !st.IsQuery() {
		defer release()
		defer st.Close()
		n, err := st.Exec(ctx)
		if err != nil {
			return nil, toStatus(err)
		}
		return s.statementInfo(desc, countSchema, handle{Count: &n})
	}
	schema, err := st.Schema()
	if err != nil {
		st.Close()
		release()
		return nil, toStatus(err)
	}
	catalog, dbSchema := sessionDefaults(ctx)
	h := handle{Query: cmd.GetQuery(), Txn: string(cmd.GetTransactionId()), Catalog: catalog, Schema: dbSchema}
	if multi {
		// The statements before it have run; keep the last one prepared.
		h = handle{Held: newID()}
		s.mu.Lock()
		s.held[h.Held] = &heldQuery{stmt: st, release: release, created: time.Now()}
		s.mu.Unlock()
	} else {
		st.Close()
		release()
	}
	return s.statementInfo(desc, schema, h)
}

func (s *Server) statementInfo(desc *flight.FlightDescriptor, schema *arrow.Schema, h handle) (*flight.FlightInfo, error) {
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode ticket: %v", err)
	}
	tkt, err := flightsql.CreateStatementQueryTicket(hb)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode ticket: %v", err)
	}
	return s.flightInfo(desc, schema, tkt), nil
}

func (s *Server) flightInfo(desc *flight.FlightDescriptor, schema *arrow.Schema, ticket []byte) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
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
	n, err := st.Exec(ctx)
	return n, toStatus(err)
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
