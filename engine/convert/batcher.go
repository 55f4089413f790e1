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

// DefaultMaxBatchBytes cuts a batch early, in the middle of a chunk if need be,
// before its buffers grow past this size, so that one batch, sent as one
// IPC message, stays under the 16 MiB that ADBC's Flight SQL driver and
// gRPC clients accept by default (with room for validity bitmaps and
// metadata), and never approaches the 2 GiB limit of 32-bit offsets. 64K
// rows of 20 short strings already make 17 MB, and one 2,048-row chunk of
// 3,000-byte strings 6 MB: cut only between chunks, such a result's
// batches reached 18.5 MB, which ADBC refused. Only a single row larger
// than this makes a larger batch, of its own.
const DefaultMaxBatchBytes = 12 << 20

// vectorSize is DuckDB's maximum chunk size.
var vectorSize = int(duckdb.VectorSize())

// column converts one result column chunk by chunk into the batch being built.
type column interface {
	// add appends n rows of vec, from its row from, at row offset at of
	// the current batch; varBytes is what varBytes said of those rows.
	add(vec duckdb.Vector, from, n, at, varBytes int)
	// varBytes is the variable-width bytes (string data) that n rows of
	// vec from its row from would add.
	varBytes(vec duckdb.Vector, from, n int) int
	// rowBytes adds each of those rows' variable-width bytes to per[i].
	rowBytes(vec duckdb.Vector, from, n int, per []int)
	// truncate takes back the rows added past the batch's first rows.
	truncate(rows int)
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
	// maxBytes cuts a batch by size (DefaultMaxBatchBytes).
	maxBytes int
	cols     []column
	rows     int
	// rowBytes is the fixed-width bytes per row of the fast columns
	// (values, string offsets); slowBytes is what the slow columns' chunks
	// of the current batch hold. Full counts both.
	rowBytes  int
	slowBytes int
	// cut is set when Append stopped before the end of its chunk: the
	// batch is full, whatever its counts say.
	cut bool
	// lastRowBytes is what each row of the last chunk appended added.
	lastRowBytes int
	// per is scratch for each row's bytes when a chunk must be split;
	// colBytes, for each column's varBytes of the rows Append takes.
	per      []int
	colBytes []int

	// Columns that take DuckDB's own Arrow conversion.
	opts      duckdb.ArrowOptions
	slowIdx   []int
	slowTypes []duckdb.LogicalType
	slowChunk duckdb.DataChunk
	slowSch   *arrow.Schema
	slowParts [][]arrow.Array
	// slowArrs is the chunk being appended, converted whole by DuckDB,
	// while its rows go into batches; slowArrsBytes is its size.
	slowArrs      []arrow.Array
	slowArrsBytes int
	// slowSliced is set when a part of the batch is a slice of a chunk.
	slowSliced bool
}

// Size is what a batch is cut at: about Rows rows (DefaultBatchRows when
// zero), at a chunk's end, and at most Bytes bytes (DefaultMaxBatchBytes
// when zero), inside a chunk if need be.
type Size struct{ Rows, Bytes int }

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
func NewBatcher(mem, stringMem memory.Allocator, opts duckdb.ArrowOptions, types []duckdb.LogicalType, names []string, size Size, fallbackOnly bool) (*Batcher, error) {
	if size.Rows <= 0 {
		size.Rows = DefaultBatchRows
	}
	if size.Bytes <= 0 {
		size.Bytes = DefaultMaxBatchBytes
	}
	schema, err := ArrowSchema(opts, types, names)
	if err != nil {
		return nil, err
	}
	gcMem := stringMem
	if gcMem == nil {
		gcMem = memory.NewGoAllocator()
	}
	b := &Batcher{mem: mem, gcMem: gcMem, schema: schema, target: size.Rows, maxBytes: size.Bytes, opts: opts,
		cols: make([]column, len(types)), colBytes: make([]int, len(types))}
	capRows := size.Rows + vectorSize
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
	return b.cut || b.rows >= b.target || b.bytes() >= b.maxBytes
}

// bytes is the size of the batch being built.
func (b *Batcher) bytes() int {
	n := b.rows*b.rowBytes + b.slowBytes
	for _, c := range b.cols {
		if c != nil {
			n += c.bytes()
		}
	}
	return n
}

// fixedBytes is the bytes per row of a fast column's fixed-width buffers.
func fixedBytes(dt arrow.DataType) int {
	if fw, ok := dt.(arrow.FixedWidthDataType); ok {
		return (fw.BitWidth() + 7) / 8
	}
	return 4 // string offsets; the bytes themselves are the column's bytes()
}

// Append adds the rows of chunk from its row from to the current batch,
// and returns the row it stopped before: n, the chunk's size, when it
// took them all. It stops early when the next row would take the batch
// past its size in bytes (a batch's first row always goes in), and the batch
// is then Full: the caller cuts it with Flush and calls Append again with
// the same chunk from where it stopped. It never splits a chunk by row
// count; a batch may pass its target by up to one chunk.
func (b *Batcher) Append(chunk duckdb.DataChunk, from int) (int, error) {
	n := int(duckdb.DataChunkGetSize(chunk))
	if from >= n {
		return n, nil
	}
	if len(b.slowIdx) > 0 && from == 0 {
		if err := b.convertSlow(chunk, n); err != nil {
			return from, err
		}
	}
	left := n - from
	before := b.bytes()
	// Most chunks fit with room to spare: they are copied column by
	// column, each column's lengths summed just before its copy, while
	// they are in cache. Summing every column's first, to know whether
	// the chunk fits, made str20's conversion 5% slower. Only a chunk that
	// may not fit, judged by the rows before it, is measured first; one
	// that turns out not to fit after all is taken back.
	if 2*left*b.lastRowBytes <= b.maxBytes-before {
		for i, c := range b.cols {
			if c != nil {
				vec := duckdb.DataChunkGetVector(chunk, duckdb.IdxT(i))
				c.add(vec, from, left, b.rows, c.varBytes(vec, from, left))
			}
		}
		if after := b.bytes() + left*b.rowBytes + b.slowFor(left, n); after <= b.maxBytes {
			b.took(from, left, n, after-before)
			return n, nil
		}
		for _, c := range b.cols {
			if c != nil {
				c.truncate(b.rows)
			}
		}
	}
	k := b.fit(chunk, from, n)
	if from+k < n {
		b.cut = true
	}
	if k == 0 {
		return from, nil
	}
	for i, c := range b.cols {
		if c != nil {
			vec := duckdb.DataChunkGetVector(chunk, duckdb.IdxT(i))
			if k < left {
				b.colBytes[i] = c.varBytes(vec, from, k)
			}
			c.add(vec, from, k, b.rows, b.colBytes[i])
		}
	}
	b.took(from, k, n, b.bytes()+k*b.rowBytes+b.slowFor(k, n)-before)
	return from + k, nil
}

// slowFor is the share of the converted chunk's slow columns, of n rows,
// that k of its rows take.
func (b *Batcher) slowFor(k, n int) int { return b.slowArrsBytes * k / n }

// took ends appending k rows of a chunk of n, from its row from, which
// added bytes to the batch: the slow columns' parts, the row count, and
// the bytes per row the next chunk is judged by.
func (b *Batcher) took(from, k, n, bytes int) {
	if len(b.slowIdx) > 0 {
		b.appendSlow(from, k, n)
	}
	b.rows += k
	b.lastRowBytes = (bytes + k - 1) / k
}

// fit is how many rows of chunk, from its row from, the batch can take
// without passing its size in bytes: at least one when the batch is empty.
// It leaves each column's varBytes of the rest of the chunk in colBytes.
func (b *Batcher) fit(chunk duckdb.DataChunk, from, n int) int {
	left := n - from
	budget := b.maxBytes - b.bytes()
	total := b.rowBytes*left + b.slowFor(left, n)
	for i, c := range b.cols {
		if c != nil {
			b.colBytes[i] = c.varBytes(duckdb.DataChunkGetVector(chunk, duckdb.IdxT(i)), from, left)
			total += b.colBytes[i]
		}
	}
	if total <= budget {
		return left
	}
	// Too much: find the row where it crosses.
	if cap(b.per) < left {
		b.per = make([]int, vectorSize)
	}
	per := b.per[:left]
	clear(per)
	for i, c := range b.cols {
		if c != nil {
			c.rowBytes(duckdb.DataChunkGetVector(chunk, duckdb.IdxT(i)), from, left, per)
		}
	}
	used := 0
	for i, v := range per {
		used += b.rowBytes + v
		if used+b.slowFor(i+1, n) > budget {
			if i == 0 && b.rows == 0 {
				return 1
			}
			return i
		}
	}
	return left
}

// convertSlow converts the slow columns of a whole chunk with DuckDB's own
// Arrow conversion, replacing the chunk before it.
func (b *Batcher) convertSlow(chunk duckdb.DataChunk, n int) error {
	b.releaseSlowArrs()
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
		b.slowArrs = append(b.slowArrs, col)
		b.slowArrsBytes += int(ipcx.ArrayBytes(col.Data()))
	}
	return nil
}

// appendSlow adds rows [from, from+k) of the converted chunk, of n rows,
// to the batch's slow columns.
func (b *Batcher) appendSlow(from, k, n int) {
	for j, col := range b.slowArrs {
		var part arrow.Array
		if from == 0 && k == n {
			col.Retain()
			part = col
		} else {
			part = array.NewSlice(col, int64(from), int64(from+k))
			b.slowSliced = true
		}
		b.slowParts[j] = append(b.slowParts[j], part)
	}
	b.slowBytes += b.slowFor(k, n)
	if from+k == n {
		b.releaseSlowArrs()
	}
}

func (b *Batcher) releaseSlowArrs() {
	for _, a := range b.slowArrs {
		a.Release()
	}
	b.slowArrs, b.slowArrsBytes = b.slowArrs[:0], 0
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
		if len(parts) == 1 && !b.slowSliced {
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
	b.rows, b.slowBytes, b.cut, b.slowSliced = 0, 0, false, false
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
	b.releaseSlowArrs()
	if b.slowChunk.Ptr != nil {
		duckdb.DestroyDataChunk(&b.slowChunk)
	}
}
