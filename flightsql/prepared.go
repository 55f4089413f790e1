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

	"github.com/quiverdata/quiver/admit"
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
//
// The handle a client holds carries the SQL itself (preparedHandle), so
// any replica can run it; this server's prepared map is only a cache, of
// the schemas and of parameters bound here. A handle whose id this server
// does not know is prepared again, and authorized again, from its SQL.
type prepared struct {
	id string
	// owner is the user who prepared the statement; the handle is sealed
	// for them with sign.
	owner   string
	sign    signer
	sql     string
	txn     []byte
	handle  []byte // the encoded preparedHandle, without parameters
	dataset *arrow.Schema
	params  *arrow.Schema
	isQuery bool
	// lease charges the statement, and the parameters bound to it, to
	// the session that prepared it (admit.Holds); conn is the connection
	// it was made over, which closes it when it ends.
	lease *admit.Lease
	conn  *clientConn

	mu    sync.Mutex
	bound []arrow.RecordBatch
	// boundIPC is bound encoded for a ticket, or nil when there is none
	// or it cannot travel (boundLocal).
	boundIPC   []byte
	boundLocal bool
	last       time.Time
}

func (p *prepared) idleSince(cutoff time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.Before(cutoff)
}

// setBound replaces the bound parameters, which the statement's lease
// holds (with their encoding) from then on, and returns the handle that
// carries them when they are small enough to travel, or the plain handle.
func (p *prepared) setBound(recs []arrow.RecordBatch) []byte {
	enc, ok := encodeParams(recs)
	if err := p.lease.SetParams(recsBytes(recs) + int64(len(enc))); err != nil {
		enc, ok = nil, false // the encoding would pass a bound: keep the rows only
	}
	p.mu.Lock()
	old := p.bound
	p.bound, p.boundIPC, p.boundLocal = recs, enc, !ok
	p.last = time.Now()
	p.mu.Unlock()
	releaseRecs(old)
	if !ok || enc == nil {
		return p.handle
	}
	h, err := encodeHandle(p, enc)
	if err != nil {
		return p.handle
	}
	return h
}

// takeBound returns the bound parameters, retained for the caller, and
// their encoding for a ticket (nil when there are none); local is true
// when they are too large to travel.
func (p *prepared) takeBound() (recs []arrow.RecordBatch, enc []byte, local bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = time.Now()
	for _, r := range p.bound {
		r.Retain()
	}
	return append([]arrow.RecordBatch(nil), p.bound...), p.boundIPC, p.boundLocal
}

// close drops the bound parameters and gives the statement's charge back.
func (p *prepared) close() {
	p.setBound(nil)
	p.lease.Release()
	p.conn.forget(p)
}

// clearBound drops the bound parameters, and their charge, before new
// ones are read: binding replaces them, and the new ones are charged as
// they arrive.
func (p *prepared) clearBound() {
	p.mu.Lock()
	old := p.bound
	p.bound, p.boundIPC, p.boundLocal = nil, nil, false
	p.mu.Unlock()
	releaseRecs(old)
	p.lease.SetParams(0)
}

// recsBytes is the memory parameter batches hold.
func recsBytes(recs []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range recs {
		n += recBytes(r)
	}
	return n
}

// recBytes is the memory of a batch's buffers, children and
// dictionaries included (a slice counts its whole buffers: they are
// what it keeps).
func recBytes(r arrow.RecordBatch) int64 {
	var n int64
	for _, col := range r.Columns() {
		n += dataBytes(col.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	if d == nil {
		return 0
	}
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += dataBytes(d.Dictionary())
	}
	return n
}

func releaseRecs(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// CreatePreparedStatement prepares the statement once to learn its dataset
// and parameter schemas and whether it is an update, which JDBC and ADBC
// use to route it.
func (s *Server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	p, err := s.newPrepared(ctx, newID(), req.GetQuery(), req.GetTransactionId())
	if err != nil {
		return res, err
	}
	p = s.cachePrepared(p)
	isUpdate := !p.isQuery
	return flightsql.ActionCreatePreparedStatementResult{
		Handle:          p.handle,
		DatasetSchema:   p.dataset,
		ParameterSchema: announcedParams(p.params),
		IsUpdate:        &isUpdate,
	}, nil
}

// newPrepared prepares sql once, checks the caller may run it, and
// describes it: its dataset and parameter schemas and whether it is a
// query.
func (s *Server) newPrepared(ctx context.Context, id, sql string, txnID []byte) (*prepared, error) {
	c, release, err := s.acquire(ctx, txnID)
	if err != nil {
		return nil, err
	}
	defer release()
	st, err := c.Prepare(ctx, sql)
	if errors.Is(err, engine.ErrScript) {
		// Unimplemented makes ADBC, which prepares everything it executes,
		// run the script as a plain statement instead.
		return nil, status.Errorf(codes.Unimplemented, "%v; run a script as a statement", err)
	}
	if err != nil {
		return nil, toStatus(err)
	}
	defer st.Close()
	if err := s.authorize(ctx, st); err != nil {
		return nil, err
	}
	p := &prepared{id: id, owner: owner(ctx), sign: s.sign, sql: sql, txn: txnID, isQuery: st.IsQuery(), last: time.Now()}
	if p.params, err = st.ParamSchema(); err != nil {
		return nil, toStatus(err)
	}
	if p.isQuery {
		if p.dataset, err = st.Schema(); err != nil {
			return nil, toStatus(err)
		}
	} else {
		// No columns: the Flight SQL JDBC driver routes a prepared
		// statement by its dataset schema alone, as an update when it is
		// empty; a Count column made it run DDL and DML as queries.
		p.dataset = emptySchema
	}
	if p.handle, err = encodeHandle(p, nil); err != nil {
		return nil, status.Errorf(codes.Internal, "encode prepared statement handle: %v", err)
	}
	// The SQL is kept, and again in the handle's encoding, signed.
	if p.lease, err = s.holdSession(ctx).Take(admit.HoldPrepared, 3*int64(len(sql))); err != nil {
		return nil, toStatus(err)
	}
	p.conn = connOf(ctx)
	return p, nil
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

// ClosePreparedStatement forgets the statement and the parameters bound to
// it here. A well-formed handle of the caller's that this server holds
// nothing for (created on another replica, or closed already) closes
// without error.
func (s *Server) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	h, err := s.openPrepared(ctx, req.GetPreparedStatementHandle())
	if err != nil {
		return err
	}
	key := preparedKey(owner(ctx), h.ID)
	s.mu.Lock()
	p := s.prepared[key]
	if p != nil && p.matches(h) {
		delete(s.prepared, key)
	} else {
		p = nil
	}
	s.mu.Unlock()
	if p != nil {
		preparedOpen.Dec()
		p.close()
	}
	return nil
}

// GetSchemaPreparedStatement returns the dataset schema found at creation.
func (s *Server) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	p, _, err := s.lookupPrepared(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(p.dataset, s.mem)}, nil
}

// DoPutPreparedStatementQuery binds parameter rows to a prepared query. It
// returns the handle the client uses from then on: one that carries the
// parameters, when they are small enough, so that any replica can execute
// it.
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, r flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	p, _, err := s.lookupPrepared(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	p.clearBound()
	recs, err := readParams(r, p, p.lease)
	if err != nil {
		return nil, err
	}
	return p.setBound(recs), nil
}

// readParams reads every parameter batch of a DoPut, checking its width
// and its layout (validateRecord): the batches are bound row by row or
// scanned by DuckDB as they are. It charges them to lease as they arrive:
// a client that sends more than its bounds is refused at the batch that
// passes one.
func readParams(r flight.MessageReader, p *prepared, lease *admit.Lease) ([]arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	rows := 0
	var size int64
	for r.Next() {
		rec := r.RecordBatch()
		if int(rec.NumCols()) != p.params.NumFields() {
			releaseRecs(recs)
			return nil, invalidf("statement takes %d parameters, the batch has %d columns", p.params.NumFields(), rec.NumCols())
		}
		if err := validateRecord(rec); err != nil {
			releaseRecs(recs)
			lease.SetParams(0)
			return nil, invalidf("malformed parameters: %v", err)
		}
		rows += int(rec.NumRows())
		if rows > maxBoundRows {
			releaseRecs(recs)
			lease.SetParams(0)
			return nil, status.Errorf(codes.ResourceExhausted, "more than %d parameter rows bound to a query", maxBoundRows)
		}
		size += recBytes(rec)
		if err := lease.SetParams(size); err != nil {
			releaseRecs(recs)
			lease.SetParams(0)
			return nil, toStatus(err)
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil && err != io.EOF {
		releaseRecs(recs)
		lease.SetParams(0)
		return nil, status.Errorf(codes.InvalidArgument, "read parameters: %v", err)
	}
	return recs, nil
}

// GetFlightInfoPreparedStatement runs a prepared update at once (with its
// bound parameters), or returns the FlightInfo whose tickets run the query.
// Outside a transaction, with parameters that can travel, the tickets are
// statement tickets that carry the SQL and the parameters, planned like a
// statement's; otherwise the ticket is the handle, which this server runs
// with the parameters bound here.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	p, h, err := s.lookupPrepared(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	bound, enc, local, err := s.boundParams(p, h)
	if err != nil {
		return nil, err
	}
	defer releaseRecs(bound)
	if !p.isQuery {
		n, err := s.execPrepared(ctx, p, bound)
		if err != nil {
			return nil, err
		}
		return s.statementInfo(ctx, desc, countSchema, handle{Count: &n})
	}
	schema, err := s.boundSchema(ctx, p, bound)
	if err != nil {
		return nil, err
	}
	if len(p.txn) > 0 || local || (p.params.NumFields() > 0 && len(bound) == 0) {
		return s.flightInfo(desc, schema, desc.GetCmd()), nil
	}
	catalog, dbSchema := sessionDefaults(ctx)
	th := handle{Query: p.sql, Catalog: catalog, Schema: dbSchema, Params: enc}
	eps, err := s.queryEndpoints(ctx, th)
	if err != nil {
		return nil, err
	}
	return s.flightInfoEndpoints(desc, schema, eps), nil
}

// queryEndpoints plans a prepared query on a connection of its own: the
// query is prepared and authorized there first, and only a read query is
// planned.
func (s *Server) queryEndpoints(ctx context.Context, h handle) ([]*flight.FlightEndpoint, error) {
	if s.opts.Planner == nil || !mayPlan(ctx, s.opts.Planner, h.Query) {
		return s.endpoints(ctx, nil, h)
	}
	c, release, err := s.acquire(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	st, err := c.Prepare(ctx, h.Query)
	if err != nil {
		return nil, toStatus(err)
	}
	read := st.Access() == auth.AccessRead
	err = s.authorize(ctx, st)
	st.Close()
	if err != nil {
		return nil, err
	}
	if !read {
		return s.endpoints(ctx, nil, h)
	}
	return s.endpoints(ctx, c, h)
}

// boundParams returns the parameters to run a prepared statement with,
// retained for the caller: those the handle carries, else those bound on
// this server. enc is their encoding for a ticket (nil when there are
// none), and local is true when they are too large to travel.
func (s *Server) boundParams(p *prepared, h preparedHandle) (recs []arrow.RecordBatch, enc []byte, local bool, err error) {
	if h.Params == nil {
		recs, enc, local = p.takeBound()
		return recs, enc, local, nil
	}
	if recs, err = decodeParams(h.Params); err != nil {
		return nil, nil, false, err
	}
	for _, rec := range recs {
		if int(rec.NumCols()) != p.params.NumFields() {
			releaseRecs(recs)
			return nil, nil, false, invalidf("statement takes %d parameters, the handle's have %d columns", p.params.NumFields(), rec.NumCols())
		}
	}
	return recs, h.Params, false, nil
}

// boundSchema is a prepared query's result schema for its bound
// parameters. When DuckDB cannot type a result column before values are
// bound (SELECT ? AS x), the prepared schema holds null placeholders, and
// clients (ADBC) refuse a stream whose schema differs from the FlightInfo's;
// so a read-only query is started with its first parameter row to learn the
// real types.
func (s *Server) boundSchema(ctx context.Context, p *prepared, bound []arrow.RecordBatch) (*arrow.Schema, error) {
	if !hasNullField(p.dataset) {
		return p.dataset, nil
	}
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
	if err := s.authorize(ctx, st); err != nil {
		return nil, err
	}
	if err := bindRow(st, bound[first], 0); err != nil {
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
	p, h, err := s.lookupPrepared(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	// The rows are held while the update runs with them.
	lease, err := s.holdSession(ctx).Take(admit.HoldParams, 0)
	if err != nil {
		return 0, toStatus(err)
	}
	defer lease.Release()
	recs, err := readParams(r, p, lease)
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		if recs, _, _, err = s.boundParams(p, h); err != nil {
			return 0, err
		}
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
		return s.execStmt(ctx, c, st, p.sql)
	}
	ctx, cancel := s.withQueryTimeout(ctx)
	defer cancel()
	q, err := s.admitRun(ctx, c, st, p.sql)
	if err != nil {
		return 0, err
	}
	defer s.finish(q)
	if n, ok, err := s.execParamBatches(ctx, c, p.sql, params); ok {
		return n, err
	}
	// One row outside a transaction is one statement, atomic as it is:
	// DuckDB commits it alone. BEGIN and COMMIT around it cost a
	// single-row INSERT 13% of the server's CPU (and a ROLLBACK when the
	// connection went back to the pool).
	own := len(p.txn) == 0 && paramRows(params) > 1
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

// paramRows counts the rows of parameter batches.
func paramRows(params []arrow.RecordBatch) int64 {
	var n int64
	for _, rec := range params {
		n += rec.NumRows()
	}
	return n
}

func execRows(ctx context.Context, st *engine.Stmt, params []arrow.RecordBatch) (int64, error) {
	var total int64
	for _, rec := range params {
		for row := 0; row < int(rec.NumRows()); row++ {
			if err := bindRow(st, rec, row); err != nil {
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
