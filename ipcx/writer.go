package ipcx

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/quiverdata/quiver/internal/panics"
)

// MessageSender sends one message on a gRPC stream; every grpc.ServerStream
// (a Flight DoGet or DoExchange stream) is one.
type MessageSender interface {
	SendMsg(m any) error
}

// Compression says how a Writer compresses record batch bodies.
type Compression struct {
	// Codec compresses every batch. Ignored when Auto is set.
	Codec Codec
	// Auto picks the codec batch by batch from the delivery rate each
	// codec achieves on this stream (see AutoChooser).
	Auto bool
	// MinSavings is the fraction a buffer must shrink by to be sent
	// compressed; 0 means DefaultMinSavings.
	MinSavings float64
	// Peer is the client's host (an IP address). Auto sends a peer on
	// this host uncompressed, and starts any other with the codec Memory
	// remembers for it (DefaultPeerMemory when Memory is nil).
	Peer   string
	Memory *PeerMemory
	// Observe, when set, is told about every batch sent (codec used,
	// sizes, timings): metrics and tests.
	Observe func(BatchStat)
	// chooser replaces the auto chooser (tests).
	chooser Chooser
}

// ParseCompression reads a compression name: none, lz4, zstd or auto.
func ParseCompression(name string) (Compression, error) {
	if strings.EqualFold(strings.TrimSpace(name), "auto") {
		return Compression{Auto: true}, nil
	}
	c, err := ParseCodec(name)
	if err != nil {
		return Compression{}, fmt.Errorf("unknown compression %q: use lz4, zstd, none or auto", name)
	}
	return Compression{Codec: c}, nil
}

// String is the compression's name.
func (c Compression) String() string {
	if c.Auto {
		return "auto"
	}
	return c.Codec.String()
}

// enabled reports whether any batch may be compressed.
func (c Compression) enabled() bool { return c.Auto || c.Codec != CodecNone }

// BatchStat describes one batch message as it was sent.
type BatchStat struct {
	Codec Codec
	Rows  int64
	// RawBytes is the uncompressed body; WireBytes the header and body
	// as sent.
	RawBytes, WireBytes int64
	// EncodeStart is when compression of the batch began, Encode how
	// long it took (zero for none). Batches compress while earlier ones
	// still do, so Encode alone overstates the time per batch.
	EncodeStart time.Time
	Encode      time.Duration
	// Send is how long SendMsg blocked; Sent is when it returned.
	Send time.Duration
	Sent time.Time
	// Probes are samples of this batch compressed with other codecs,
	// when the chooser asked for them.
	Probes []ProbeStat
}

// prober is a Chooser that wants samples of batches compressed with
// codecs it has not used.
type prober interface {
	Probe() []Codec
}

// Chooser picks the codec of each batch of one stream and learns from
// the batches sent. Choose is called by the writing goroutine and Observe
// by the sending one, so an implementation must be safe for that.
type Chooser interface {
	Choose() Codec
	Observe(BatchStat)
}

type fixedChooser Codec

func (c fixedChooser) Choose() Codec   { return Codec(c) }
func (fixedChooser) Observe(BatchStat) {}

// pipelineDepth is how many compressed batches may wait for the sender
// while the next one is compressed: compression of batch N+1 overlaps the
// send of batch N.
const pipelineDepth = 2

// outMsg is one IPC message on its way to the sender.
type outMsg struct {
	header []byte
	body   [][]byte // the uncompressed body, as arrow-go serialised it
	hold   *Hold
	job    *encodeJob // nil: send as is
	codec  Codec
	// record: a record batch (not a dictionary), whose codec the
	// chooser picked.
	record bool
	rows   int64
	raw    int64
	// probes, when set, are filled by a probe goroutine that closes
	// probed; probeErr is that goroutine's panic.
	probes   []ProbeStat
	probed   chan struct{}
	probeErr error
}

// payloadWriter sends each IPC payload as one RawFlightData message.
// Uncompressed streams send from the writing goroutine; compressed ones
// through a pipeline: the writing goroutine starts a batch's compression
// and queues it, and a sender goroutine sends the batches in order.
type payloadWriter struct {
	s       MessageSender
	comp    Compression
	chooser Chooser
	bytes   atomic.Int64
	// cur is the record being written: its buffers are the uncompressed
	// payload bodies, kept alive until gRPC has sent them.
	cur arrow.RecordBatch

	// desc goes with the next message sent (SetFlightDescriptor).
	desc []byte

	queue  chan *outMsg
	sender sync.WaitGroup
	failed chan struct{} // closed when a send fails
	err    error         // the failed send's error; read after failed or the sender ends
	closed bool
}

func (w *payloadWriter) Start() error { return nil }

func (w *payloadWriter) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	defer meta.Release()
	rec := w.cur
	if rec != nil {
		rec.Retain()
	}
	msg := &outMsg{}
	msg.hold = NewHold(func() {
		if rec != nil {
			rec.Release()
		}
		if msg.job != nil {
			putArena(msg.job.arena)
		}
	})
	var body RawFlightData
	if err := p.SerializeBody(&body); err != nil {
		msg.hold.Done()
		return err
	}
	msg.body = body.Body
	if meta != nil {
		msg.header = meta.Bytes()
	}
	if !w.comp.enabled() {
		return w.send(msg)
	}
	if w.failed != nil {
		select {
		case <-w.failed:
			msg.hold.Done()
			return w.err
		default:
		}
	}
	// The header outlives this call: copy it out of arrow-go's buffer.
	msg.header = append([]byte(nil), msg.header...)
	w.plan(msg, body.BodyLen())
	if w.queue == nil {
		w.queue = make(chan *outMsg, pipelineDepth)
		w.failed = make(chan struct{})
		w.sender.Add(1)
		go w.run()
	}
	select {
	case w.queue <- msg:
		return nil
	case <-w.failed:
		w.drop(msg)
		return w.err
	}
}

// plan chooses the batch's codec and starts compressing it.
func (w *payloadWriter) plan(msg *outMsg, bodyLen int) {
	m, err := parseBatchMeta(msg.header)
	if err != nil || m.codec != CodecNone || m.bodyLength == 0 {
		return // schema, already compressed (ipc.WithLZ4), or empty: as is
	}
	msg.rows, msg.raw = m.length, int64(bodyLen)
	msg.record = m.headerType == fbHeaderRecordBatch
	if !msg.record {
		msg.codec = w.comp.Codec
		if w.comp.Auto {
			msg.codec = CodecLZ4 // dictionaries: cheap and almost always a win
		}
	} else {
		msg.codec = w.chooser.Choose()
	}
	srcs, ok := bufferBytes(m, msg.body)
	if !ok {
		msg.codec = CodecNone
		return
	}
	if pr, isProber := w.chooser.(prober); isProber && msg.record {
		if codecs := pr.Probe(); len(codecs) > 0 {
			msg.probed = make(chan struct{})
			go func() {
				defer close(msg.probed)
				msg.probeErr = panics.Catch(func() error {
					msg.probes = probe(codecs, srcs, defaultAutoParams.probeMax)
					return nil
				})
			}()
		}
	}
	if msg.codec == CodecNone {
		return
	}
	minSavings := w.comp.MinSavings
	if minSavings <= 0 {
		minSavings = DefaultMinSavings
	}
	msg.job = newEncodeJob(m, srcs, msg.codec, minSavings)
	msg.job.start()
}

// bufferBytes finds each header buffer's bytes among the slices
// SerializeBody wrote: buffer by buffer, each followed by its padding.
func bufferBytes(m *batchMeta, writes [][]byte) ([][]byte, bool) {
	srcs := make([][]byte, len(m.buffers))
	var pos int64
	wi := 0
	for i, b := range m.buffers {
		if b.length == 0 {
			continue
		}
		for wi < len(writes) && pos < b.offset {
			pos += int64(len(writes[wi]))
			wi++
		}
		if wi == len(writes) || pos != b.offset || int64(len(writes[wi])) != b.length {
			return nil, false
		}
		srcs[i] = writes[wi]
		pos += b.length
		wi++
	}
	return srcs, true
}

// run is the sender goroutine of a compressed stream. A panic while it
// sends a message fails the stream with a *panics.Error, as a failed send
// would.
func (w *payloadWriter) run() {
	defer w.sender.Done()
	for msg := range w.queue {
		if w.err != nil {
			w.drop(msg)
			continue
		}
		if err := panics.Catch(func() error { return w.sendQueued(msg) }); err != nil {
			w.err = err
			close(w.failed)
		}
	}
}

func (w *payloadWriter) sendQueued(msg *outMsg) error {
	stat := BatchStat{Codec: CodecNone, Rows: msg.rows, RawBytes: msg.raw}
	if msg.probed != nil {
		<-msg.probed
		stat.Probes = msg.probes
	}
	if j := msg.job; j != nil {
		<-j.done
	}
	if err := msg.failed(); err != nil {
		msg.hold.Done()
		return err
	}
	if j := msg.job; j != nil {
		if header, body, ok := j.finish(); ok {
			msg.header, msg.body = header, body
			stat.Codec = msg.codec
		}
		stat.EncodeStart, stat.Encode = j.began, j.elapsed
	}
	start := time.Now()
	n, err := w.sendMsg(msg)
	stat.Sent = time.Now()
	stat.Send = stat.Sent.Sub(start)
	stat.WireBytes = n
	if err != nil || !msg.record {
		return err
	}
	w.chooser.Observe(stat)
	if w.comp.Observe != nil {
		w.comp.Observe(stat)
	}
	return nil
}

// failed is the panic of msg's probe or compression, once both ended.
func (msg *outMsg) failed() error {
	if msg.probeErr != nil {
		return msg.probeErr
	}
	if msg.job != nil {
		return msg.job.err
	}
	return nil
}

// send sends msg from the writing goroutine (uncompressed streams).
func (w *payloadWriter) send(msg *outMsg) error {
	var m *batchMeta
	if w.comp.Observe != nil {
		m, _ = parseBatchMeta(msg.header)
	}
	start := time.Now()
	n, err := w.sendMsg(msg)
	if err == nil && m != nil && m.headerType == fbHeaderRecordBatch {
		sent := time.Now()
		w.comp.Observe(BatchStat{Codec: m.codec, Rows: m.length, RawBytes: m.bodyLength, WireBytes: n, Send: sent.Sub(start), Sent: sent})
	}
	return err
}

func (w *payloadWriter) sendMsg(msg *outMsg) (int64, error) {
	defer msg.hold.Done()
	fd := &RawFlightData{Descriptor: w.desc, Header: msg.header, Hold: msg.hold}
	w.desc = nil
	for _, b := range msg.body {
		fd.AddBody(b)
	}
	n := int64(len(fd.Header) + fd.BodyLen())
	if err := w.s.SendMsg(fd); err != nil {
		return 0, err
	}
	w.bytes.Add(n)
	return n, nil
}

// drop releases a message that will not be sent.
func (w *payloadWriter) drop(msg *outMsg) {
	if msg.job != nil {
		<-msg.job.done
	}
	if msg.probed != nil {
		<-msg.probed
	}
	msg.hold.Done()
}

// Close waits until every queued batch is sent or dropped and returns the
// first send error.
func (w *payloadWriter) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.queue != nil {
		close(w.queue)
		w.sender.Wait()
	}
	if c, ok := w.s.(interface{ closeStream() error }); ok && w.err == nil {
		w.err = c.closeStream()
	}
	return w.err
}

// Writer writes record batches to a Flight stream as IPC messages.
type Writer struct {
	*ipc.Writer
	pw *payloadWriter
}

// NewWriter returns an IPC writer over a Flight stream whose server
// installed ServerCodec. opts are arrow-go's IPC options: schema,
// allocator. Record buffers are sent without copying and held until
// gRPC has written them, so they may come from a recycling allocator.
// The stream is uncompressed unless opts ask for arrow-go's own
// compression (ipc.WithLZ4/WithZstd), which is passed through as it is;
// NewCompressedWriter uses quiver's.
func NewWriter(s MessageSender, opts ...ipc.Option) *Writer {
	return NewCompressedWriter(s, Compression{}, opts...)
}

// NewCompressedWriter is NewWriter with quiver's compression: buffers
// are compressed in parallel, across the buffers of a batch and across
// batches (the next batch compresses while the previous one is sent),
// with reused encoders. A buffer that does not shrink by MinSavings goes
// raw (aliasing the record, held like an uncompressed body); a batch in
// which no buffer shrinks goes uncompressed. Compressed bytes are written
// to Go memory that is reused only after gRPC has written them. The
// caller must Close the writer: Close waits for the sender goroutine.
func NewCompressedWriter(s MessageSender, comp Compression, opts ...ipc.Option) *Writer {
	pw := &payloadWriter{s: s, comp: comp}
	switch {
	case comp.chooser != nil:
		pw.chooser = comp.chooser
	case comp.Auto && SameHost(comp.Peer):
		pw.chooser = fixedChooser(CodecNone) // see codec_auto.go
	case comp.Auto:
		mem := comp.Memory
		if mem == nil {
			mem = DefaultPeerMemory
		}
		pw.chooser = NewAutoChooser(mem, comp.Peer)
	default:
		pw.chooser = fixedChooser(comp.Codec)
	}
	// arrow-go's own allocations (sliced offsets, truncated bitmaps) are
	// Go memory, which the garbage collector keeps alive while gRPC
	// references it.
	opts = append(opts, ipc.WithAllocator(memory.NewGoAllocator()))
	return &Writer{Writer: ipc.NewWriterWithPayloadWriter(pw, opts...), pw: pw}
}

// SetFlightDescriptor sends d with the first message (the schema), as a
// DoPut upload must. Call it before the first Write.
func (w *Writer) SetFlightDescriptor(d *flight.FlightDescriptor) error {
	b, err := proto.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode flight descriptor: %w", err)
	}
	w.pw.desc = b
	return nil
}

// Write writes rec. It keeps a reference to rec until gRPC has sent the
// bytes that alias it.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	w.pw.cur = rec
	defer func() { w.pw.cur = nil }()
	return w.Writer.Write(rec)
}

// Close sends what is queued and ends the stream; it returns the first
// error of any send.
func (w *Writer) Close() error {
	err := w.Writer.Close()
	if perr := w.pw.Close(); perr != nil && (err == nil || errors.Is(err, perr)) {
		return perr
	}
	return err
}

// BytesSent is the IPC bytes (headers and bodies, after compression)
// written so far.
func (w *Writer) BytesSent() int64 { return w.pw.bytes.Load() }
