package flightsql

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Arrow IPC metadata from a client is checked before arrow-go reads it.
// arrow-go sizes slices by the counts the flatbuffers claim before reading
// the entries (a schema claiming 2^32 fields allocates them all, and the
// process dies of it, past any recover), and follows field children
// without bounding the work: a field that lists itself as its child, or a
// few fields shared as each other's children many times over, make it
// recurse without end or for exponentially long. checkIPCStream and
// checkIPCMessage refuse such metadata: every vector arrow-go preallocates
// by must fit in the message's bytes, fields nest at most maxFieldDepth
// deep, and a schema has at most maxFields fields in all.
const (
	maxFieldDepth = 64
	maxFields     = 10_000
)

// errIPC is wrapped by every error of the checks.
var errIPC = errors.New("malformed Arrow IPC metadata")

func ipcErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errIPC, fmt.Sprintf(format, args...))
}

// checkIPCStream checks every message of an IPC stream (continuation
// markers, metadata and bodies) fits in b and has sound metadata.
func checkIPCStream(b []byte) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return ipcErrorf("truncated message length")
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if n == 0xFFFFFFFF { // continuation marker, then the length
			if len(b) < 4 {
				return ipcErrorf("truncated message length")
			}
			n = binary.LittleEndian.Uint32(b)
			b = b[4:]
		}
		if n == 0 {
			return nil // end of stream
		}
		if uint64(n) > uint64(len(b)) {
			return ipcErrorf("message of %d bytes in %d", n, len(b))
		}
		body, err := checkIPCMessage(b[:n])
		if err != nil {
			return err
		}
		b = b[n:]
		if body < 0 || body > int64(len(b)) {
			return ipcErrorf("message body of %d bytes in %d", body, len(b))
		}
		b = b[body:]
	}
	return nil
}

// checkIPCMessage checks one flatbuffer Message and returns the body
// length it declares.
func checkIPCMessage(meta []byte) (int64, error) {
	f := fbuf(meta)
	root, ok := f.u32(0)
	if !ok {
		return 0, ipcErrorf("no root table")
	}
	msg, ok := f.table(root)
	if !ok {
		return 0, ipcErrorf("bad message table")
	}
	// Message: version 0, header_type 1, header 2, bodyLength 3,
	// custom_metadata 4.
	if _, ok := msg.vector(4, 4); !ok {
		return 0, ipcErrorf("bad message metadata")
	}
	body, ok := msg.i64(3)
	if !ok {
		return 0, ipcErrorf("bad body length")
	}
	kind, ok := msg.u8(1)
	if !ok {
		return 0, ipcErrorf("bad header type")
	}
	header, present, ok := msg.child(2)
	if !ok {
		return 0, ipcErrorf("bad message header")
	}
	if !present {
		return body, nil
	}
	switch kind {
	case 1: // Schema
		return body, checkSchema(header)
	case 2: // DictionaryBatch: id 0, data 1, isDelta 2
		data, present, ok := header.child(1)
		if !ok {
			return 0, ipcErrorf("bad dictionary batch")
		}
		if present {
			return body, checkRecordBatch(data)
		}
	case 3: // RecordBatch
		return body, checkRecordBatch(header)
	}
	return body, nil
}

// checkSchema checks a Schema table: endianness 0, fields 1,
// custom_metadata 2, features 3.
func checkSchema(s fbTable) error {
	fields, ok := s.vector(1, 4)
	if !ok {
		return ipcErrorf("bad schema fields")
	}
	if _, ok := s.vector(2, 4); !ok {
		return ipcErrorf("bad schema metadata")
	}
	if _, ok := s.vector(3, 8); !ok {
		return ipcErrorf("bad schema features")
	}
	count := 0
	return checkFields(s.f, fields, 1, &count)
}

// checkFields checks the Field tables a vector of offsets points to: name
// 0, nullable 1, type_type 2, type 3, dictionary 4, children 5,
// custom_metadata 6.
func checkFields(f fbuf, v fbVector, depth int, count *int) error {
	if depth > maxFieldDepth {
		return ipcErrorf("fields nested over %d deep", maxFieldDepth)
	}
	for i := range v.n {
		*count++
		if *count > maxFields {
			return ipcErrorf("over %d fields", maxFields)
		}
		field, ok := f.indirect(v.start + 4*i)
		if !ok {
			return ipcErrorf("bad field")
		}
		if _, ok := field.vector(6, 4); !ok {
			return ipcErrorf("bad field metadata")
		}
		children, ok := field.vector(5, 4)
		if !ok {
			return ipcErrorf("bad field children")
		}
		if err := checkFields(f, children, depth+1, count); err != nil {
			return err
		}
	}
	return nil
}

// checkRecordBatch checks a RecordBatch table: length 0, nodes 1 (16-byte
// structs), buffers 2 (16-byte structs), compression 3,
// variadicBufferCounts 4 (longs).
func checkRecordBatch(rb fbTable) error {
	for _, v := range []struct{ slot, size int }{{1, 16}, {2, 16}, {4, 8}} {
		if _, ok := rb.vector(v.slot, v.size); !ok {
			return ipcErrorf("bad record batch")
		}
	}
	return nil
}

// fbuf is flatbuffer bytes, read with every offset checked.
type fbuf []byte

func (f fbuf) u32(pos int) (int, bool) {
	if pos < 0 || pos > len(f)-4 {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(f[pos:])), true
}

func (f fbuf) u16(pos int) (int, bool) {
	if pos < 0 || pos > len(f)-2 {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(f[pos:])), true
}

// table reads the table at pos and its vtable.
func (f fbuf) table(pos int) (fbTable, bool) {
	soff, ok := f.u32(pos)
	if !ok {
		return fbTable{}, false
	}
	vt := pos - int(int32(uint32(soff)))
	vsize, ok := f.u16(vt)
	if !ok || vsize < 4 || vt+vsize > len(f) {
		return fbTable{}, false
	}
	return fbTable{f: f, pos: pos, vt: vt, vsize: vsize}, true
}

// indirect reads the table an offset at pos points to.
func (f fbuf) indirect(pos int) (fbTable, bool) {
	off, ok := f.u32(pos)
	if !ok {
		return fbTable{}, false
	}
	return f.table(pos + off)
}

type fbTable struct {
	f              fbuf
	pos, vt, vsize int
}

// fbVector is a vector's first element and length.
type fbVector struct{ start, n int }

// field is the offset of a slot's value from the table, 0 when absent.
func (t fbTable) field(slot int) (int, bool) {
	voff := 4 + 2*slot
	if voff+2 > t.vsize {
		return 0, true
	}
	o, ok := t.f.u16(t.vt + voff)
	return o, ok
}

// vector reads the vector in slot, whose elements take size bytes each;
// ok is false when it does not fit in the buffer.
func (t fbTable) vector(slot, size int) (fbVector, bool) {
	o, ok := t.field(slot)
	if !ok || o == 0 {
		return fbVector{}, ok
	}
	p := t.pos + o
	rel, ok := t.f.u32(p)
	if !ok {
		return fbVector{}, false
	}
	n, ok := t.f.u32(p + rel)
	if !ok {
		return fbVector{}, false
	}
	start := p + rel + 4
	if int64(n)*int64(size) > int64(len(t.f)-start) {
		return fbVector{}, false
	}
	return fbVector{start: start, n: n}, true
}

// child reads the table in slot; present is false when there is none.
func (t fbTable) child(slot int) (c fbTable, present, ok bool) {
	o, ok := t.field(slot)
	if !ok || o == 0 {
		return fbTable{}, false, ok
	}
	c, ok = t.f.indirect(t.pos + o)
	return c, ok, ok
}

func (t fbTable) u8(slot int) (byte, bool) {
	o, ok := t.field(slot)
	if !ok || o == 0 {
		return 0, ok
	}
	p := t.pos + o
	if p < 0 || p >= len(t.f) {
		return 0, false
	}
	return t.f[p], true
}

func (t fbTable) i64(slot int) (int64, bool) {
	o, ok := t.field(slot)
	if !ok || o == 0 {
		return 0, ok
	}
	p := t.pos + o
	if p < 0 || p > len(t.f)-8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(t.f[p:])), true
}
