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

// Seal signs a statement ticket's handle (prepared false) or a prepared
// statement's handle (prepared true) for user as a server whose ticket key
// is key does: how a test forges what only a replica could make.
func Seal(t testing.TB, key []byte, user string, prepared bool, handle []byte) []byte {
	t.Helper()
	kind := kindTicket
	if prepared {
		kind = kindPrepared
	}
	b, err := signer{key: key}.seal(kind, user, handle)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
