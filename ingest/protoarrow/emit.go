package protoarrow

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protowire"
)

// emit appends the message held by f to the builders of n: one row of the
// record, one struct value, or one map entry.
func (n *msgNode) emit(f *frame) {
	for i, fn := range n.fields {
		s := &f.slots[i]
		switch fn.card {
		case cardSingle:
			if fn.kind != kindMessage {
				fn.appendLeaf(fn.b, s)
			} else if s.set {
				fn.st.Append(true)
				fn.child.emit(s.kid)
			} else if fn.presence {
				fn.st.AppendNull()
			} else {
				fn.st.Append(true)
				fn.child.emit(fn.child.empty)
			}
		case cardList:
			fn.list.Append(true)
			if s.set {
				fn.appendList(&f.lists[fn.li])
			}
		case cardMap:
			fn.mp.Append(true)
			if s.set {
				for _, kid := range f.lists[fn.li].kids {
					if !kid.skip {
						fn.child.emit(kid)
					}
				}
			}
		}
	}
}

// appendLeaf appends the singular non-struct value in s to b: its value,
// else null or the zero value depending on presence.
func (fn *fieldNode) appendLeaf(b array.Builder, s *slot) {
	if !s.set {
		if fn.presence {
			b.AppendNull()
		} else {
			fn.appendZero(b)
		}
		return
	}
	switch fn.kind {
	case kindTimestamp:
		fn.appendTimestamp(b, s.kid)
	case kindWrapper:
		fn.child.fields[0].appendLeaf(b, &s.kid.slots[0])
	default:
		fn.appendScalar(b, s.u, s.b)
	}
}

// appendElem appends element e of the repeated leaf field held in l.
func (fn *fieldNode) appendElem(b array.Builder, l *list, e int) {
	switch fn.kind {
	case kindTimestamp:
		fn.appendTimestamp(b, l.kids[e])
	case kindWrapper:
		fn.child.fields[0].appendLeaf(b, &l.kids[e].slots[0])
	case kindString, kindBytes:
		fn.appendScalar(b, 0, l.b[e])
	default:
		fn.appendScalar(b, l.u[e], nil)
	}
}

// listLen returns how many elements the repeated field held in l has.
func (fn *fieldNode) listLen(l *list) int {
	switch fn.kind {
	case kindMessage, kindTimestamp, kindWrapper:
		return len(l.kids)
	case kindString, kindBytes:
		return len(l.b)
	default:
		return len(l.u)
	}
}

// appendList appends the elements of a repeated field to its list's value
// builder; the caller has opened the list.
func (fn *fieldNode) appendList(l *list) {
	switch fn.kind {
	case kindMessage:
		for _, kid := range l.kids {
			fn.st.Append(true)
			fn.child.emit(kid)
		}
	case kindTimestamp, kindWrapper, kindString, kindBytes, kindEnum, kindBool, kindFloat, kindDouble:
		for e, n := 0, fn.listLen(l); e < n; e++ {
			fn.appendElem(fn.b, l, e)
		}
	default:
		fn.appendInts(l.u)
	}
}

// appendInts appends integer values in bulk.
func (fn *fieldNode) appendInts(vs []uint64) {
	switch fn.kind {
	case kindInt32, kindSint32, kindSfixed32:
		b := fn.b.(*array.Int32Builder)
		b.Reserve(len(vs))
		for _, v := range vs {
			b.UnsafeAppend(toInt32(fn.kind, v))
		}
	case kindInt64, kindSint64, kindSfixed64:
		b := fn.b.(*array.Int64Builder)
		b.Reserve(len(vs))
		for _, v := range vs {
			b.UnsafeAppend(toInt64(fn.kind, v))
		}
	case kindUint32, kindFixed32:
		b := fn.b.(*array.Uint32Builder)
		b.Reserve(len(vs))
		for _, v := range vs {
			b.UnsafeAppend(uint32(v))
		}
	case kindUint64, kindFixed64:
		b := fn.b.(*array.Uint64Builder)
		b.Reserve(len(vs))
		for _, v := range vs {
			b.UnsafeAppend(v)
		}
	}
}

// appendScalar appends one scalar value: u holds the varint or fixed bits,
// raw the bytes of a string or bytes field.
func (fn *fieldNode) appendScalar(b array.Builder, u uint64, raw []byte) {
	switch fn.kind {
	case kindInt32, kindSint32, kindSfixed32:
		b.(*array.Int32Builder).Append(toInt32(fn.kind, u))
	case kindInt64, kindSint64, kindSfixed64:
		b.(*array.Int64Builder).Append(toInt64(fn.kind, u))
	case kindUint32, kindFixed32:
		b.(*array.Uint32Builder).Append(uint32(u))
	case kindUint64, kindFixed64:
		b.(*array.Uint64Builder).Append(u)
	case kindBool:
		b.(*array.BooleanBuilder).Append(u != 0)
	case kindFloat:
		b.(*array.Float32Builder).Append(math.Float32frombits(uint32(u)))
	case kindDouble:
		b.(*array.Float64Builder).Append(math.Float64frombits(u))
	case kindEnum:
		b.(*array.StringBuilder).BinaryBuilder.Append(fn.enum.name(int32(u), fn.numBuf[:0]))
	case kindString:
		b.(*array.StringBuilder).BinaryBuilder.Append(raw)
	case kindBytes:
		b.(*array.BinaryBuilder).Append(raw)
	}
}

// appendZero appends the value an absent field without presence has.
func (fn *fieldNode) appendZero(b array.Builder) {
	switch fn.kind {
	case kindEnum:
		b.(*array.StringBuilder).BinaryBuilder.Append(fn.enum.zero)
	case kindTimestamp:
		b.(*array.TimestampBuilder).Append(0)
	case kindWrapper:
		fn.child.fields[0].appendZero(b)
	default:
		fn.appendScalar(b, 0, nil)
	}
}

// appendTimestamp appends a Timestamp as microseconds since the epoch;
// walk has checked its range.
func (fn *fieldNode) appendTimestamp(b array.Builder, ts *frame) {
	sec := int64(ts.slots[fn.secIdx].val())
	nanos := int64(int32(ts.slots[fn.nanoIdx].val()))
	b.(*array.TimestampBuilder).Append(arrow.Timestamp(sec*1_000_000 + nanos/1_000))
}

// toInt32 converts the raw bits of a 32-bit signed field.
func toInt32(k kind, u uint64) int32 {
	if k == kindSint32 {
		return int32(protowire.DecodeZigZag(u & math.MaxUint32))
	}
	return int32(u)
}

// toInt64 converts the raw bits of a 64-bit signed field.
func toInt64(k kind, u uint64) int64 {
	if k == kindSint64 {
		return protowire.DecodeZigZag(u)
	}
	return int64(u)
}
