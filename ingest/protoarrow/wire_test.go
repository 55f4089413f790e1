package protoarrow

import "google.golang.org/protobuf/encoding/protowire"

// wire builds Protobuf wire bytes by hand, for inputs proto.Marshal never
// writes: mixed packing, repeated singular fields, unknown and malformed
// fields.
type wire []byte

func (w wire) varint(num protowire.Number, v uint64) wire {
	w = protowire.AppendTag(w, num, protowire.VarintType)
	return protowire.AppendVarint(w, v)
}

func (w wire) fixed32(num protowire.Number, v uint32) wire {
	w = protowire.AppendTag(w, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(w, v)
}

func (w wire) fixed64(num protowire.Number, v uint64) wire {
	w = protowire.AppendTag(w, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(w, v)
}

func (w wire) bytes(num protowire.Number, b []byte) wire {
	w = protowire.AppendTag(w, num, protowire.BytesType)
	return protowire.AppendBytes(w, b)
}

func (w wire) str(num protowire.Number, s string) wire { return w.bytes(num, []byte(s)) }

func (w wire) group(num protowire.Number, content []byte) wire {
	w = protowire.AppendTag(w, num, protowire.StartGroupType)
	w = append(w, content...)
	return protowire.AppendTag(w, num, protowire.EndGroupType)
}

func (w wire) tag(num protowire.Number, typ protowire.Type) wire {
	return protowire.AppendTag(w, num, typ)
}

func (w wire) raw(b ...byte) wire { return append(w, b...) }

// packedVarints encodes vs as a packed varint payload.
func packedVarints(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = protowire.AppendVarint(b, v)
	}
	return b
}
