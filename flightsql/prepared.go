package flightsql

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/engine"
)

// maxBoundRows caps the parameter rows a prepared query may hold.
const maxBoundRows = 1 << 20

// prepared is a client's prepared statement. It holds the SQL, its
// schemas and bound parameters, not a DuckDB connection: each execution
// prepares on a pooled connection (or the transaction's), so an abandoned
// handle costs a few bytes and no connection.
type prepared struct {
	id      string
	sql     string
	txn     []byte
	dataset *arrow.Schema
	params  *arrow.Schema
	isQuery bool

	mu    sync.Mutex
	bound []arrow.RecordBatch
	last  time.Time
}

func (p *prepared) idleSince(cutoff time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.Before(cutoff)
}

func (p *prepared) setBound(recs []arrow.RecordBatch) {
	p.mu.Lock()
	old := p.bound
	p.bound = recs
	p.last = time.Now()
	p.mu.Unlock()
	for _, r := range old {
		r.Release()
	}
}

// takeBound returns the bound parameters, retained for the caller.
func (p *prepared) takeBound() []arrow.RecordBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = time.Now()
	for _, r := range p.bound {
		r.Retain()
	}
	return append([]arrow.RecordBatch(nil), p.bound...)
}

func (p *prepared) close() { p.setBound(nil) }

func releaseRecs(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func (s *Server) getPrepared(h []byte) (*prepared, error) {
	s.mu.Lock()
	p := s.prepared[string(h)]
	s.mu.Unlock()
	if p == nil {
		return nil, status.Errorf(codes.InvalidArgument, "unknown or closed prepared statement %q", h)
	}
	return p, nil
}

// CreatePreparedStatement prepares the statement once to learn its dataset
// and parameter schemas and whether it is an update, which JDBC and ADBC
// use to route it.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	c, release, err := s.acquire(ctx, req.GetTransactionId())
	if err != nil {
		return res, err
	}
	defer release()
	st, err := c.Prepare(ctx, req.GetQuery())
	if err != nil {
		return res, toStatus(err)
	}
	defer st.Close()
	if err := s.authorize(ctx, st); err != nil {
		return res, err
	}
	p := &prepared{id: newID(), sql: req.GetQuery(), txn: req.GetTransactionId(), isQuery: st.IsQuery(), last: time.Now()}
	if p.params, err = st.ParamSchema(); err != nil {
		return res, toStatus(err)
	}
	if p.isQuery {
		if p.dataset, err = st.Schema(); err != nil {
			return res, toStatus(err)
		}
	} else {
		p.dataset = countSchema
	}
	s.mu.Lock()
	s.prepared[p.id] = p
	s.mu.Unlock()
	preparedOpen.Inc()
	isUpdate := !p.isQuery
	return flightsql.ActionCreatePreparedStatementResult{
		Handle:          []byte(p.id),
		DatasetSchema:   p.dataset,
		ParameterSchema: p.params,
		IsUpdate:        &isUpdate,
	}, nil
}

// ClosePreparedStatement forgets the statement and its parameters.
func (s *Server) ClosePreparedStatement(_ context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	s.mu.Lock()
	p := s.prepared[string(req.GetPreparedStatementHandle())]
	delete(s.prepared, string(req.GetPreparedStatementHandle()))
	s.mu.Unlock()
	if p == nil {
		return status.Errorf(codes.InvalidArgument, "unknown or closed prepared statement %q", req.GetPreparedStatementHandle())
	}
	preparedOpen.Dec()
	p.close()
	return nil
}

// GetSchemaPreparedStatement returns the dataset schema found at creation.
func (s *Server) GetSchemaPreparedStatement(_ context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, err := s.getPrepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(p.dataset, s.mem)}, nil
}

// DoPutPreparedStatementQuery binds parameter rows to a prepared query.
func (s *Server) DoPutPreparedStatementQuery(_ context.Context, cmd flightsql.PreparedStatementQuery, r flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	p, err := s.getPrepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	recs, err := readParams(r, p)
	if err != nil {
		return nil, err
	}
	p.setBound(recs)
	return []byte(p.id), nil
}

// readParams reads every parameter batch of a DoPut, checking its width.
func readParams(r flight.MessageReader, p *prepared) ([]arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	rows := 0
	for r.Next() {
		rec := r.RecordBatch()
		if int(rec.NumCols()) != p.params.NumFields() {
			releaseRecs(recs)
			return nil, invalidf("statement takes %d parameters, the batch has %d columns", p.params.NumFields(), rec.NumCols())
		}
		rows += int(rec.NumRows())
		if rows > maxBoundRows {
			releaseRecs(recs)
			return nil, status.Errorf(codes.ResourceExhausted, "more than %d parameter rows bound to a query", maxBoundRows)
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil && err != io.EOF {
		releaseRecs(recs)
		return nil, status.Errorf(codes.InvalidArgument, "read parameters: %v", err)
	}
	return recs, nil
}

// GetFlightInfoPreparedStatement runs a prepared update at once (with its
// bound parameters), or returns the FlightInfo whose ticket runs the query.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	p, err := s.getPrepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	if !p.isQuery {
		bound := p.takeBound()
		defer releaseRecs(bound)
		n, err := s.execPrepared(ctx, p, bound)
		if err != nil {
			return nil, err
		}
		return s.statementInfo(desc, countSchema, handle{Count: &n})
	}
	return s.flightInfo(desc, p.dataset, desc.GetCmd()), nil
}

// DoPutPreparedStatementUpdate executes a prepared update once per
// parameter row, all in one transaction, and returns the rows changed.
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, r flight.MessageReader) (int64, error) {
	p, err := s.getPrepared(cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	recs, err := readParams(r, p)
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		recs = p.takeBound()
	}
	defer releaseRecs(recs)
	return s.execPrepared(ctx, p, recs)
}

// execPrepared runs a non-query prepared statement for every parameter row,
// atomically: in the client's transaction, or in one of its own.
func (s *Server) execPrepared(ctx context.Context, p *prepared, params []arrow.RecordBatch) (int64, error) {
	c, release, err := s.acquire(ctx, p.txn)
	if err != nil {
		return 0, err
	}
	defer release()
	st, err := c.Prepare(ctx, p.sql)
	if err != nil {
		return 0, toStatus(err)
	}
	defer st.Close()
	if err := s.authorize(ctx, st); err != nil {
		return 0, err
	}
	if st.NumParams() == 0 || len(params) == 0 {
		if st.NumParams() > 0 {
			return 0, invalidf("statement takes %d parameters and none are bound", st.NumParams())
		}
		n, err := st.Exec(ctx)
		return n, toStatus(err)
	}
	own := len(p.txn) == 0
	if own {
		if _, err := c.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
			return 0, toStatus(err)
		}
	}
	total, err := execRows(ctx, st, params)
	if err != nil {
		if own {
			c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return 0, toStatus(err)
	}
	if own {
		if _, err := c.Exec(ctx, "COMMIT"); err != nil {
			return 0, toStatus(err)
		}
	}
	return total, nil
}

func execRows(ctx context.Context, st *engine.Stmt, params []arrow.RecordBatch) (int64, error) {
	var total int64
	for _, rec := range params {
		for row := 0; row < int(rec.NumRows()); row++ {
			if err := st.BindRow(rec, row); err != nil {
				return 0, err
			}
			n, err := st.Exec(ctx)
			if err != nil {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
}
