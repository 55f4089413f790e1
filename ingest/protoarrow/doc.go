// Package protoarrow turns Protobuf wire bytes into Arrow record batches
// without generated code and without reflection on message objects.
//
// A .proto file is compiled at run time ([Compile]); the resulting message
// descriptor gives an Arrow schema ([Schema]) and a [Decoder]. The decoder
// compiles the descriptor once into a plan, a tree of per-field handlers
// indexed by field number, and walks each message's wire bytes with protowire
// straight into arrow-go array builders.
//
// # Type mapping
//
//	int32, sint32, sfixed32        int32
//	int64, sint64, sfixed64        int64
//	uint32, fixed32                uint32
//	uint64, fixed64                uint64
//	bool                           bool
//	float, double                  float32, float64
//	string                         utf8
//	bytes                          binary
//	enum                           utf8: the value's name, or the decimal number when unknown
//	message                        struct (every child nullable)
//	repeated T                     list<T> (elements not null)
//	map<K, V>                      map<K, V>
//	google.protobuf.Timestamp      timestamp[us, tz=UTC]
//	google.protobuf.*Value         the wrapped scalar, nullable
//
// Other well-known types (Duration, Any, ...) are ordinary messages.
// Recursive message types, google.protobuf.Struct among them, are rejected
// with [ErrRecursive]: every column must have a fixed depth.
//
// # Presence
//
// A top-level column is nullable exactly when the field has presence
// (message fields, proto3 optional, oneof members, proto2 optional): such a
// field is null when absent. Fields without presence (plain proto3 scalars,
// enums, repeated fields and maps) are never null and take their zero value
// (the empty list or map) when absent. Inside a struct every child is
// declared nullable because the struct itself may be null, but values follow
// the same rule: a present message gives its absent plain scalars their zero
// value.
//
// # Wire semantics
//
// Packed and unpacked encodings of repeated scalars are both accepted, even
// mixed in one message. When a singular scalar field occurs more than once
// the last occurrence wins. Repeated occurrences of a singular message field
// are merged, as proto.Unmarshal does: the message is decoded as if the
// occurrences were concatenated. Of a oneof, only the member that occurs
// last is kept. Unknown fields are skipped. Map entries keep their wire
// order, except that when a key repeats only its last entry is kept (Arrow
// and DuckDB maps need unique keys); an entry without its key or value gets
// the zero value, or for a message value its default instance.
//
// A known field whose wire type does not match its declaration is an error
// (proto.Unmarshal would treat it as unknown): a producer writing the wrong
// schema should land in a dead-letter table, not as zero values. Strings,
// map keys included, must be valid UTF-8 whatever the syntax, because Arrow
// utf8 requires it. Unknown enum numbers become decimal strings, in closed
// (proto2) enums too, where proto.Unmarshal would keep them as unknown
// fields. A Timestamp outside 0001-01-01..9999-12-31 or with nanos
// outside [0, 1e9) is rejected.
//
// # Rollback
//
// [Decoder.Append] parses and validates the whole message into a reusable
// scratch tree before it touches a builder, so a message it rejects leaves
// the pending batch exactly as it was.
//
// # Normalizer
//
// [WithNormalizer] adds a flat projection of chosen field paths, built from
// the same parse as the main record; see [WithNormalizer] for the spec syntax
// and the fan-out rules.
package protoarrow
