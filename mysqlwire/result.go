package mysqlwire

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/mysqlwire/mysqlvalue"
)

// Chunking of result rows handed to vitess in one callback. A chunk ends at
// chunkRows rows; its text is formatted column by column into one arena.
const chunkRows = 512

// rowSender streams an engine result to the client through vitess's result
// callback, formatting values straight from the Arrow batches as they
// arrive: memory holds one engine batch and one chunk of text, however
// large the result.
//
// For the text protocol the arena, offsets and row slices are reused from
// chunk to chunk, because vitess has written a chunk to its buffer by the
// time the callback returns. The binary protocol may keep a chunk for a
// cursor fetch after the callback returns, so each chunk gets fresh
// buffers there.
type rowSender struct {
	binary bool

	arena []byte
	offs  []int
	vals  []sqltypes.Value
	rows  [][]sqltypes.Value
	cols  []mysqlvalue.Column
}

// fieldsOf maps a result schema to MySQL column definitions; a column of
// a type MySQL has no form for is an error.
func fieldsOf(schema *arrow.Schema) ([]*querypb.Field, error) {
	fields := make([]*querypb.Field, schema.NumFields())
	for i, f := range schema.Fields() {
		fld, err := mysqlvalue.Field(f)
		if err != nil {
			return nil, err
		}
		fields[i] = fld
	}
	return fields, nil
}

// sendRows streams rows and returns how many it sent. The first batch is
// fetched before anything is written, so an error DuckDB reports early
// still reaches the client as an error packet rather than a cut stream.
func (rs *rowSender) sendRows(rows *engine.Rows, send func(*sqltypes.Result) error) (int64, error) {
	defer rs.trim()
	fields, err := fieldsOf(rows.Schema())
	if err != nil {
		return 0, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, send(&sqltypes.Result{Fields: fields})
	}
	var sent int64
	for {
		n, err := rs.sendBatch(fields, rows.RecordBatch(), send)
		sent += n
		if err != nil {
			return sent, err
		}
		if !rows.Next() {
			return sent, rows.Err()
		}
	}
}

// sendBatch sends one record batch in chunks.
func (rs *rowSender) sendBatch(fields []*querypb.Field, rec arrow.RecordBatch, send func(*sqltypes.Result) error) (int64, error) {
	ncols := int(rec.NumCols())
	rs.cols = rs.cols[:0]
	for _, col := range rec.Columns() {
		w, err := mysqlvalue.NewColumn(col, rs.binary)
		if err != nil {
			return 0, err
		}
		rs.cols = append(rs.cols, w)
	}
	total := int(rec.NumRows())
	for lo := 0; lo < total; lo += chunkRows {
		hi := min(lo+chunkRows, total)
		res := rs.formatChunk(fields, rec, ncols, lo, hi)
		if err := send(res); err != nil {
			return int64(lo), err
		}
		rowsSent.Add(float64(hi - lo))
	}
	return int64(total), nil
}

// formatChunk formats rows [lo, hi) of rec into a result.
func (rs *rowSender) formatChunk(fields []*querypb.Field, rec arrow.RecordBatch, ncols, lo, hi int) *sqltypes.Result {
	n := hi - lo
	cells := n * ncols
	if rs.binary {
		rs.arena, rs.offs, rs.vals, rs.rows = nil, nil, nil, nil
	}
	arena := rs.arena[:0]
	offs := grow(rs.offs, 2*cells)
	for j, w := range rs.cols {
		col := rec.Column(j)
		nulls := col.NullN() > 0
		for r := range n {
			k := 2 * (r*ncols + j)
			if nulls && col.IsNull(lo+r) {
				offs[k] = -1
				continue
			}
			start := len(arena)
			var ok bool
			arena, ok = w.Append(arena, lo+r)
			if !ok {
				arena = arena[:start]
				offs[k] = -1
				continue
			}
			offs[k], offs[k+1] = start, len(arena)
		}
	}
	vals := grow(rs.vals, cells)
	rows := grow(rs.rows, n)
	for r := range n {
		row := vals[r*ncols : (r+1)*ncols : (r+1)*ncols]
		for j := range row {
			k := 2 * (r*ncols + j)
			if offs[k] < 0 {
				row[j] = sqltypes.NULL
				continue
			}
			row[j] = sqltypes.MakeTrusted(fields[j].Type, arena[offs[k]:offs[k+1]])
		}
		rows[r] = row
	}
	rs.arena, rs.offs, rs.vals, rs.rows = arena, offs, vals, rows
	return &sqltypes.Result{Fields: fields, Rows: rows}
}

// trim drops buffers a result with large values left behind, so that an
// idle connection does not keep them.
func (rs *rowSender) trim() {
	const keepBytes, keepCells = 1 << 20, 1 << 15
	if cap(rs.arena) > keepBytes {
		rs.arena = nil
	}
	if cap(rs.vals) > keepCells {
		rs.vals, rs.offs = nil, nil
	}
	clear(rs.cols)
	rs.cols = rs.cols[:0]
}

// grow returns s with length n, reusing its array when it is big enough.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}
