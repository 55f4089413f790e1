package ipcx

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MessageSender sends one message on a gRPC stream; every grpc.ServerStream
// (a Flight DoGet or DoExchange stream) is one.
type MessageSender interface {
	SendMsg(m any) error
}

// payloadWriter sends each IPC payload as one RawFlightData message.
type payloadWriter struct {
	s     MessageSender
	bytes int64
	// cur is the record being written: its buffers are the uncompressed
	// payload bodies, kept alive until gRPC has sent them.
	cur arrow.RecordBatch
}

func (w *payloadWriter) Start() error { return nil }

func (w *payloadWriter) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	defer meta.Release()
	fd := &RawFlightData{}
	if rec := w.cur; rec != nil {
		rec.Retain()
		fd.Hold = NewHold(rec.Release)
		defer fd.Hold.Done()
	}
	if meta != nil {
		fd.Header = meta.Bytes()
	}
	if err := p.SerializeBody(fd); err != nil {
		return err
	}
	w.bytes += int64(len(fd.Header) + fd.BodyLen())
	return w.s.SendMsg(fd)
}

func (w *payloadWriter) Close() error { return nil }

// Writer writes record batches to a Flight stream as IPC messages.
type Writer struct {
	*ipc.Writer
	pw *payloadWriter
}

// NewWriter returns an IPC writer over a Flight stream whose server
// installed ServerCodec. opts are arrow-go's IPC options: schema,
// compression. Record buffers are sent without copying and held until
// gRPC has written them, so they may come from a recycling allocator.
// Compressed bodies are allocated from Go memory that is never recycled:
// the IPC writer frees them as soon as it has handed them over.
func NewWriter(s MessageSender, opts ...ipc.Option) *Writer {
	pw := &payloadWriter{s: s}
	opts = append(opts, ipc.WithAllocator(memory.NewGoAllocator()))
	return &Writer{Writer: ipc.NewWriterWithPayloadWriter(pw, opts...), pw: pw}
}

// Write writes rec. It keeps a reference to rec until gRPC has sent the
// bytes that alias it.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	w.pw.cur = rec
	defer func() { w.pw.cur = nil }()
	return w.Writer.Write(rec)
}

// BytesSent is the IPC bytes (headers and bodies, after compression)
// written so far.
func (w *Writer) BytesSent() int64 { return w.pw.bytes }
