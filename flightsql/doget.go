package flightsql

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/panics"
	"github.com/quiverdata/quiver/ipcx"
)

// service is the gRPC Flight service: arrow-go's Flight SQL router, except
// for DoGet of statement and prepared-statement results, which quiver
// streams itself. arrow-go's router writes DoGet with fixed IPC options;
// owning the writer is what lets quiver choose them (compression, batch
// pipelining) and bound memory.
type service struct {
	flight.FlightServer
	s *Server
}

// DoGet streams a result. Metadata results go through arrow-go's router.
func (v *service) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	var anyCmd anypb.Any
	if err := proto.Unmarshal(t.GetTicket(), &anyCmd); err != nil {
		return invalidf("malformed ticket: %v", err)
	}
	cmd, err := anyCmd.UnmarshalNew()
	if err != nil {
		return invalidf("malformed ticket: %v", err)
	}
	s := v.s
	ctx, cancel := s.withQueryTimeout(stream.Context())
	defer cancel()
	key := runningKey(ctx, t.GetTicket())
	s.mu.Lock()
	s.running[key] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
	}()

	switch cmd := cmd.(type) {
	case *pb.TicketStatementQuery:
		return s.doGetStatement(ctx, cmd.GetStatementHandle(), stream)
	case *pb.CommandPreparedStatementQuery:
		return s.doGetPrepared(ctx, cmd.GetPreparedStatementHandle(), stream)
	}
	return v.FlightServer.DoGet(t, stream)
}

// runningKey names a running fetch for CancelFlightInfo: its ticket, and
// the caller, so that nobody cancels another user's fetch.
func runningKey(ctx context.Context, ticket []byte) string {
	return owner(ctx) + "\x00" + string(ticket)
}

// openTicket checks a statement ticket was signed for the caller and
// decodes its handle.
func (s *Server) openTicket(ctx context.Context, raw []byte) (handle, error) {
	data, err := s.sign.open(kindTicket, owner(ctx), raw)
	if err != nil {
		return handle{}, err
	}
	return parseHandle(data)
}

func (s *Server) doGetStatement(ctx context.Context, raw []byte, stream flight.FlightService_DoGetServer) error {
	h, err := s.openTicket(ctx, raw)
	if err != nil {
		return err
	}
	switch {
	case h.Count != nil:
		return s.writeCount(stream, *h.Count)
	case h.Held != "":
		hq, err := s.takeHeld(ctx, h.Held)
		if err != nil {
			return err
		}
		if hq == nil {
			return status.Error(codes.NotFound, "statement result was already fetched, canceled or expired; execute it again")
		}
		defer hq.close()
		q, err := s.admitRun(ctx, hq.stmt.Conn(), hq.stmt, hq.sql)
		if err != nil {
			return err
		}
		defer s.finish(q)
		rows, err := hq.stmt.QueryTransient(ctx)
		if err != nil {
			return s.ctxStatus(ctx, err)
		}
		return s.streamRows(ctx, stream, rows.Schema(), []*engine.Rows{rows}, nil, q)
	}
	return s.doGetQuery(ctx, h, stream)
}

// doGetQuery runs a query ticket: its part, when it names one, with the
// parameters it carries. The ticket came from the client, so its SQL is
// checked like a fresh statement's: one statement, which the caller may
// run, and which returns rows.
func (s *Server) doGetQuery(ctx context.Context, h handle, stream flight.FlightService_DoGetServer) error {
	var params []arrow.RecordBatch
	if h.Params != nil {
		var err error
		if params, err = decodeParams(h.Params); err != nil {
			return err
		}
		defer releaseRecs(params)
	}
	ctx, sql, err := s.bindPart(ctx, h)
	if err != nil {
		return err
	}
	key := classKey(ctx, sql)
	slot, admitted, err := s.preadmit(ctx, key, h.Lane)
	if err != nil {
		return err
	}
	q := &queryRun{slot: slot, key: key}
	if h.Part != nil {
		// A part's run says nothing of the whole query, whose text it may
		// share (a lake part runs the query's own SQL over fewer files):
		// the classifier does not learn from it.
		q.key = admit.Key{}
	}
	defer s.finish(q)
	c, release, err := s.acquireWith(ctx, []byte(h.Txn), h.Catalog, h.Schema)
	if err != nil {
		return err
	}
	defer release()
	st, err := c.Prepare(ctx, sql)
	if errors.Is(err, engine.ErrScript) {
		return invalidf("a statement ticket holds one statement")
	}
	if err != nil {
		return toStatus(err)
	}
	defer st.Close()
	if err := s.authorize(ctx, st); err != nil {
		return err
	}
	if !st.IsQuery() {
		return invalidf("the ticket's %s statement returns no rows; execute it as an update", st.Kind())
	}
	if !admitted {
		if q.slot, err = s.admitStmt(ctx, c, st, key); err != nil {
			return err
		}
	}
	return s.runQuery(ctx, stream, st, params, q)
}

func (s *Server) doGetPrepared(ctx context.Context, raw []byte, stream flight.FlightService_DoGetServer) error {
	p, h, err := s.lookupPrepared(ctx, raw)
	if err != nil {
		return err
	}
	bound, _, _, err := s.boundParams(p, h)
	if err != nil {
		return err
	}
	defer releaseRecs(bound)
	key := classKey(ctx, p.sql)
	slot, admitted, err := s.preadmit(ctx, key, "")
	if err != nil {
		return err
	}
	q := &queryRun{slot: slot, key: key}
	defer s.finish(q)
	c, release, err := s.acquire(ctx, p.txn)
	if err != nil {
		return err
	}
	defer release()
	st, err := c.Prepare(ctx, p.sql)
	if err != nil {
		return toStatus(err)
	}
	defer st.Close()
	if err := s.authorize(ctx, st); err != nil {
		return err
	}
	if !admitted {
		if q.slot, err = s.admitStmt(ctx, c, st, key); err != nil {
			return err
		}
	}
	return s.runQuery(ctx, stream, st, bound, q)
}

// runQuery streams st's result: once when it takes no parameters (any
// bound are ignored), else once per parameter row, the results one after
// another.
func (s *Server) runQuery(ctx context.Context, stream flight.FlightService_DoGetServer, st *engine.Stmt, params []arrow.RecordBatch, q *queryRun) error {
	if st.NumParams() == 0 {
		rows, err := st.QueryTransient(ctx)
		if err != nil {
			return s.ctxStatus(ctx, err)
		}
		return s.streamRows(ctx, stream, rows.Schema(), []*engine.Rows{rows}, nil, q)
	}
	if len(params) == 0 {
		return invalidf("statement takes %d parameters and none are bound", st.NumParams())
	}
	bi, row := 0, 0
	next := func() (*engine.Rows, error) {
		for bi < len(params) && row >= int(params[bi].NumRows()) {
			bi, row = bi+1, 0
		}
		if bi == len(params) {
			return nil, nil
		}
		if err := bindRow(st, params[bi], row); err != nil {
			return nil, err
		}
		row++
		return st.QueryTransient(ctx)
	}
	// The first result's schema is the stream's: a column typed by a
	// parameter (SELECT ? AS x) is null in the prepared schema until values
	// are bound.
	first, err := next()
	if err != nil {
		return s.ctxStatus(ctx, err)
	}
	if first == nil {
		schema, err := st.Schema()
		if err != nil {
			return toStatus(err)
		}
		return s.streamRows(ctx, stream, schema, nil, nil, q)
	}
	return s.streamRows(ctx, stream, first.Schema(), []*engine.Rows{first}, next, q)
}

// bindRow is st.BindRow for parameters that may have come from a client's
// ticket: Arrow data that got past validation yet is inconsistent makes an
// InvalidArgument error, not a crash.
func bindRow(st *engine.Stmt, rec arrow.RecordBatch, row int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = invalidf("parameter row %d: malformed Arrow data: %v", row, r)
		}
	}()
	return st.BindRow(rec, row)
}

// acquireWith is acquire with the catalog and schema a ticket carries
// rather than the calling session's.
func (s *Server) acquireWith(ctx context.Context, txnID []byte, catalog, schema string) (*engine.Conn, func(), error) {
	c, release, err := s.acquire(ctx, txnID)
	if err != nil {
		return nil, nil, err
	}
	ok := false // a panic in Use must not leave a transaction locked
	defer func() {
		if !ok {
			release()
		}
	}()
	if catalog != "" || schema != "" {
		if err := c.Use(ctx, catalog, schema); err != nil {
			return nil, nil, toStatus(err)
		}
	}
	ok = true
	return c, release, nil
}

func (s *Server) writeCount(stream flight.FlightService_DoGetServer, n int64) error {
	b := array.NewInt64Builder(s.mem)
	defer b.Release()
	b.Append(n)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(countSchema, []arrow.Array{col}, 1)
	defer rec.Release()
	w := ipcx.NewWriter(stream, ipc.WithSchema(countSchema), ipc.WithAllocator(s.mem))
	defer w.Close()
	return w.Write(rec)
}

// queryRun is a running query's admission slot, its SQL (by which the
// classifier remembers it) and the rows it produced.
type queryRun struct {
	slot *admit.Slot
	key  admit.Key // what the classifier learns from; none when SQL is empty
	rows int64
}

// finish gives back q's slot and tells the classifier what it did.
func (s *Server) finish(q *queryRun) { q.slot.Finish(s.opts.Classifier, q.key, q.rows) }

// streamRows writes results to the client. A producer goroutine converts
// the next batch while the previous one is on the wire; the channel between
// them holds at most two batches, and gRPC flow control is the backpressure.
// The results come from rows, then from next until it returns nil. While
// the channel is full (the client reads slower than DuckDB produces) the
// query gives back its run slot.
//
// A panic in the producer becomes the stream's error (the interceptor
// logs it), and however this call ends, a panic here included, the
// producer has stopped before it returns: the caller then closes the
// statement and gives its connection back, which DuckDB must not be
// running on.
func (s *Server) streamRows(ctx context.Context, stream flight.FlightService_DoGetServer, schema *arrow.Schema, rows []*engine.Rows, next func() (*engine.Rows, error), q *queryRun) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan arrow.RecordBatch, 2)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		errc <- panics.Catch(func() error { return produce(ctx, ch, rows, next, q) })
	}()
	var w *ipcx.Writer
	producing := true
	defer func() {
		if !producing {
			return
		}
		cancel()
		for rec := range ch {
			rec.Release()
		}
		<-errc
		if w != nil {
			w.Close()
		}
	}()
	w, err := s.resultWriter(ctx, stream, schema)
	if err != nil {
		return err
	}
	var werr error
	for rec := range ch {
		if werr == nil {
			werr = w.Write(rec)
			if werr != nil {
				cancel() // the client went away: stop DuckDB
			} else {
				bytesSent.Add(float64(ipcx.RecordBytes(rec)))
			}
		}
		rec.Release()
	}
	perr := <-errc
	producing = false
	if werr == nil {
		werr = w.Close()
	} else {
		w.Close()
	}
	switch {
	case panics.As(perr) != nil:
		return perr
	case panics.As(werr) != nil:
		return werr // the IPC writer's sender panicked
	case werr != nil:
		if ctx.Err() != nil && stream.Context().Err() != nil {
			return status.FromContextError(stream.Context().Err()).Err()
		}
		return status.Errorf(codes.Unavailable, "send results: %v", werr)
	case perr != nil:
		return s.ctxStatus(ctx, perr)
	}
	return nil
}

func produce(ctx context.Context, ch chan<- arrow.RecordBatch, rows []*engine.Rows, next func() (*engine.Rows, error), q *queryRun) error {
	for i := 0; ; i++ {
		var r *engine.Rows
		if i < len(rows) {
			r = rows[i]
		} else if next != nil {
			if err := q.slot.Resume(ctx); err != nil {
				return err
			}
			var err error
			if r, err = next(); err != nil {
				return err
			}
		}
		if r == nil {
			return nil
		}
		if err := drain(ctx, ch, r, q); err != nil {
			return err
		}
	}
}

// drain sends r's batches to ch, holding q's run slot while DuckDB
// produces them and pausing it while ch is full, then closes r however it
// ends, a panic included.
func drain(ctx context.Context, ch chan<- arrow.RecordBatch, r *engine.Rows, q *queryRun) error {
	defer r.Close()
	for {
		if err := q.slot.Resume(ctx); err != nil {
			return err
		}
		if !r.Next() {
			return r.Err()
		}
		rec := r.RecordBatch()
		rec.Retain()
		q.rows += rec.NumRows()
		select {
		case ch <- rec:
			continue
		default:
		}
		q.slot.Pause()
		select {
		case ch <- rec:
		case <-ctx.Done():
			rec.Release()
			return ctx.Err()
		}
	}
}
