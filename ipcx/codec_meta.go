package ipcx

import (
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// The IPC message header is a flatbuffer (Message.fbs). arrow-go's
// generated accessors live in an internal package, so quiver reads and
// writes the few tables it needs itself: Message, RecordBatch,
// DictionaryBatch, BodyCompression and KeyValue. Field slots are the
// vtable offsets 4 + 2×(field index).

// Message fields.
const (
	fbMessageVersion    = 4
	fbMessageHeaderType = 6
	fbMessageHeader     = 8
	fbMessageBodyLength = 10
	fbMessageCustomMeta = 12
)

// MessageHeader union types.
const (
	fbHeaderDictionaryBatch = 2
	fbHeaderRecordBatch     = 3
)

// RecordBatch fields.
const (
	fbRecordLength      = 4
	fbRecordNodes       = 6
	fbRecordBuffers     = 8
	fbRecordCompression = 10
	fbRecordVariadic    = 12
)

// DictionaryBatch fields.
const (
	fbDictID      = 4
	fbDictData    = 6
	fbDictIsDelta = 8
)

// BodyCompression fields (codec defaults to LZ4_FRAME, method to BUFFER).
const (
	fbCompressionCodec  = 4
	fbCompressionMethod = 6
)

// KeyValue fields.
const (
	fbKey   = 4
	fbValue = 6
)

// fbStructSize is the size of a FieldNode and of a Buffer struct.
const fbStructSize = 16

// errNotBatch says a message is not a record or dictionary batch.
var errNotBatch = errors.New("not a record or dictionary batch")

// ipcBuffer is one Buffer struct of a RecordBatch: a range of the body.
type ipcBuffer struct {
	offset, length int64
}

// batchMeta is the header of a record or dictionary batch message, read
// so that its body can be compressed or decompressed and the header
// written again with new buffers and compression.
type batchMeta struct {
	version    int16
	headerType byte
	// Dictionary batches only.
	dictID  int64
	isDelta bool

	length   int64
	nodes    []byte // FieldNode structs, as stored
	buffers  []ipcBuffer
	codec    Codec // CodecNone when the body is not compressed
	variadic []int64

	bodyLength int64
	custom     [][2][]byte // custom_metadata key/value pairs, aliasing the input
}

// parseBatchMeta reads a message header. It returns errNotBatch for schema
// and other messages. A malformed flatbuffer is an error, not a panic.
func parseBatchMeta(meta []byte) (m *batchMeta, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("malformed IPC message header: %v", r)
		}
	}()
	if len(meta) < 8 {
		return nil, fmt.Errorf("malformed IPC message header: %d bytes", len(meta))
	}
	msg := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	m = &batchMeta{
		version:    msg.GetInt16Slot(fbMessageVersion, 0),
		headerType: msg.GetByteSlot(fbMessageHeaderType, 0),
		bodyLength: msg.GetInt64Slot(fbMessageBodyLength, 0),
	}
	if m.headerType != fbHeaderRecordBatch && m.headerType != fbHeaderDictionaryBatch {
		return nil, errNotBatch
	}
	o := flatbuffers.UOffsetT(msg.Offset(fbMessageHeader))
	if o == 0 {
		return nil, errors.New("malformed IPC message header: no header table")
	}
	hdr := flatbuffers.Table{Bytes: meta, Pos: msg.Indirect(o + msg.Pos)}
	rec := hdr
	if m.headerType == fbHeaderDictionaryBatch {
		m.dictID = hdr.GetInt64Slot(fbDictID, 0)
		m.isDelta = hdr.GetBoolSlot(fbDictIsDelta, false)
		o := flatbuffers.UOffsetT(hdr.Offset(fbDictData))
		if o == 0 {
			return nil, errors.New("malformed IPC message header: dictionary batch without data")
		}
		rec = flatbuffers.Table{Bytes: meta, Pos: hdr.Indirect(o + hdr.Pos)}
	}
	// vector returns a vector's start and length, checked against the
	// header's size before anything is allocated for it.
	vector := func(t flatbuffers.Table, slot flatbuffers.VOffsetT, elem int) (int, int, bool) {
		o := flatbuffers.UOffsetT(t.Offset(slot))
		if o == 0 {
			return 0, 0, false
		}
		start, n := int(t.Vector(o)), t.VectorLen(o)
		if n < 0 || start > len(meta) || n > (len(meta)-start)/elem {
			panic(fmt.Sprintf("vector of %d elements at %d in a %d-byte header", n, start, len(meta)))
		}
		return start, n, true
	}
	m.length = rec.GetInt64Slot(fbRecordLength, 0)
	if start, n, ok := vector(rec, fbRecordNodes, fbStructSize); ok {
		m.nodes = meta[start : start+n*fbStructSize]
	}
	if start, n, ok := vector(rec, fbRecordBuffers, fbStructSize); ok {
		raw := meta[start : start+n*fbStructSize]
		m.buffers = make([]ipcBuffer, n)
		for i := range m.buffers {
			m.buffers[i] = ipcBuffer{
				offset: int64(flatbuffers.GetInt64(raw[i*fbStructSize:])),
				length: int64(flatbuffers.GetInt64(raw[i*fbStructSize+8:])),
			}
		}
	}
	if o := flatbuffers.UOffsetT(rec.Offset(fbRecordCompression)); o != 0 {
		bc := flatbuffers.Table{Bytes: meta, Pos: rec.Indirect(o + rec.Pos)}
		if method := bc.GetInt8Slot(fbCompressionMethod, 0); method != 0 {
			return nil, fmt.Errorf("unsupported IPC body compression method %d", method)
		}
		if m.codec, err = codecFromFB(bc.GetInt8Slot(fbCompressionCodec, 0)); err != nil {
			return nil, err
		}
	}
	if start, n, ok := vector(rec, fbRecordVariadic, 8); ok {
		m.variadic = make([]int64, n)
		for i := range m.variadic {
			m.variadic[i] = flatbuffers.GetInt64(meta[start+8*i:])
		}
	}
	if start, n, ok := vector(msg, fbMessageCustomMeta, 4); ok {
		m.custom = make([][2][]byte, n)
		for i := range m.custom {
			kvPos := flatbuffers.UOffsetT(start + 4*i)
			kv := flatbuffers.Table{Bytes: meta, Pos: kvPos + flatbuffers.GetUOffsetT(meta[kvPos:])}
			if o := flatbuffers.UOffsetT(kv.Offset(fbKey)); o != 0 {
				m.custom[i][0] = kv.ByteVector(o + kv.Pos)
			}
			if o := flatbuffers.UOffsetT(kv.Offset(fbValue)); o != 0 {
				m.custom[i][1] = kv.ByteVector(o + kv.Pos)
			}
		}
	}
	for _, b := range m.buffers {
		if b.offset < 0 || b.length < 0 || b.offset > m.bodyLength || b.length > m.bodyLength-b.offset {
			return nil, fmt.Errorf("malformed IPC message header: buffer [%d, +%d) outside a %d-byte body", b.offset, b.length, m.bodyLength)
		}
	}
	return m, nil
}

// fbBodyLength reads a Message's bodyLength.
func fbBodyLength(meta []byte) (n int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("malformed IPC message header: %v", r)
		}
	}()
	if len(meta) < 8 {
		return 0, fmt.Errorf("malformed IPC message header: %d bytes", len(meta))
	}
	msg := flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
	n = msg.GetInt64Slot(fbMessageBodyLength, 0)
	if n < 0 || n > 1<<40 {
		return 0, fmt.Errorf("malformed IPC message header: body length %d", n)
	}
	return n, nil
}

// encode writes the header again, with m's buffers, codec and body length.
func (m *batchMeta) encode() []byte {
	b := flatbuffers.NewBuilder(256 + len(m.nodes) + fbStructSize*len(m.buffers))

	var customVec flatbuffers.UOffsetT
	if len(m.custom) > 0 {
		kvs := make([]flatbuffers.UOffsetT, len(m.custom))
		for i, kv := range m.custom {
			k, v := b.CreateByteString(kv[0]), b.CreateByteString(kv[1])
			b.StartObject(2)
			b.PrependUOffsetTSlot(0, k, 0)
			b.PrependUOffsetTSlot(1, v, 0)
			kvs[i] = b.EndObject()
		}
		customVec = b.CreateVectorOfTables(kvs)
	}

	var variadicVec flatbuffers.UOffsetT
	if m.variadic != nil {
		b.StartVector(8, len(m.variadic), 8)
		for i := len(m.variadic) - 1; i >= 0; i-- {
			b.PrependInt64(m.variadic[i])
		}
		variadicVec = b.EndVector(len(m.variadic))
	}
	var compression flatbuffers.UOffsetT
	if m.codec != CodecNone {
		b.StartObject(2)
		b.PrependInt8Slot(0, m.codec.fbType(), 0)
		b.PrependInt8Slot(1, 0, 0) // BUFFER
		compression = b.EndObject()
	}
	n := len(m.nodes) / fbStructSize
	b.StartVector(fbStructSize, n, 8)
	for i := n - 1; i >= 0; i-- {
		b.Prep(8, fbStructSize)
		b.PrependInt64(flatbuffers.GetInt64(m.nodes[i*fbStructSize+8:])) // null_count
		b.PrependInt64(flatbuffers.GetInt64(m.nodes[i*fbStructSize:]))   // length
	}
	nodesVec := b.EndVector(n)
	b.StartVector(fbStructSize, len(m.buffers), 8)
	for i := len(m.buffers) - 1; i >= 0; i-- {
		b.Prep(8, fbStructSize)
		b.PrependInt64(m.buffers[i].length)
		b.PrependInt64(m.buffers[i].offset)
	}
	buffersVec := b.EndVector(len(m.buffers))

	b.StartObject(5)
	b.PrependInt64Slot(0, m.length, 0)
	b.PrependUOffsetTSlot(1, nodesVec, 0)
	b.PrependUOffsetTSlot(2, buffersVec, 0)
	if compression != 0 {
		b.PrependUOffsetTSlot(3, compression, 0)
	}
	if variadicVec != 0 {
		b.PrependUOffsetTSlot(4, variadicVec, 0)
	}
	header := b.EndObject()
	if m.headerType == fbHeaderDictionaryBatch {
		b.StartObject(3)
		b.PrependInt64Slot(0, m.dictID, 0)
		b.PrependUOffsetTSlot(1, header, 0)
		b.PrependBoolSlot(2, m.isDelta, false)
		header = b.EndObject()
	}

	b.StartObject(5)
	b.PrependInt64Slot(3, m.bodyLength, 0)
	b.PrependUOffsetTSlot(2, header, 0)
	if customVec != 0 {
		b.PrependUOffsetTSlot(4, customVec, 0)
	}
	b.PrependInt16Slot(0, m.version, 0)
	b.PrependByteSlot(1, m.headerType, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// pad8 rounds n up to a multiple of 8, the alignment of IPC body buffers.
func pad8(n int64) int64 { return (n + 7) &^ 7 }
