package flightsql

import (
	"encoding/binary"
	"testing"
)

// ForgedSchemaMessage is the IPC metadata of a schema message claiming
// 2^31 fields, which arrow-go would allocate before reading them.
func ForgedSchemaMessage(t testing.TB) []byte {
	stream := sampleParams(t)
	meta := append([]byte(nil), stream[8:8+int(binary.LittleEndian.Uint32(stream[4:]))]...)
	f := fbuf(meta)
	root, _ := f.u32(0)
	msg, _ := f.table(root)
	schema, _, _ := msg.child(2)
	fields, ok := schema.vector(1, 4)
	if !ok {
		t.Fatal("no fields in the sample schema")
	}
	binary.LittleEndian.PutUint32(meta[fields.start-4:], 0x7fffffff)
	return meta
}
