package protoarrow

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Timestamp bounds, as google/protobuf/timestamp.proto defines them.
const (
	minTimestampSeconds = -62135596800 // 0001-01-01T00:00:00Z
	maxTimestampSeconds = 253402300799 // 9999-12-31T23:59:59Z
)

// walk parses the message b into the frame f of plan n, validating every
// value. It never touches a builder; base is cap of the whole input, for
// error offsets.
func walk(n *msgNode, f *frame, b []byte, base int) error {
	for len(b) > 0 {
		at := b
		var tag uint64
		if c := b[0]; c < 0x80 {
			tag, b = uint64(c), b[1:]
		} else {
			v, m := consumeVarint(b)
			if m < 0 {
				return errAt(nil, at, base, wireError(m))
			}
			tag, b = v, b[m:]
		}
		if tag>>3 == 0 || tag>>3 > uint64(protowire.MaxValidNumber) {
			return errAt(nil, at, base, fmt.Errorf("%w: %d", ErrFieldNumber, tag>>3))
		}
		num, typ := protowire.Number(tag>>3), protowire.Type(tag&7)

		i := n.index(num)
		if i < 0 {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return errAt(nil, at, base, fmt.Errorf("skip unknown field %d: %w", num, wireError(m)))
			}
			b = b[m:]
			continue
		}
		fn := n.fields[i]
		s := &f.slots[i]
		for _, j := range fn.oneof { // a oneof keeps only its last member
			f.slots[j].set = false
		}

		var m int
		var err error
		switch fn.op {
		case opVarint, opFixed32, opFixed64:
			if typ != fn.wire {
				return errAt(fn, at, base, wireTypeError(typ, fn))
			}
			s.u, m, err = consumeScalar(fn.wire, b)
			s.set = true
		case opString, opBytes:
			if typ != protowire.BytesType {
				return errAt(fn, at, base, wireTypeError(typ, fn))
			}
			s.b, m, err = consumeBytes(b)
			if err == nil && fn.op == opString && !utf8.Valid(s.b) {
				err = ErrInvalidUTF8
			}
			s.set = true
		case opMessage:
			var v []byte
			if v, m, err = consumeMessage(fn, typ, b); err != nil {
				break
			}
			if !s.set {
				s.kid, s.set = fn.child.get(), true
			}
			if err := walk(fn.child, s.kid, v, base); err != nil {
				return within(err, fn.name)
			}
			if fn.kind == kindTimestamp {
				err = checkTimestamp(fn, s.kid)
			}
		case opListVarint, opListFixed32, opListFixed64:
			l := &f.lists[fn.li]
			s.set = true
			switch typ {
			case fn.wire:
				var v uint64
				v, m, err = consumeScalar(fn.wire, b)
				l.u = append(l.u, v)
			case protowire.BytesType:
				var v []byte
				if v, m, err = consumeBytes(b); err == nil {
					l.u, err = unpack(fn.wire, v, l.u)
				}
			default:
				return errAt(fn, at, base, wireTypeError(typ, fn))
			}
		case opListString, opListBytes:
			if typ != protowire.BytesType {
				return errAt(fn, at, base, wireTypeError(typ, fn))
			}
			l := &f.lists[fn.li]
			var v []byte
			v, m, err = consumeBytes(b)
			if err == nil && fn.op == opListString && !utf8.Valid(v) {
				err = ErrInvalidUTF8
			}
			l.b = append(l.b, v)
			s.set = true
		case opListMessage:
			var v []byte
			if v, m, err = consumeMessage(fn, typ, b); err != nil {
				break
			}
			l := &f.lists[fn.li]
			kid := fn.child.get()
			l.kids = append(l.kids, kid)
			s.set = true
			if err := walk(fn.child, kid, v, base); err != nil {
				return within(err, fn.name+"["+strconv.Itoa(len(l.kids)-1)+"]")
			}
			if fn.kind == kindTimestamp {
				if err := checkTimestamp(fn, kid); err != nil {
					return within(errAt(nil, at, base, err), fn.name+"["+strconv.Itoa(len(l.kids)-1)+"]")
				}
			}
		}
		if err != nil {
			return errAt(fn, at, base, err)
		}
		b = b[m:]
	}
	return nil
}

// consumeVarint is protowire.ConsumeVarint with the one- and two-byte cases
// inlined.
func consumeVarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	if len(b) > 1 && b[1] < 0x80 {
		return uint64(b[0]&0x7f) | uint64(b[1])<<7, 2
	}
	return protowire.ConsumeVarint(b)
}

// consumeScalar reads one varint, fixed32 or fixed64 value.
func consumeScalar(wire protowire.Type, b []byte) (uint64, int, error) {
	switch wire {
	case protowire.Fixed32Type:
		if len(b) < 4 {
			return 0, 0, ErrTruncated
		}
		return uint64(binary.LittleEndian.Uint32(b)), 4, nil
	case protowire.Fixed64Type:
		if len(b) < 8 {
			return 0, 0, ErrTruncated
		}
		return binary.LittleEndian.Uint64(b), 8, nil
	default:
		v, m := consumeVarint(b)
		if m < 0 {
			return 0, 0, wireError(m)
		}
		return v, m, nil
	}
}

// consumeBytes reads a length-delimited value.
func consumeBytes(b []byte) ([]byte, int, error) {
	l, m := consumeVarint(b)
	if m < 0 {
		return nil, 0, wireError(m)
	}
	if rest := uint64(len(b) - m); l > rest {
		return nil, 0, fmt.Errorf("%w: length %d, %d bytes left", ErrLengthOverflow, l, rest)
	}
	end := m + int(l)
	return b[m:end], end, nil // keep cap: errAt derives offsets from it
}

// consumeMessage reads a message value, length-delimited or as a group,
// whichever fn declares.
func consumeMessage(fn *fieldNode, typ protowire.Type, b []byte) ([]byte, int, error) {
	if typ != fn.wire {
		return nil, 0, wireTypeError(typ, fn)
	}
	if typ == protowire.StartGroupType {
		v, m := protowire.ConsumeGroup(fn.num, b)
		if m < 0 {
			return nil, 0, wireError(m)
		}
		return v, m, nil
	}
	return consumeBytes(b)
}

// unpack appends the packed values in v to dst.
func unpack(wire protowire.Type, v []byte, dst []uint64) ([]uint64, error) {
	switch wire {
	case protowire.Fixed32Type:
		if len(v)%4 != 0 {
			return dst, fmt.Errorf("%w: packed fixed32 length %d is not a multiple of 4", ErrTruncated, len(v))
		}
		for ; len(v) > 0; v = v[4:] {
			dst = append(dst, uint64(binary.LittleEndian.Uint32(v)))
		}
	case protowire.Fixed64Type:
		if len(v)%8 != 0 {
			return dst, fmt.Errorf("%w: packed fixed64 length %d is not a multiple of 8", ErrTruncated, len(v))
		}
		for ; len(v) > 0; v = v[8:] {
			dst = append(dst, binary.LittleEndian.Uint64(v))
		}
	default:
		for len(v) > 0 {
			x, m := consumeVarint(v)
			if m < 0 {
				return dst, fmt.Errorf("packed varint: %w", wireError(m))
			}
			dst = append(dst, x)
			v = v[m:]
		}
	}
	return dst, nil
}

// checkTimestamp rejects a Timestamp outside the range its definition allows,
// which would also overflow microseconds.
func checkTimestamp(fn *fieldNode, ts *frame) error {
	sec := int64(ts.slots[fn.secIdx].val())
	nanos := int32(ts.slots[fn.nanoIdx].val())
	if sec < minTimestampSeconds || sec > maxTimestampSeconds {
		return fmt.Errorf("%w: seconds %d out of range", ErrInvalidTimestamp, sec)
	}
	if nanos < 0 || nanos > 999_999_999 {
		return fmt.Errorf("%w: nanos %d out of range", ErrInvalidTimestamp, nanos)
	}
	return nil
}

// errAt builds the DecodeError for a problem at the start of at.
func errAt(fn *fieldNode, at []byte, base int, err error) error {
	e := &DecodeError{Offset: base - cap(at), Err: err}
	if fn != nil {
		e.Path = fn.name
	}
	return e
}

// within prefixes the path of an error from a nested message with seg.
func within(err error, seg string) error {
	if e, ok := err.(*DecodeError); ok {
		if e.Path == "" {
			e.Path = seg
		} else {
			e.Path = seg + "." + e.Path
		}
	}
	return err
}

// wireTypeError describes a field that arrived with the wrong wire type.
func wireTypeError(got protowire.Type, fn *fieldNode) error {
	want := wireName(fn.wire)
	if fn.op >= opListVarint && fn.op <= opListFixed64 {
		want += " or bytes (packed)"
	}
	return fmt.Errorf("%w: got %s, want %s", ErrWireType, wireName(got), want)
}

// wireName names a wire type for messages.
func wireName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "bytes"
	case protowire.StartGroupType:
		return "start-group"
	case protowire.EndGroupType:
		return "end-group"
	default:
		return "reserved wire type " + strconv.Itoa(int(t))
	}
}
