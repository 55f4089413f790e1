package ipcx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/mem"
)

// An upload's batches are regrouped before DuckDB scans them: DuckDB
// writes a batch of at least a row group's rows straight to a row group of
// its own, in parallel, and merges smaller ones on one thread at the end.
// Reading each message into a batch of its own and concatenating batches
// afterwards copies every byte twice; GroupReader copies it once, from
// gRPC's receive buffers straight into the buffers of the group being
// built. It decodes flat schemas (fixed-width, boolean and binary
// columns); others are read by NewFlightReader.

// colKind is how a flat column's buffers are laid out.
type colKind uint8

const (
	kindFixed  colKind = iota // validity, values of a fixed width
	kindBool                  // validity, value bits
	kindBinary                // validity, int32 offsets, bytes
	kindLarge                 // validity, int64 offsets, bytes
)

// buffers is how many IPC buffers a column of the kind has.
func (k colKind) buffers() int {
	if k == kindBinary || k == kindLarge {
		return 3
	}
	return 2
}

// colKindOf is how GroupReader lays out a column of type t, and its value
// (or offset) width in bytes; ok is false for types it does not decode.
func colKindOf(t arrow.DataType) (kind colKind, width int, ok bool) {
	switch t.ID() {
	case arrow.BOOL:
		return kindBool, 0, true
	case arrow.STRING, arrow.BINARY:
		return kindBinary, 4, true
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return kindLarge, 8, true
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64,
		arrow.TIMESTAMP, arrow.DURATION,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256,
		arrow.FIXED_SIZE_BINARY,
		arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO:
		fw, ok := t.(arrow.FixedWidthDataType)
		if !ok || fw.BitWidth() <= 0 || fw.BitWidth()%8 != 0 {
			return 0, 0, false
		}
		return kindFixed, fw.BitWidth() / 8, true
	}
	return 0, 0, false
}

// GroupDecodable reports whether NewGroupReader reads batches of schema s:
// at least one column, and every column flat (fixed-width, boolean,
// string or binary), with no dictionary or extension types.
func GroupDecodable(s *arrow.Schema) bool {
	if s == nil || s.NumFields() == 0 {
		return false
	}
	for _, f := range s.Fields() {
		if _, _, ok := colKindOf(f.Type); !ok {
			return false
		}
	}
	return true
}

// GroupReader reads the record batches of a Flight upload (the server end
// of DoPut, after its schema message) as batches of at least min rows:
// each message's buffers are copied out of gRPC's receive buffers straight
// into the group being built, whose buffers come from the reader's
// allocator. A batch of min rows or more is one group of its own. The
// stream's connection must use ServerCodec. Compressed batches are
// decompressed first.
type GroupReader struct {
	refs atomic.Int64
	s    flightStream
	g    *groupBuilder
	cur  arrow.RecordBatch
	err  error
	eof  bool
}

// NewGroupReader reads the batches of schema (GroupDecodable) that stream
// brings, in groups of at least min rows, into memory from alloc (nil:
// Go memory).
func NewGroupReader(stream flightStream, schema *arrow.Schema, min int64, alloc memory.Allocator) (*GroupReader, error) {
	if !GroupDecodable(schema) {
		return nil, fmt.Errorf("ipcx: GroupReader cannot decode schema %s", schema)
	}
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	r := &GroupReader{s: stream, g: newGroupBuilder(schema, max(min, 1), alloc)}
	r.refs.Store(1)
	return r, nil
}

func (r *GroupReader) Schema() *arrow.Schema { return r.g.schema }

// Next reads messages until a group is complete or the stream ends.
func (r *GroupReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for {
		if len(r.g.ready) > 0 {
			r.cur = r.g.ready[0]
			r.g.ready = r.g.ready[1:]
			return true
		}
		if r.eof || r.err != nil {
			return false
		}
		m := groupMessage{g: r.g}
		err := r.s.RecvMsg(&m)
		switch {
		case errors.Is(err, io.EOF):
			r.eof = true
			r.g.flush()
		case err != nil:
			r.err = err
		case m.err != nil:
			r.err = m.err
		}
	}
}

func (r *GroupReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (r *GroupReader) Record() arrow.RecordBatch { return r.cur }

// Err is the stream's error: gRPC's status when the call failed, or what
// was wrong with a message. The end of the stream is not an error.
func (r *GroupReader) Err() error { return r.err }

func (r *GroupReader) Retain() { r.refs.Add(1) }

func (r *GroupReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.g.release()
}

// groupMessage is what a GroupReader receives: ServerCodec decodes its
// batch straight into the group. err is set, and the call still succeeds,
// when the message is malformed, so the reader can tell the client's
// mistake from the call's failure.
type groupMessage struct {
	g   *groupBuilder
	err error
}

func (m *groupMessage) unmarshal(data mem.BufferSlice) error {
	var header []byte
	bodyAt, bodyLen := -1, 0
	total := data.Len()
	err := walkFlightData(data, func(num uint64, r *mem.Reader, n int) error {
		switch num {
		case fieldDataHeader:
			header = make([]byte, n)
			io.ReadFull(r, header) // cannot fail: n ≤ Remaining
		case fieldDataBody:
			bodyAt, bodyLen = total-r.Remaining(), n
		}
		return nil
	})
	if err != nil {
		m.err = err
		return nil
	}
	if len(header) == 0 {
		if bodyLen > 0 {
			m.err = errors.New("read Flight stream: FlightData with a body but no IPC header")
		}
		return nil // app metadata alone
	}
	meta, err := parseBatchMeta(header)
	switch {
	case errors.Is(err, errNotBatch):
		m.err = errors.New("read Flight stream: a message other than a record batch after the schema")
		return nil
	case err != nil:
		m.err = fmt.Errorf("read Flight stream: %w", err)
		return nil
	}
	var body bodySrc
	body.slices(data, bodyAt, bodyLen)
	if meta.codec != CodecNone {
		// Compressed: decompress the body (read where gRPC left it when
		// one buffer holds it, else gathered once) into memory of its
		// own, then group from that.
		if bodyAt < 0 {
			m.err = errors.New("read Flight stream: a compressed record batch without a body")
			return nil
		}
		var out *memory.Buffer
		hdr, dec, _, err := Decompress(header, m.g.gather(&body), func(n int) []byte {
			out = memory.NewBufferWithAllocator(m.g.mem.Allocate(n), m.g.mem)
			return out.Bytes()
		})
		if out != nil {
			defer out.Release()
		}
		if err != nil {
			m.err = fmt.Errorf("read Flight stream: decompress: %w", err)
			return nil
		}
		if meta, err = parseBatchMeta(hdr); err != nil {
			m.err = fmt.Errorf("read Flight stream: %w", err)
			return nil
		}
		body.contiguous(dec)
	}
	m.err = m.g.append(meta, &body)
	return nil
}

// bodySrc is a message body, read at any offset: contiguous, or spread
// over gRPC's receive buffers.
type bodySrc struct {
	segs  [][]byte
	start []int // each segment's offset in the message
	at, n int   // the body's offset in the message, and length
	one   [1][]byte
	zero  [1]int
}

func (b *bodySrc) contiguous(p []byte) {
	b.one[0], b.zero[0] = p, 0
	b.segs, b.start, b.at, b.n = b.one[:], b.zero[:], 0, len(p)
}

func (b *bodySrc) slices(data mem.BufferSlice, at, n int) {
	b.segs, b.start = make([][]byte, len(data)), make([]int, len(data))
	off := 0
	for i, buf := range data {
		b.segs[i], b.start[i] = buf.ReadOnlyData(), off
		off += buf.Len()
	}
	b.at, b.n = max(at, 0), n
}

// span returns the body as one slice when a single buffer holds it, or
// nil.
func (b *bodySrc) span() []byte {
	i := sort.Search(len(b.start), func(i int) bool { return b.start[i] > b.at }) - 1
	if i < 0 || b.at+b.n > b.start[i]+len(b.segs[i]) {
		return nil
	}
	return b.segs[i][b.at-b.start[i] : b.at-b.start[i]+b.n]
}

// copyAt fills dst from the body's bytes at off; the caller has checked
// that they lie within the body.
func (b *bodySrc) copyAt(dst []byte, off int64) {
	abs := b.at + int(off)
	i := sort.Search(len(b.start), func(i int) bool { return b.start[i] > abs }) - 1
	for len(dst) > 0 {
		k := copy(dst, b.segs[i][abs-b.start[i]:])
		dst, abs = dst[k:], abs+k
		i++
	}
}

// offsetAt reads the width-byte little-endian offset at off.
func (b *bodySrc) offsetAt(off int64, width int) int64 {
	var p [8]byte
	b.copyAt(p[:width], off)
	if width == 4 {
		return int64(int32(binary.LittleEndian.Uint32(p[:])))
	}
	return int64(binary.LittleEndian.Uint64(p[:]))
}

// groupCol is one column of the group being built.
type groupCol struct {
	kind    colKind
	width   int
	valid   *memory.Buffer // nil while every value so far is valid
	values  *memory.Buffer // fixed-width values, value bits, or offsets
	data    *memory.Buffer // binary kinds: the bytes
	dataLen int64
}

// groupBuilder builds the groups of a GroupReader.
type groupBuilder struct {
	schema    *arrow.Schema
	min       int64
	maxBytes  int64 // maxGroupBytes
	mem       memory.Allocator
	cols      []groupCol
	rows, cap int64
	ready     []arrow.RecordBatch
	bits      []byte   // a bitmap on its way to an unaligned position
	need      []int64  // each binary column's bytes in the message
	first     []int64  // and its first offset
	nodes     []fbNode // the message's field nodes
	// scratch gathers a compressed body that spans gRPC's buffers.
	scratch []byte
}

// gather returns body's bytes in one slice: where they lie when one
// buffer holds them, else copied into g's scratch space, which the next
// call reuses.
func (g *groupBuilder) gather(body *bodySrc) []byte {
	if p := body.span(); p != nil {
		return p
	}
	if cap(g.scratch) < body.n {
		g.scratch = make([]byte, body.n)
	}
	g.scratch = g.scratch[:body.n]
	body.copyAt(g.scratch, 0)
	return g.scratch
}

// fbNode is an IPC FieldNode.
type fbNode struct{ length, nulls int64 }

func newGroupBuilder(schema *arrow.Schema, min int64, alloc memory.Allocator) *groupBuilder {
	g := &groupBuilder{schema: schema, min: min, maxBytes: maxGroupBytes, mem: alloc, cols: make([]groupCol, schema.NumFields())}
	for i, f := range schema.Fields() {
		g.cols[i].kind, g.cols[i].width, _ = colKindOf(f.Type)
	}
	g.need, g.first, g.nodes = make([]int64, len(g.cols)), make([]int64, len(g.cols)), make([]fbNode, len(g.cols))
	return g
}

func bitmapBytes(n int64) int64 { return (n + 7) / 8 }

// append adds one record batch message to the group, after checking that
// its buffers hold what its header says; a group that reaches min rows is
// finished.
func (g *groupBuilder) append(m *batchMeta, body *bodySrc) error {
	if m.headerType != fbHeaderRecordBatch {
		return errors.New("read Flight stream: a dictionary batch, but the schema has no dictionary")
	}
	if len(m.variadic) > 0 {
		return errors.New("read Flight stream: variadic buffer counts, but the schema has no view column")
	}
	if int64(body.n) < m.bodyLength {
		return fmt.Errorf("read Flight stream: message body is %d bytes, its header says %d", body.n, m.bodyLength)
	}
	k := m.length
	if k < 0 {
		return fmt.Errorf("read Flight stream: a record batch of %d rows", k)
	}
	if len(m.nodes) != len(g.cols)*fbStructSize {
		return fmt.Errorf("read Flight stream: %d field nodes for %d columns", len(m.nodes)/fbStructSize, len(g.cols))
	}
	nbuf := 0
	for _, c := range g.cols {
		nbuf += c.kind.buffers()
	}
	if len(m.buffers) != nbuf {
		return fmt.Errorf("read Flight stream: %d buffers for %d columns that have %d", len(m.buffers), len(g.cols), nbuf)
	}
	if k == 0 {
		return nil
	}
	// Check every column before any is changed.
	bi := 0
	for i, c := range g.cols {
		name := g.schema.Field(i).Name
		nd := fbNode{
			length: int64(binary.LittleEndian.Uint64(m.nodes[i*fbStructSize:])),
			nulls:  int64(binary.LittleEndian.Uint64(m.nodes[i*fbStructSize+8:])),
		}
		g.nodes[i] = nd
		if nd.length != k || nd.nulls < 0 || nd.nulls > k {
			return fmt.Errorf("read Flight stream: column %q: %d values with %d nulls in a batch of %d rows", name, nd.length, nd.nulls, k)
		}
		if nd.nulls > 0 && m.buffers[bi].length < bitmapBytes(k) {
			return fmt.Errorf("read Flight stream: column %q: validity bitmap of %d bytes for %d rows", name, m.buffers[bi].length, k)
		}
		vb := m.buffers[bi+1]
		var want int64
		switch c.kind {
		case kindFixed:
			if k > math.MaxInt64/int64(c.width) {
				return fmt.Errorf("read Flight stream: a record batch of %d rows", k)
			}
			want = k * int64(c.width)
		case kindBool:
			want = bitmapBytes(k)
		default:
			want = (k + 1) * int64(c.width)
		}
		if vb.length < want {
			return fmt.Errorf("read Flight stream: column %q: %d bytes of values for %d rows, want %d", name, vb.length, k, want)
		}
		if c.kind == kindBinary || c.kind == kindLarge {
			first, last := body.offsetAt(vb.offset, c.width), body.offsetAt(vb.offset+k*int64(c.width), c.width)
			if first < 0 || first > last || last > m.buffers[bi+2].length {
				return fmt.Errorf("read Flight stream: column %q: offsets %d to %d in %d bytes of data", name, first, last, m.buffers[bi+2].length)
			}
			g.first[i], g.need[i] = first, last-first
		}
		bi += c.kind.buffers()
	}
	if g.rows > 0 && g.overflows(k) {
		g.flush()
	}
	g.reserve(k)
	bi = 0
	for i := range g.cols {
		if err := g.appendCol(i, m.buffers[bi:], body, k); err != nil {
			return err
		}
		bi += g.cols[i].kind.buffers()
	}
	g.rows += k
	if g.rows >= g.min || g.bytes() >= g.maxBytes {
		g.flush()
	}
	return nil
}

// maxGroupBytes ends a group before it has min rows when its rows are
// wide: a row group of them would hold more memory than it is worth.
const maxGroupBytes = 128 << 20

// bytes is the group's size so far.
func (g *groupBuilder) bytes() int64 {
	var n int64
	for _, c := range g.cols {
		switch c.kind {
		case kindFixed:
			n += g.rows * int64(c.width)
		case kindBool:
			n += bitmapBytes(g.rows)
		default:
			n += g.rows*int64(c.width) + c.dataLen
		}
	}
	return n
}

// overflows reports whether k more rows would overflow the group's 32-bit
// offsets.
func (g *groupBuilder) overflows(k int64) bool {
	if g.rows+k > math.MaxInt32 {
		return true
	}
	for i, c := range g.cols {
		if c.kind == kindBinary && c.dataLen+g.need[i] > math.MaxInt32 {
			return true
		}
	}
	return false
}

// reserve makes room for k more rows. A new group is sized for as many
// batches like this one as it takes to reach min rows.
func (g *groupBuilder) reserve(k int64) {
	if g.rows == 0 {
		g.cap = k
		if k < g.min {
			g.cap = k * ((g.min + k - 1) / k)
		}
	}
	if g.rows+k > g.cap {
		g.cap = max(g.rows+k, g.cap+g.cap/2)
	}
	for i := range g.cols {
		c := &g.cols[i]
		if c.values == nil {
			c.values = memory.NewResizableBuffer(g.mem)
		}
		switch c.kind {
		case kindFixed:
			grow(c.values, g.cap*int64(c.width), 0)
		case kindBool:
			grow(c.values, bitmapBytes(g.cap), 0)
		default:
			grow(c.values, (g.cap+1)*int64(c.width), 0)
			if c.data == nil {
				c.data = memory.NewResizableBuffer(g.mem)
				// As many bytes a row as this batch has, within reason.
				grow(c.data, max(g.need[i], min(g.need[i]*(g.cap/k), g.maxBytes)), 0)
			}
			grow(c.data, c.dataLen+g.need[i], c.dataLen+c.dataLen/2)
		}
		if c.valid != nil {
			grow(c.valid, bitmapBytes(g.cap), 0)
		}
	}
}

// grow makes b's capacity at least n bytes, and at least more when it
// has to move.
func grow(b *memory.Buffer, n, more int64) {
	if int64(b.Cap()) < n {
		b.Reserve(int(max(n, more)))
	}
}

// appendCol copies column i of a k-row batch, whose buffers start at
// bufs[0], to the end of the group.
func (g *groupBuilder) appendCol(i int, bufs []ipcBuffer, body *bodySrc, k int64) error {
	c := &g.cols[i]
	switch {
	case g.nodes[i].nulls > 0:
		if c.valid == nil {
			c.valid = memory.NewResizableBuffer(g.mem)
			grow(c.valid, bitmapBytes(g.cap), 0)
			bitutil.SetBitsTo(c.valid.Buf(), 0, g.rows, true)
		}
		g.copyBits(c.valid.Buf(), body, bufs[0].offset, k)
	case c.valid != nil:
		bitutil.SetBitsTo(c.valid.Buf(), g.rows, k, true)
	}
	vals := c.values.Buf()
	switch c.kind {
	case kindFixed:
		w := int64(c.width)
		body.copyAt(vals[g.rows*w:(g.rows+k)*w], bufs[1].offset)
	case kindBool:
		g.copyBits(vals, body, bufs[1].offset, k)
	case kindBinary:
		offs := arrow.Int32Traits.CastFromBytes(vals)[g.rows : g.rows+k+1]
		body.copyAt(arrow.Int32Traits.CastToBytes(offs), bufs[1].offset)
		if !rebase(offs, int32(g.first[i]), int32(c.dataLen)) {
			return fmt.Errorf("read Flight stream: column %q: offsets decrease", g.schema.Field(i).Name)
		}
	case kindLarge:
		offs := arrow.Int64Traits.CastFromBytes(vals)[g.rows : g.rows+k+1]
		body.copyAt(arrow.Int64Traits.CastToBytes(offs), bufs[1].offset)
		if !rebase(offs, g.first[i], c.dataLen) {
			return fmt.Errorf("read Flight stream: column %q: offsets decrease", g.schema.Field(i).Name)
		}
	}
	if c.kind == kindBinary || c.kind == kindLarge {
		body.copyAt(c.data.Buf()[c.dataLen:c.dataLen+g.need[i]], bufs[2].offset+g.first[i])
		c.dataLen += g.need[i]
	}
	return nil
}

// rebase moves offsets that start at first to start at base, and reports
// whether they never decrease.
func rebase[T int32 | int64](offs []T, first, base T) bool {
	prev := first
	for j, v := range offs {
		if v < prev {
			return false
		}
		prev = v
		offs[j] = v - first + base
	}
	return true
}

// copyBits copies k bits at the body's offset off to the group's end in
// the bitmap dst.
func (g *groupBuilder) copyBits(dst []byte, body *bodySrc, off, k int64) {
	n := bitmapBytes(k)
	if g.rows%8 == 0 {
		body.copyAt(dst[g.rows/8:g.rows/8+n], off)
		return
	}
	if int64(cap(g.bits)) < n {
		g.bits = make([]byte, n)
	}
	src := g.bits[:n]
	body.copyAt(src, off)
	bitutil.CopyBitmap(src, 0, int(k), dst, int(g.rows))
}

// flush finishes the group being built, if it has rows, as a batch.
func (g *groupBuilder) flush() {
	if g.rows == 0 {
		return
	}
	arrs := make([]arrow.Array, len(g.cols))
	for i := range g.cols {
		c := &g.cols[i]
		nulls := 0
		var valid *memory.Buffer
		if c.valid != nil {
			c.valid.ResizeNoShrink(int(bitmapBytes(g.rows)))
			valid, nulls = c.valid, array.UnknownNullCount
		}
		bufs := []*memory.Buffer{valid, c.values}
		switch c.kind {
		case kindFixed:
			c.values.ResizeNoShrink(int(g.rows) * c.width)
		case kindBool:
			c.values.ResizeNoShrink(int(bitmapBytes(g.rows)))
		default:
			c.values.ResizeNoShrink(int(g.rows+1) * c.width)
			c.data.ResizeNoShrink(int(c.dataLen))
			bufs = append(bufs, c.data)
		}
		d := array.NewData(g.schema.Field(i).Type, int(g.rows), bufs, nil, nulls, 0)
		arrs[i] = array.MakeFromData(d)
		d.Release()
		c.releaseBuffers()
	}
	g.ready = append(g.ready, array.NewRecordBatch(g.schema, arrs, g.rows))
	for _, a := range arrs {
		a.Release()
	}
	g.rows = 0
}

// releaseBuffers gives up the column's references to its buffers.
func (c *groupCol) releaseBuffers() {
	for _, b := range []*memory.Buffer{c.valid, c.values, c.data} {
		if b != nil {
			b.Release()
		}
	}
	c.valid, c.values, c.data, c.dataLen = nil, nil, nil, 0
}

// release drops the group being built and the batches not yet read.
func (g *groupBuilder) release() {
	for i := range g.cols {
		g.cols[i].releaseBuffers()
	}
	for _, b := range g.ready {
		b.Release()
	}
	g.ready, g.rows = nil, 0
}
