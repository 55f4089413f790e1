// Package convert turns DuckDB data chunks into Arrow record batches.
//
// Fixed-width columns (integers, floats, dates, times, timestamps, decimals,
// booleans, intervals) and strings are copied straight out of DuckDB's vector
// memory into Arrow buffers, with no per-value allocation. Every other type
// (LIST, STRUCT, MAP, ARRAY, ENUM, UUID, …) goes through DuckDB's own Arrow
// conversion, one chunk at a time, and the pieces are concatenated when the
// batch is cut. Chunks are coalesced into batches of a target row count.
package convert

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/ipcx"
)

// DefaultBatchRows is the row count a Batcher aims for when none is given.
const DefaultBatchRows = 64 * 1024

// maxBatchBytes cuts a batch early when its buffers grow past this size, so
// that one batch, sent as one IPC message, stays under the 16 MiB that
// ADBC's Flight SQL driver accepts by default (with room for the chunk that
// crosses the line), and never approaches the 2 GiB limit of 32-bit offsets.
// 64K rows of 20 short strings already make 17 MB.
const maxBatchBytes = 12 << 20

// vectorSize is DuckDB's maximum chunk size.
var vectorSize = int(duckdb.VectorSize())

// column converts one result column chunk by chunk into the batch being built.
type column interface {
	// add appends n rows of vec at row offset at of the current batch.
	add(vec duckdb.Vector, n, at int)
	// finish returns the column's array for a batch of length rows and resets
	// the column for the next batch.
	finish(length int) arrow.Array
	// bytes reports the variable-width bytes held so far.
	bytes() int
	release()
}

// Batcher coalesces DuckDB data chunks into Arrow record batches of about
// BatchRows rows. It is not safe for concurrent use.
type Batcher struct {
	mem memory.Allocator
	// gcMem holds what a consumer may keep a reference into after
	// releasing a batch, like the bytes behind a string value: it comes
	// from Go memory that is never recycled.
	gcMem  memory.Allocator
	schema *arrow.Schema
	target int
	cols   []column
	rows   int
	// rowBytes is the fixed-width bytes per row of the fast columns
	// (values, string offsets); slowBytes is what the slow columns' chunks
	// of the current batch hold. Full counts both.
	rowBytes  int
	slowBytes int

	// Columns that take DuckDB's own Arrow conversion.
	opts      duckdb.ArrowOptions
	slowIdx   []int
	slowTypes []duckdb.LogicalType
	slowChunk duckdb.DataChunk
	slowSch   *arrow.Schema
	slowParts [][]arrow.Array
}

// NewBatcher builds a batcher for a result whose columns have the given
// DuckDB logical types and names. The Arrow schema comes from DuckDB's own
// type mapping under opts, so the fast and the fallback paths agree. The
// caller keeps ownership of types and opts; they must outlive the Batcher.
//
// String bytes come from stringMem, Go memory when nil: a Go string taken
// from a batch (array.String.Value aliases it) then stays valid after the
// batch is released. A consumer that keeps nothing of a batch it released
// may pass mem again.
//
// With fallbackOnly every column takes DuckDB's own Arrow conversion; tests
// and benchmarks use it as the reference.
func NewBatcher(mem, stringMem memory.Allocator, opts duckdb.ArrowOptions, types []duckdb.LogicalType, names []string, targetRows int, fallbackOnly bool) (*Batcher, error) {
	if targetRows <= 0 {
		targetRows = DefaultBatchRows
	}
	schema, err := ArrowSchema(opts, types, names)
	if err != nil {
		return nil, err
	}
	gcMem := stringMem
	if gcMem == nil {
		gcMem = memory.NewGoAllocator()
	}
	b := &Batcher{mem: mem, gcMem: gcMem, schema: schema, target: targetRows, opts: opts, cols: make([]column, len(types))}
	capRows := targetRows + vectorSize
	var slowFields []arrow.Field
	for i, lt := range types {
		f := schema.Field(i)
		if duckdb.GetTypeId(lt) == duckdb.TypeEnum {
			b.cols[i] = newEnumColumn(mem, gcMem, lt, capRows)
			b.rowBytes += fixedBytes(f.Type)
			continue
		}
		if c := newFastColumn(mem, gcMem, lt, f.Type, capRows); c != nil && !fallbackOnly {
			b.cols[i] = c
			b.rowBytes += fixedBytes(f.Type)
			continue
		}
		b.slowIdx = append(b.slowIdx, i)
		b.slowTypes = append(b.slowTypes, lt)
		slowFields = append(slowFields, f)
	}
	if len(b.slowIdx) > 0 {
		b.slowChunk = duckdb.CreateDataChunk(b.slowTypes)
		b.slowSch = arrow.NewSchema(slowFields, nil)
		b.slowParts = make([][]arrow.Array, len(b.slowIdx))
	}
	return b, nil
}

// ArrowSchema maps DuckDB logical types to an Arrow schema with DuckDB's own
// rules under opts, except that a top-level ENUM is plain utf8 (see
// enumColumn).
func ArrowSchema(opts duckdb.ArrowOptions, types []duckdb.LogicalType, names []string) (*arrow.Schema, error) {
	schema, ed := duckdb.NewArrowSchema(opts, types, names)
	defer duckdb.DestroyErrorData(&ed)
	if duckdb.ErrorDataHasError(ed) {
		return nil, fmt.Errorf("map result types to arrow: %s", duckdb.ErrorDataMessage(ed))
	}
	return enumAsString(schema, types), nil
}

// Schema is the Arrow schema of the batches this Batcher produces.
func (b *Batcher) Schema() *arrow.Schema { return b.schema }

// Rows is the number of rows waiting in the current batch.
func (b *Batcher) Rows() int { return b.rows }

// Full reports whether the current batch has reached its target size and
// should be cut with Flush before more chunks are added.
func (b *Batcher) Full() bool {
	if b.rows >= b.target {
		return true
	}
	n := b.rows*b.rowBytes + b.slowBytes
	for _, c := range b.cols {
		if c != nil {
			n += c.bytes()
		}
	}
	return n >= maxBatchBytes
}

// fixedBytes is the bytes per row of a fast column's fixed-width buffers.
func fixedBytes(dt arrow.DataType) int {
	if fw, ok := dt.(arrow.FixedWidthDataType); ok {
		return (fw.BitWidth() + 7) / 8
	}
	return 4 // string offsets; the bytes themselves are the column's bytes()
}

// Append adds every row of chunk to the current batch. The caller must cut
// the batch with Flush when Full reports true; Append itself never splits a
// chunk.
func (b *Batcher) Append(chunk duckdb.DataChunk) error {
	n := int(duckdb.DataChunkGetSize(chunk))
	if n == 0 {
		return nil
	}
	for i, c := range b.cols {
		if c != nil {
			c.add(duckdb.DataChunkGetVector(chunk, duckdb.IdxT(i)), n, b.rows)
		}
	}
	if len(b.slowIdx) > 0 {
		if err := b.appendSlow(chunk, n); err != nil {
			return err
		}
	}
	b.rows += n
	return nil
}

func (b *Batcher) appendSlow(chunk duckdb.DataChunk, n int) error {
	duckdb.DataChunkReset(b.slowChunk)
	for j, i := range b.slowIdx {
		duckdb.VectorReferenceVector(duckdb.DataChunkGetVector(b.slowChunk, duckdb.IdxT(j)), duckdb.DataChunkGetVector(chunk, duckdb.IdxT(i)))
	}
	duckdb.DataChunkSetSize(b.slowChunk, duckdb.IdxT(n))
	rec, ed := duckdb.DataChunkToArrowArray(b.opts, b.slowSch, b.slowChunk)
	defer duckdb.DestroyErrorData(&ed)
	if duckdb.ErrorDataHasError(ed) {
		return fmt.Errorf("convert chunk to arrow: %s", duckdb.ErrorDataMessage(ed))
	}
	defer rec.Release()
	for j := range b.slowIdx {
		col := rec.Column(j)
		col.Retain()
		b.slowParts[j] = append(b.slowParts[j], col)
		b.slowBytes += int(ipcx.ArrayBytes(col.Data()))
	}
	return nil
}

// Flush cuts the current batch and returns it; the caller releases it. It
// returns nil when no rows are waiting.
func (b *Batcher) Flush() (arrow.RecordBatch, error) {
	if b.rows == 0 {
		return nil, nil
	}
	arrs := make([]arrow.Array, len(b.cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, c := range b.cols {
		if c != nil {
			arrs[i] = c.finish(b.rows)
		}
	}
	for j, i := range b.slowIdx {
		parts := b.slowParts[j]
		b.slowParts[j] = nil
		var err error
		if len(parts) == 1 {
			arrs[i] = parts[0]
			parts = nil
		} else {
			arrs[i], err = array.Concatenate(parts, b.gcMem)
		}
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, fmt.Errorf("concatenate column %s: %w", b.schema.Field(i).Name, err)
		}
	}
	rows := b.rows
	b.rows, b.slowBytes = 0, 0
	return array.NewRecordBatch(b.schema, arrs, int64(rows)), nil
}

// Release frees the batch being built and the Batcher's DuckDB objects.
func (b *Batcher) Release() {
	for _, c := range b.cols {
		if c != nil {
			c.release()
		}
	}
	for _, parts := range b.slowParts {
		for _, p := range parts {
			p.Release()
		}
	}
	b.slowParts = nil
	if b.slowChunk.Ptr != nil {
		duckdb.DestroyDataChunk(&b.slowChunk)
	}
}
