package flightsql

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// emptySchema is the dataset schema of a prepared update.
var emptySchema = arrow.NewSchema(nil, nil)

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
	if errors.Is(err, engine.ErrScript) {
		// Unimplemented makes ADBC, which prepares everything it executes,
		// run the script as a plain statement instead.
		return res, status.Errorf(codes.Unimplemented, "%v; run a script as a statement", err)
	}
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
		// No columns: the Flight SQL JDBC driver routes a prepared
		// statement by its dataset schema alone, as an update when it is
		// empty; a Count column made it run DDL and DML as queries.
		p.dataset = emptySchema
	}
	s.mu.Lock()
	s.prepared[p.id] = p
	s.mu.Unlock()
	preparedOpen.Inc()
	isUpdate := !p.isQuery
	return flightsql.ActionCreatePreparedStatementResult{
		Handle:          []byte(p.id),
		DatasetSchema:   p.dataset,
		ParameterSchema: announcedParams(p.params),
		IsUpdate:        &isUpdate,
	}, nil
}

// announcedParams is the parameter schema sent to clients: TIMESTAMP and
// TIME parameters as milliseconds. The Flight SQL JDBC driver writes a
// java.sql.Timestamp's or Time's milliseconds into whatever vector the
// schema names, unscaled (apache/arrow-java#838), so a microsecond schema
// stored 1970 dates; JDBC's values carry milliseconds anyway. Clients that
// bind Arrow data of their own types (ADBC, Go) are unaffected, as any unit
// binds.
func announcedParams(schema *arrow.Schema) *arrow.Schema {
	fields := schema.Fields()
	changed := false
	for i, f := range fields {
		switch t := f.Type.(type) {
		case *arrow.TimestampType:
			if t.Unit != arrow.Millisecond && t.Unit != arrow.Second {
				fields[i].Type = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: t.TimeZone}
				changed = true
			}
		case *arrow.Time64Type:
			fields[i].Type = arrow.FixedWidthTypes.Time32ms
			changed = true
		}
	}
	if !changed {
		return schema
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md)
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
	schema, err := s.boundSchema(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.flightInfo(desc, schema, desc.GetCmd()), nil
}

// boundSchema is a prepared query's result schema for its bound
// parameters. When DuckDB cannot type a result column before values are
// bound (SELECT ? AS x), the prepared schema holds null placeholders, and
// clients (ADBC) refuse a stream whose schema differs from the FlightInfo's;
// so a read-only query is started with its first parameter row to learn the
// real types.
func (s *Server) boundSchema(ctx context.Context, p *prepared) (*arrow.Schema, error) {
	if !hasNullField(p.dataset) {
		return p.dataset, nil
	}
	bound := p.takeBound()
	defer releaseRecs(bound)
	first := -1
	for i, rec := range bound {
		if rec.NumRows() > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return p.dataset, nil
	}
	c, release, err := s.acquire(ctx, p.txn)
	if err != nil {
		return nil, err
	}
	defer release()
	st, err := c.Prepare(ctx, p.sql)
	if err != nil {
		return nil, toStatus(err)
	}
	defer st.Close()
	if st.Access() != auth.AccessRead || st.NumParams() != int(bound[first].NumCols()) {
		return p.dataset, nil
	}
	if err := st.BindRow(bound[first], 0); err != nil {
		return nil, toStatus(err)
	}
	rows, err := st.Query(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	defer rows.Close()
	return rows.Schema(), nil
}

func hasNullField(schema *arrow.Schema) bool {
	for _, f := range schema.Fields() {
		if f.Type.ID() == arrow.NULL {
			return true
		}
	}
	return false
}

// DoPutPreparedStatementUpdate executes a prepared update for every
// parameter row, all-or-nothing, and returns the rows changed. A plain
// INSERT … VALUES (?, …) runs as one columnar statement (batchparams.go);
// anything else runs once per row in one transaction.
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
	if n, ok, err := s.execParamBatches(ctx, c, p.sql, params); ok {
		return n, err
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
