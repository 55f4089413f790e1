package convert

import (
	"encoding/binary"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
}

func newStringColumn(mem, gcMem memory.Allocator, dt arrow.DataType, capRows int) *stringColumn {
	return &stringColumn{validity: validity{mem: mem, capRows: capRows}, gcMem: gcMem, dt: dt}
}

// start allocates the batch's buffers on the first chunk of a batch.
func (c *stringColumn) start() {
	if c.offsets != nil {
		return
	}
	c.offsets = memory.NewResizableBuffer(c.mem)
	c.offsets.Resize((c.capRows + 1) * 4)
	c.data = memory.NewResizableBuffer(c.gcMem)
	c.data.Reserve(c.capRows * 16)
	c.size = 0
	binary.LittleEndian.PutUint32(c.offsets.Bytes(), 0)
}

func (c *stringColumn) offsetsSlice() []int32 {
	return unsafe.Slice((*int32)(unsafe.Pointer(&c.offsets.Bytes()[0])), c.capRows+1)
}

func (c *stringColumn) add(vec duckdb.Vector, n, at int) {
	c.start()
	offs := c.offsetsSlice()
	mask := duckdb.VectorGetValidity(vec)
	raw := unsafe.Slice((*[stringTSize]byte)(duckdb.VectorGetData(vec)), n)
	for i := range raw {
		if rowValid(mask, i) {
			s := &raw[i]
			l := int(binary.LittleEndian.Uint32(s[:4]))
			var src []byte
			if l <= stringInlined {
				src = s[4 : 4+l]
			} else {
				src = unsafe.Slice(*(**byte)(unsafe.Pointer(&s[8])), l)
			}
			c.appendBytes(src)
		}
		offs[at+i+1] = int32(c.size)
	}
	c.validity.add(vec, n, at)
}

func (c *stringColumn) appendBytes(b []byte) {
	need := c.size + len(b)
	if need > c.data.Cap() {
		grow := 2 * c.data.Cap()
		if grow < need {
			grow = need
		}
		c.data.Reserve(grow)
	}
	// Reserve keeps Len; write past it into the reserved capacity.
	copy(c.data.Buf()[c.size:need], b)
	c.size = need
}

func (c *stringColumn) finish(length int) arrow.Array {
	valid, nulls := c.take(length)
	offsets, data := c.offsets, c.data
	c.offsets, c.data = nil, nil
	data.ResizeNoShrink(c.size)
	offsets.ResizeNoShrink((length + 1) * 4)
	d := array.NewData(c.dt, length, []*memory.Buffer{valid, offsets, data}, nil, nulls, 0)
	releaseBuffers(valid, offsets, data)
	defer d.Release()
	return array.MakeFromData(d)
}

func (c *stringColumn) bytes() int { return c.size }

func (c *stringColumn) release() {
	c.validity.release()
	releaseBuffers(c.offsets, c.data)
	c.offsets, c.data = nil, nil
}
