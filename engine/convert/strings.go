package convert

import (
	"encoding/binary"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// stringTSize is the size of DuckDB's duckdb_string_t: a 4-byte length, then
// either up to 12 inline bytes, or a 4-byte prefix and an 8-byte pointer.
const (
	stringTSize   = 16
	stringInlined = 12
)

// stringColumn converts VARCHAR and BLOB vectors into Arrow's 32-bit offsets
// plus one data buffer, without allocating per value.
type stringColumn struct {
	validity
	gcMem   memory.Allocator
	dt      arrow.DataType
	offsets *memory.Buffer
	data    *memory.Buffer
	size    int // bytes used in data
	// zeroed is set when gcMem is Go's allocator, which zeroes what it
	// hands out (see firstReserve); last is how many bytes the batch
	// before this one used.
	zeroed bool
	last   int
}

func newStringColumn(mem, gcMem memory.Allocator, dt arrow.DataType, capRows int) *stringColumn {
	_, zeroed := gcMem.(*memory.GoAllocator)
	return &stringColumn{validity: validity{mem: mem, capRows: capRows}, gcMem: gcMem, dt: dt, zeroed: zeroed}
}

// start allocates the batch's buffers on the first chunk of a batch.
func (c *stringColumn) start() {
	if c.offsets != nil {
		return
	}
	c.offsets = memory.NewResizableBuffer(c.mem)
	c.offsets.Resize((c.capRows + 1) * 4)
	c.data = memory.NewResizableBuffer(c.gcMem)
	c.data.Reserve(c.firstReserve())
	c.size = 0
	binary.LittleEndian.PutUint32(c.offsets.Bytes(), 0)
}

// firstReserve is the data buffer a batch starts with. A recycling
// allocator hands out memory unzeroed, so a batch takes room for all its
// rows at once and never copies. Fresh Go memory is zeroed as it is
// allocated: taking a whole batch's worth, 1 MiB a string column, made a
// one-row result (an EXPLAIN, a split plan's query, a point lookup over
// MySQL) three times slower than its query. So from the Go allocator a
// result's first batch starts with one vector's worth and doubles as its
// bytes come (reserve), and each later one starts with a little more
// than the batch before it used.
func (c *stringColumn) firstReserve() int {
	if !c.zeroed {
		return c.capRows * 16
	}
	return max(min(c.capRows, vectorSize)*16, c.last+c.last/8)
}

func (c *stringColumn) offsetsSlice() []int32 {
	return unsafe.Slice((*int32)(unsafe.Pointer(&c.offsets.Bytes()[0])), c.capRows+1)
}

// stringStructs is the duckdb_string_t structs of n rows of vec from its row
// from, and its validity bitmap from row 0 (nil when every row is valid).
func stringStructs(vec duckdb.Vector, from, n int) (raw [][stringTSize]byte, valid []byte) {
	raw = unsafe.Slice((*[stringTSize]byte)(duckdb.VectorGetData(vec)), from+n)[from:]
	if mask := duckdb.VectorGetValidity(vec); mask != nil {
		valid = unsafe.Slice((*byte)(mask), (from+n+7)/8)
	}
	return raw, valid
}

// varBytes sums the lengths of the valid rows; a null row's string is
// garbage.
func (c *stringColumn) varBytes(vec duckdb.Vector, from, n int) int {
	raw, valid := stringStructs(vec, from, n)
	total := 0
	for i := range raw {
		if valid == nil || bitutil.BitIsSet(valid, from+i) {
			total += int(binary.LittleEndian.Uint32(raw[i][:4]))
		}
	}
	return total
}

func (c *stringColumn) rowBytes(vec duckdb.Vector, from, n int, per []int) {
	raw, valid := stringStructs(vec, from, n)
	for i := range raw {
		if valid == nil || bitutil.BitIsSet(valid, from+i) {
			per[i] += int(binary.LittleEndian.Uint32(raw[i][:4]))
		}
	}
}

func (c *stringColumn) add(vec duckdb.Vector, from, n, at, total int) {
	c.start()
	offs := c.offsetsSlice()[at+1 : at+1+n]
	raw, valid := stringStructs(vec, from, n)
	// total, the bytes these rows add, lets the data buffer grow at most
	// once, so the copy runs without checks. An inlined value is copied
	// as one 12-byte word whatever its length (the buffer keeps that much
	// slack past its end); a null row's string is garbage and is skipped.
	c.reserve(c.size + total + stringInlined)
	buf := c.data.Buf()
	pos := c.size
	for i := range raw {
		if valid == nil || bitutil.BitIsSet(valid, from+i) {
			s := &raw[i]
			l := int(binary.LittleEndian.Uint32(s[:4]))
			if l <= stringInlined {
				*(*[stringInlined]byte)(buf[pos:]) = *(*[stringInlined]byte)(s[4:])
			} else {
				copy(buf[pos:pos+l], unsafe.Slice(*(**byte)(unsafe.Pointer(&s[8])), l))
			}
			pos += l
		}
		offs[i] = int32(pos)
	}
	c.size = pos
	c.validity.add(vec, from, n, at)
}

// appendBytes appends one value's bytes.
func (c *stringColumn) appendBytes(b []byte) {
	need := c.size + len(b)
	c.reserve(need)
	// Reserve keeps Len; write past it into the reserved capacity.
	copy(c.data.Buf()[c.size:need], b)
	c.size = need
}

// reserve makes room for need bytes of data, at least doubling.
func (c *stringColumn) reserve(need int) {
	if need > c.data.Cap() {
		c.data.Reserve(max(need, 2*c.data.Cap()))
	}
}

func (c *stringColumn) finish(length int) arrow.Array {
	valid, nulls := c.take(length)
	offsets, data, size := c.offsets, c.data, c.size
	// The next batch starts empty: Full must not count these bytes, or a
	// batch cut by bytes would leave the next one full before its first
	// row and end the result there.
	c.offsets, c.data, c.last, c.size = nil, nil, size, 0
	data.ResizeNoShrink(size)
	offsets.ResizeNoShrink((length + 1) * 4)
	d := array.NewData(c.dt, length, []*memory.Buffer{valid, offsets, data}, nil, nulls, 0)
	releaseBuffers(valid, offsets, data)
	defer d.Release()
	return array.MakeFromData(d)
}

func (c *stringColumn) bytes() int { return c.size }

// truncate ends the data where row rows starts.
func (c *stringColumn) truncate(rows int) {
	if c.offsets != nil {
		c.size = int(c.offsetsSlice()[rows])
	}
}

func (c *stringColumn) release() {
	c.validity.release()
	releaseBuffers(c.offsets, c.data)
	c.offsets, c.data = nil, nil
}
