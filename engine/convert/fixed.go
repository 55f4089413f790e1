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

// copyFunc converts n DuckDB values of the vector data at src, from its
// value from, into Arrow's layout in dst.
type copyFunc func(dst []byte, src unsafe.Pointer, from, n int)

// newFastColumn returns a direct-copy column for a DuckDB type whose Arrow
// type (as DuckDB maps it) has a layout we can copy, or nil when the column
// must take DuckDB's own Arrow conversion.
//
// Strings' bytes come from gcMem, so a string value stays valid (as Go
// memory does) after its batch is released.
func newFastColumn(mem, gcMem memory.Allocator, lt duckdb.LogicalType, dt arrow.DataType, capRows int) column {
	id := dt.ID()
	memcpyIf := func(want arrow.Type, width int) column {
		if id != want {
			return nil
		}
		return newFixed(mem, dt, width, capRows, memcpyN(width))
	}
	switch duckdb.GetTypeId(lt) {
	case duckdb.TypeBoolean:
		if id == arrow.BOOL {
			return &boolColumn{validity: validity{mem: mem, capRows: capRows}, mem: mem, dt: dt, capRows: capRows}
		}
	case duckdb.TypeTinyInt:
		return memcpyIf(arrow.INT8, 1)
	case duckdb.TypeSmallInt:
		return memcpyIf(arrow.INT16, 2)
	case duckdb.TypeInteger:
		return memcpyIf(arrow.INT32, 4)
	case duckdb.TypeBigInt:
		return memcpyIf(arrow.INT64, 8)
	case duckdb.TypeUTinyInt:
		return memcpyIf(arrow.UINT8, 1)
	case duckdb.TypeUSmallInt:
		return memcpyIf(arrow.UINT16, 2)
	case duckdb.TypeUInteger:
		return memcpyIf(arrow.UINT32, 4)
	case duckdb.TypeUBigInt:
		return memcpyIf(arrow.UINT64, 8)
	case duckdb.TypeFloat:
		return memcpyIf(arrow.FLOAT32, 4)
	case duckdb.TypeDouble:
		return memcpyIf(arrow.FLOAT64, 8)
	case duckdb.TypeDate:
		return memcpyIf(arrow.DATE32, 4)
	case duckdb.TypeTime:
		if t, ok := dt.(*arrow.Time64Type); ok && t.Unit == arrow.Microsecond {
			return newFixed(mem, dt, 8, capRows, memcpyN(8))
		}
	case duckdb.TypeTimestamp, duckdb.TypeTimestampTZ:
		return timestampIf(mem, dt, arrow.Microsecond, capRows)
	case duckdb.TypeTimestampS:
		return timestampIf(mem, dt, arrow.Second, capRows)
	case duckdb.TypeTimestampMS:
		return timestampIf(mem, dt, arrow.Millisecond, capRows)
	case duckdb.TypeTimestampNS:
		return timestampIf(mem, dt, arrow.Nanosecond, capRows)
	case duckdb.TypeHugeInt:
		// duckdb_hugeint is {uint64 lower; int64 upper}: Arrow's little-endian
		// decimal128 layout, bit for bit.
		return memcpyIf(arrow.DECIMAL128, 16)
	case duckdb.TypeDecimal:
		if id != arrow.DECIMAL128 {
			return nil
		}
		switch duckdb.DecimalInternalType(lt) {
		case duckdb.TypeSmallInt:
			return newFixed(mem, dt, 16, capRows, widenDecimal[int16])
		case duckdb.TypeInteger:
			return newFixed(mem, dt, 16, capRows, widenDecimal[int32])
		case duckdb.TypeBigInt:
			return newFixed(mem, dt, 16, capRows, widenDecimal[int64])
		case duckdb.TypeHugeInt:
			return newFixed(mem, dt, 16, capRows, memcpyN(16))
		}
	case duckdb.TypeInterval:
		if id == arrow.INTERVAL_MONTH_DAY_NANO {
			return newFixed(mem, dt, 16, capRows, intervalToMonthDayNano)
		}
	case duckdb.TypeVarchar:
		if id == arrow.STRING {
			return newStringColumn(mem, gcMem, dt, capRows)
		}
	case duckdb.TypeBlob:
		if id == arrow.BINARY {
			return newStringColumn(mem, gcMem, dt, capRows)
		}
	}
	return nil
}

func timestampIf(mem memory.Allocator, dt arrow.DataType, unit arrow.TimeUnit, capRows int) column {
	if t, ok := dt.(*arrow.TimestampType); ok && t.Unit == unit {
		return newFixed(mem, dt, 8, capRows, memcpyN(8))
	}
	return nil
}

func memcpyN(width int) copyFunc {
	return func(dst []byte, src unsafe.Pointer, from, n int) {
		copy(dst, unsafe.Slice((*byte)(unsafe.Add(src, from*width)), n*width))
	}
}

// widenDecimal sign-extends DuckDB's narrow decimal storage to decimal128.
func widenDecimal[T int16 | int32 | int64](dst []byte, src unsafe.Pointer, from, n int) {
	vals := unsafe.Slice((*T)(src), from+n)[from:]
	for i, v := range vals {
		lo := int64(v)
		binary.LittleEndian.PutUint64(dst[i*16:], uint64(lo))
		binary.LittleEndian.PutUint64(dst[i*16+8:], uint64(lo>>63))
	}
}

// intervalToMonthDayNano converts duckdb_interval {int32 months; int32 days;
// int64 micros} to Arrow's {int32 months; int32 days; int64 nanos}.
func intervalToMonthDayNano(dst []byte, src unsafe.Pointer, from, n int) {
	raw := unsafe.Slice((*byte)(unsafe.Add(src, from*16)), n*16)
	copy(dst, raw)
	for i := 0; i < n; i++ {
		p := dst[i*16+8:]
		binary.LittleEndian.PutUint64(p, uint64(int64(binary.LittleEndian.Uint64(p))*1000))
	}
}

// validity tracks a column's null bitmap. It stays unallocated until the
// first null arrives, so columns without nulls carry no bitmap.
type validity struct {
	mem     memory.Allocator
	capRows int
	buf     *memory.Buffer
}

// add copies the validity of n rows of vec, from its row from, into the
// bitmap at row offset at.
func (v *validity) add(vec duckdb.Vector, from, n, at int) {
	mask := duckdb.VectorGetValidity(vec)
	if mask == nil {
		if v.buf != nil {
			bitutil.SetBitsTo(v.buf.Bytes(), int64(at), int64(n), true)
		}
		return
	}
	src := unsafe.Slice((*byte)(mask), (from+n+7)/8)
	if v.buf == nil {
		if bitutil.CountSetBits(src, from, n) == n {
			return
		}
		v.buf = memory.NewResizableBuffer(v.mem)
		v.buf.Resize(int(bitutil.BytesForBits(int64(v.capRows))))
		bitutil.SetBitsTo(v.buf.Bytes(), 0, int64(at), true)
	}
	bitutil.CopyBitmap(src, from, n, v.buf.Bytes(), at)
}

// valid reports whether row i of the chunk being added is valid.
func rowValid(mask unsafe.Pointer, i int) bool {
	if mask == nil {
		return true
	}
	return bitutil.BitIsSet(unsafe.Slice((*byte)(mask), i/8+1), i)
}

// take hands the bitmap to a finished array and returns it with its null
// count.
func (v *validity) take(length int) (*memory.Buffer, int) {
	b := v.buf
	v.buf = nil
	if b == nil {
		return nil, 0
	}
	return b, length - bitutil.CountSetBits(b.Bytes(), 0, length)
}

func (v *validity) release() {
	if v.buf != nil {
		v.buf.Release()
		v.buf = nil
	}
}

// fixedColumn copies fixed-width values into one preallocated buffer.
type fixedColumn struct {
	validity
	dt    arrow.DataType
	width int
	conv  copyFunc
	data  *memory.Buffer
}

func newFixed(mem memory.Allocator, dt arrow.DataType, width, capRows int, conv copyFunc) *fixedColumn {
	return &fixedColumn{validity: validity{mem: mem, capRows: capRows}, dt: dt, width: width, conv: conv}
}

func (c *fixedColumn) add(vec duckdb.Vector, from, n, at, _ int) {
	if c.data == nil {
		c.data = memory.NewResizableBuffer(c.mem)
		c.data.Resize(c.capRows * c.width)
	}
	c.conv(c.data.Bytes()[at*c.width:(at+n)*c.width], duckdb.VectorGetData(vec), from, n)
	c.validity.add(vec, from, n, at)
}

func (c *fixedColumn) finish(length int) arrow.Array {
	valid, nulls := c.take(length)
	data := c.data
	c.data = nil
	d := array.NewData(c.dt, length, []*memory.Buffer{valid, data}, nil, nulls, 0)
	releaseBuffers(valid, data)
	defer d.Release()
	return array.MakeFromData(d)
}

func (c *fixedColumn) bytes() int { return 0 }

func (c *fixedColumn) varBytes(duckdb.Vector, int, int) int { return 0 }

func (c *fixedColumn) rowBytes(duckdb.Vector, int, int, []int) {}

// truncate has nothing to do: rows past the batch's are not read.
func (c *fixedColumn) truncate(int) {}

func (c *fixedColumn) release() {
	c.validity.release()
	releaseBuffers(c.data)
	c.data = nil
}

// boolColumn packs DuckDB's one-byte booleans into Arrow's bitmap.
type boolColumn struct {
	validity
	mem     memory.Allocator
	dt      arrow.DataType
	capRows int
	data    *memory.Buffer
}

func (c *boolColumn) add(vec duckdb.Vector, from, n, at, _ int) {
	if c.data == nil {
		c.data = memory.NewResizableBuffer(c.mem)
		c.data.Resize(int(bitutil.BytesForBits(int64(c.capRows))))
	}
	dst := c.data.Bytes()
	src := unsafe.Slice((*byte)(duckdb.VectorGetData(vec)), from+n)[from:]
	for i, b := range src {
		bitutil.SetBitTo(dst, at+i, b != 0)
	}
	c.validity.add(vec, from, n, at)
}

func (c *boolColumn) finish(length int) arrow.Array {
	valid, nulls := c.take(length)
	data := c.data
	c.data = nil
	d := array.NewData(c.dt, length, []*memory.Buffer{valid, data}, nil, nulls, 0)
	releaseBuffers(valid, data)
	defer d.Release()
	return array.MakeFromData(d)
}

func (c *boolColumn) bytes() int { return 0 }

func (c *boolColumn) varBytes(duckdb.Vector, int, int) int { return 0 }

func (c *boolColumn) rowBytes(duckdb.Vector, int, int, []int) {}

func (c *boolColumn) truncate(int) {}

func (c *boolColumn) release() {
	c.validity.release()
	releaseBuffers(c.data)
	c.data = nil
}

func releaseBuffers(bufs ...*memory.Buffer) {
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
}
