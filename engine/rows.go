package engine

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/engine/convert"
)

// Rows streams a statement's result as Arrow record batches of about the
// database's BatchRows rows. It implements array.RecordReader. Memory stays
// bounded by one batch being built plus the one handed out: a batch is only
// valid until the next call to Next unless the caller retains it.
//
// Rows holds its connection: close it (Release or Close) before the
// connection runs anything else.
type Rows struct {
	refs    atomic.Int64
	ctx     context.Context // the statement's; see lostError
	s       *Stmt
	ownStmt bool
	res     duckdb.Result
	stop    func() bool
	types   []duckdb.LogicalType
	b       *convert.Batcher
	// chunk is DuckDB's chunk being appended, whose rows from chunkAt on
	// did not fit in the last batch.
	chunk   duckdb.DataChunk
	chunkAt int
	cur     arrow.RecordBatch
	err     error
	done    bool
	closed  bool
	rows    int64
}

func newRows(s *Stmt, res duckdb.Result, stop func() bool, transient bool) (*Rows, error) {
	n := int(duckdb.ColumnCount(&res))
	types := make([]duckdb.LogicalType, n)
	names := make([]string, n)
	for i := range n {
		types[i] = duckdb.ColumnLogicalType(&res, duckdb.IdxT(i))
		names[i] = duckdb.ColumnName(&res, duckdb.IdxT(i))
	}
	var stringMem memory.Allocator // Go memory
	if transient {
		stringMem = s.c.db.mem
	}
	size := convert.Size{Rows: s.c.db.opts.BatchRows, Bytes: s.c.db.opts.MaxBatchBytes}
	b, err := convert.NewBatcher(s.c.db.mem, stringMem, s.c.arrowOpts, types, names, size, s.c.db.opts.FallbackOnly)
	if err != nil {
		destroyTypes(types)
		return nil, err
	}
	r := &Rows{s: s, res: res, stop: stop, types: types, b: b}
	r.refs.Store(1)
	return r, nil
}

// Schema is the Arrow schema of the result.
func (r *Rows) Schema() *arrow.Schema { return r.b.Schema() }

// Next converts the next batch. It returns false at the end of the result
// or on error (see Err).
func (r *Rows) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done || r.closed {
		return false
	}
	for !r.b.Full() {
		if r.chunk.Ptr == nil {
			r.chunk, r.chunkAt = duckdb.FetchChunk(r.res), 0
			if r.chunk.Ptr == nil {
				r.done = true
				if msg := duckdb.ResultError(&r.res); msg != "" {
					r.err = unlessLost(r.ctx, duckError(duckdb.ResultErrorType(&r.res), msg))
				}
				break
			}
		}
		n := int(duckdb.DataChunkGetSize(r.chunk))
		next, err := r.b.Append(r.chunk, r.chunkAt)
		if err != nil || next >= n {
			duckdb.DestroyDataChunk(&r.chunk)
		} else {
			r.chunkAt = next
		}
		if err != nil {
			r.err, r.done = err, true
			break
		}
		if n == 0 {
			r.done = true
			break
		}
	}
	if r.err != nil {
		return false
	}
	rec, err := r.b.Flush()
	if err != nil {
		r.err, r.done = err, true
		return false
	}
	if rec == nil {
		if !r.done {
			// A batch that is full before its first row would end the
			// result here, short and without an error: say so instead.
			r.err, r.done = errors.New("engine: internal error: a result batch was cut before any row"), true
		}
		return false
	}
	r.cur = rec
	r.rows += rec.NumRows()
	rowsStreamed.Add(float64(rec.NumRows()))
	return true
}

// RecordBatch is the batch Next produced.
func (r *Rows) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch, for array.RecordReader.
//
// Deprecated: use RecordBatch.
func (r *Rows) Record() arrow.RecordBatch { return r.cur }

// Err is the error that ended the stream early, if any.
func (r *Rows) Err() error { return r.err }

// RowCount is the number of rows streamed so far.
func (r *Rows) RowCount() int64 { return r.rows }

// Retain adds a reference.
func (r *Rows) Retain() { r.refs.Add(1) }

// Release drops a reference; the last one closes the stream.
func (r *Rows) Release() {
	if r.refs.Add(-1) == 0 {
		r.Close()
	}
}

// Close stops the query if it is still running and frees the result. It is
// safe to call more than once.
func (r *Rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if !r.done {
		// Stop DuckDB's producers rather than draining the result.
		r.s.c.Interrupt()
	}
	r.stop()
	if r.chunk.Ptr != nil {
		duckdb.DestroyDataChunk(&r.chunk)
	}
	r.b.Release()
	destroyTypes(r.types)
	duckdb.DestroyResult(&r.res)
	if r.ownStmt {
		r.s.Close()
	}
	return r.err
}
