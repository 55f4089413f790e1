package ipcx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Decompress returns the uncompressed form of one IPC message: header is
// the flatbuffer Message, body its body. A compressed record or
// dictionary batch comes back with a new header (no BodyCompression, new
// buffer offsets) and a new body from alloc; any other message comes back
// unchanged, with changed false. The result is what an uncompressed writer
// would have sent, so arrow-go's stock reader loads it without copying.
func Decompress(header, body []byte, alloc func(n int) []byte) (newHeader, newBody []byte, changed bool, err error) {
	m, err := parseBatchMeta(header)
	if errors.Is(err, errNotBatch) {
		return header, body, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	if m.codec == CodecNone {
		return header, body, false, nil
	}
	if alloc == nil {
		alloc = func(n int) []byte { return make([]byte, n) }
	}
	out, err := decompressBatch(m, body, alloc)
	if err != nil {
		return nil, nil, false, err
	}
	return m.encode(), out, true, nil
}

// NewReader returns arrow-go's IPC stream reader over r, reading through
// NewMessageReader: the stock reader assembles batches, quiver
// decompresses them. Batches' buffers come from mem (nil: the default
// allocator). opts are arrow-go's reader options.
func NewReader(r io.Reader, mem memory.Allocator, opts ...ipc.Option) (*ipc.Reader, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	mr := NewMessageReader(r, mem)
	// The IPC reader takes over mr's reference and releases it.
	rdr, err := ipc.NewReaderFromMessageReader(mr, append([]ipc.Option{ipc.WithAllocator(mem)}, opts...)...)
	if err != nil {
		mr.Release()
		return nil, fmt.Errorf("read IPC stream: %w", err)
	}
	return rdr, nil
}

// messageReader reads IPC stream framing (continuation marker, metadata
// length, metadata, body) and hands out uncompressed messages. The
// compressed body is read into pooled scratch memory; the uncompressed
// body is the only large allocation a batch costs.
type messageReader struct {
	heldMessage
	r   io.Reader
	mem memory.Allocator
	hdr [8]byte
}

// NewMessageReader reads IPC stream messages from r and decompresses
// compressed batches (Decompress). Bodies are allocated from mem and
// freed when the last batch using them is released.
func NewMessageReader(r io.Reader, mem memory.Allocator) ipc.MessageReader {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	mr := &messageReader{r: r, mem: mem}
	mr.refs.Store(1)
	return mr
}

// heldMessage is a message reader's reference count and current
// message, which the next message or the last Release lets go.
type heldMessage struct {
	refs atomic.Int64
	msg  *ipc.Message
}

// Retain adds a reference.
func (h *heldMessage) Retain() { h.refs.Add(1) }

// Release drops a reference; the last one releases the current message.
func (h *heldMessage) Release() {
	if h.refs.Add(-1) == 0 {
		h.drop()
	}
}

// drop releases the current message.
func (h *heldMessage) drop() {
	if h.msg != nil {
		h.msg.Release()
		h.msg = nil
	}
}

// set makes meta and body the current message, handing over the
// caller's references.
func (h *heldMessage) set(meta, body *memory.Buffer) *ipc.Message {
	h.msg = ipc.NewMessage(meta, body)
	meta.Release()
	body.Release()
	return h.msg
}

// Message reads the next message; it is valid until the next call. At
// the end of the stream it returns io.EOF.
func (r *messageReader) Message() (*ipc.Message, error) {
	r.drop()
	if _, err := io.ReadFull(r.r, r.hdr[:4]); err != nil {
		return nil, fmt.Errorf("read IPC message: %w", err)
	}
	n := binary.LittleEndian.Uint32(r.hdr[:4])
	if n == 0xFFFFFFFF {
		if _, err := io.ReadFull(r.r, r.hdr[4:8]); err != nil {
			return nil, fmt.Errorf("read IPC message length: %w", unexpectedEOF(err))
		}
		n = binary.LittleEndian.Uint32(r.hdr[4:8])
	}
	if n == 0 {
		return nil, io.EOF
	}
	if n > 1<<30 {
		return nil, fmt.Errorf("read IPC message: metadata of %d bytes", n)
	}
	meta := make([]byte, n)
	if _, err := io.ReadFull(r.r, meta); err != nil {
		return nil, fmt.Errorf("read IPC message metadata: %w", unexpectedEOF(err))
	}
	bodyLen, err := fbBodyLength(meta)
	if err != nil {
		return nil, err
	}
	m, err := parseBatchMeta(meta)
	compressed := err == nil && m.codec != CodecNone
	if err != nil && !errors.Is(err, errNotBatch) {
		return nil, err
	}
	if !compressed {
		body := memory.NewResizableBuffer(r.mem)
		body.Resize(int(bodyLen))
		if _, err := io.ReadFull(r.r, body.Bytes()); err != nil {
			body.Release()
			return nil, fmt.Errorf("read IPC message body: %w", unexpectedEOF(err))
		}
		return r.set(memory.NewBufferBytes(meta), body), nil
	}
	in := getScratch(int(bodyLen))
	defer putScratch(in)
	if _, err := io.ReadFull(r.r, in); err != nil {
		return nil, fmt.Errorf("read IPC message body: %w", unexpectedEOF(err))
	}
	var body *memory.Buffer
	out, err := decompressBatch(m, in, func(n int) []byte {
		body = memory.NewResizableBuffer(r.mem)
		body.Resize(n)
		return body.Bytes()
	})
	if err != nil {
		if body != nil {
			body.Release()
		}
		return nil, err
	}
	body.Resize(len(out))
	return r.set(memory.NewBufferBytes(m.encode()), body), nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
