package engine

/*
#include <stdlib.h>
#include <stdint.h>

struct ArrowArrayStream {
	void (*get_schema)(struct ArrowArrayStream*);
	void (*get_next)(struct ArrowArrayStream*);
	void (*get_last_error)(struct ArrowArrayStream*);
	void (*release)(struct ArrowArrayStream*);
	void* private_data;
};
*/
import "C"

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/internal/panics"
)

var scanSeq atomic.Uint64

// RowGroupSize is the rows in a DuckDB row group.
const RowGroupSize = 122_880

// InsertArrow inserts every batch that r yields into the table named by
// target (already quoted, e.g. "main"."t") with one
// INSERT INTO target [columns] SELECT * FROM <arrow scan of r>.
// DuckDB pulls the batches as it inserts, so memory stays bounded by the
// reader; it casts each column to the table's type. The insert is one
// statement: if r fails midway (its Err), nothing is inserted. It returns
// the number of rows inserted.
//
// Batches reach DuckDB with at least a row group's rows: smaller ones are
// concatenated first. DuckDB writes a batch that fills a row group
// straight to its own row group, in parallel; smaller ones it collects
// and merges at the end on one thread. With 64K-row batches the insert
// ran at half the rate of 128K-row ones, which match DuckDB's native
// INSERT … SELECT.
func (c *Conn) InsertArrow(ctx context.Context, target string, columns []string, r array.RecordReader) (int64, error) {
	r = newCoalescer(r, RowGroupSize, c.db.mem)
	defer r.Release()
	cols := ""
	if len(columns) > 0 {
		quoted := make([]string, len(columns))
		for i, col := range columns {
			quoted[i] = QuoteIdent(col)
		}
		cols = " (" + strings.Join(quoted, ", ") + ")"
	}
	return c.ExecArrow(ctx, r, func(view string) string { return "INSERT INTO " + target + cols + " SELECT * FROM " + view })
}

// ExecArrow runs the statement query(view), where view names a scan of
// the batches r yields, and returns the rows it changed. DuckDB pulls the
// batches as the statement runs, so memory stays bounded by the reader.
// When the statement fails and r failed too, r's error is returned.
//
// DuckDB calls r back from its own threads, where a panic could not be
// recovered by the caller and would end the process: a panic of r makes
// the statement fail with a *panics.Error instead (see guardedReader).
func (c *Conn) ExecArrow(ctx context.Context, r array.RecordReader, query func(view string) string) (int64, error) {
	view := fmt.Sprintf("__quiver_scan_%d", scanSeq.Add(1))
	stream := (*cdata.CArrowArrayStream)(C.calloc(1, C.sizeof_struct_ArrowArrayStream))
	defer C.free(unsafe.Pointer(stream))
	g := &guardedReader{RecordReader: r, log: c.db.log}
	r = g
	cdata.ExportRecordReader(r, stream)
	defer cdata.ReleaseCArrowArrayStream(stream)
	if duckdb.ArrowScan(c.conn, view, duckdb.ArrowStream{Ptr: unsafe.Pointer(stream)}) == duckdb.StateError {
		return 0, errorf(KindInvalid, "scan arrow stream: schema not supported by DuckDB: %s", r.Schema())
	}
	defer func() {
		var res duckdb.Result
		duckdb.Query(c.conn, "DROP VIEW IF EXISTS "+view, &res)
		duckdb.DestroyResult(&res)
	}()
	n, err := c.Exec(ctx, query(view))
	if err != nil {
		if rerr := r.Err(); rerr != nil {
			return 0, fmt.Errorf("read input: %w", rerr)
		}
		return 0, err
	}
	return n, nil
}

// coalescer is a RecordReader that concatenates the batches of its
// source until they hold at least min rows. A batch that is already big
// enough passes through without a copy.
type coalescer struct {
	src  array.RecordReader
	min  int64
	mem  memory.Allocator
	cur  arrow.RecordBatch
	err  error
	refs atomic.Int64
}

func newCoalescer(src array.RecordReader, min int64, mem memory.Allocator) *coalescer {
	src.Retain()
	c := &coalescer{src: src, min: min, mem: mem}
	c.refs.Store(1)
	return c
}

func (c *coalescer) Retain() { c.refs.Add(1) }

func (c *coalescer) Release() {
	if c.refs.Add(-1) == 0 {
		if c.cur != nil {
			c.cur.Release()
			c.cur = nil
		}
		c.src.Release()
	}
}

func (c *coalescer) Schema() *arrow.Schema { return c.src.Schema() }

func (c *coalescer) RecordBatch() arrow.RecordBatch { return c.cur }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (c *coalescer) Record() arrow.RecordBatch { return c.cur }

func (c *coalescer) Err() error {
	if c.err != nil {
		return c.err
	}
	return c.src.Err()
}

func (c *coalescer) Next() bool {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	var rows int64
	for rows < c.min && c.src.Next() {
		rec := c.src.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		parts = append(parts, rec)
		rows += rec.NumRows()
	}
	switch len(parts) {
	case 0:
		return false
	case 1:
		c.cur, parts = parts[0], nil
		return true
	}
	cols := make([]arrow.Array, len(parts[0].Columns()))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	chunk := make([]arrow.Array, len(parts))
	for i := range cols {
		for j, p := range parts {
			chunk[j] = p.Column(i)
		}
		a, err := array.Concatenate(chunk, c.mem)
		if err != nil {
			c.err = fmt.Errorf("coalesce batches, column %s: %w", c.Schema().Field(i).Name, err)
			return false
		}
		cols[i] = a
	}
	c.cur = array.NewRecordBatch(c.Schema(), cols, rows)
	return true
}

// guardedReader is the reader DuckDB pulls an Arrow scan from. DuckDB
// calls it through cgo callbacks, on threads of its own: a panic there
// cannot reach a recover of the Go code that ran the statement, and
// unwinding through DuckDB's C++ frames would leave its locks held if the
// process survived at all. So a panic of the reader is recovered where it
// happens: Next ends the stream, and Err reports the panic as a
// *panics.Error, which fails the statement like any read error.
type guardedReader struct {
	array.RecordReader
	log *slog.Logger
	err error
}

func (g *guardedReader) Next() (ok bool) {
	if g.err != nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			g.err, ok = panics.New(p), false
		}
	}()
	return g.RecordReader.Next()
}

func (g *guardedReader) Err() error {
	if g.err != nil {
		return g.err
	}
	return g.RecordReader.Err()
}

// Release is called back by DuckDB when it drops the scan, or by
// ExecArrow: no call is left to fail by then, so a panic is only logged.
func (g *guardedReader) Release() {
	defer func() {
		if p := recover(); p != nil {
			pe := panics.New(p)
			g.log.Error("recovered a panic releasing an Arrow scan's reader", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		}
	}()
	g.RecordReader.Release()
}
