// Package ipcx writes Arrow IPC streams to Flight with quiver's options:
// result bodies go to gRPC without being copied, and compression (LZ4_FRAME,
// ZSTD) plugs in here.
//
// arrow-go's Flight writer copies every IPC body into a bytes.Buffer, and
// gRPC's protobuf codec copies it again while marshalling FlightData. Here
// the IPC payload's buffers are handed to gRPC as they are: a FlightData
// message is encoded by hand (its protobuf framing around the Arrow
// buffers) by a codec that the server installs with ServerCodec.
package ipcx

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec ServerCodec wraps
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// FlightData field numbers (Flight.proto).
const (
	fieldDescriptor  = 1
	fieldDataHeader  = 2
	fieldAppMetadata = 3
	fieldDataBody    = 1000
)

// RawFlightData is a FlightData message whose body is a list of byte
// slices that are sent as they are. The slices must stay unchanged until
// gRPC has written them; set Hold to learn when that is.
type RawFlightData struct {
	// Descriptor is a serialised FlightDescriptor (the first message of
	// an upload carries one).
	Descriptor  []byte
	Header      []byte
	AppMetadata []byte
	Body        [][]byte
	bodyLen     int
	// Hold, if set, is kept until gRPC has written every body slice.
	Hold *Hold
}

// Hold counts the owners of memory lent to gRPC and runs its release
// function when the last one lets go. The sender holds one reference
// (NewHold) and drops it with Done after SendMsg returns; each body slice
// handed to gRPC holds another until gRPC frees it.
type Hold struct {
	refs    atomic.Int64
	release func()
}

// NewHold returns a Hold with one reference, the caller's.
func NewHold(release func()) *Hold {
	h := &Hold{release: release}
	h.refs.Store(1)
	return h
}

// Done drops one reference.
func (h *Hold) Done() {
	if h.refs.Add(-1) == 0 {
		h.release()
	}
}

// lent is the pool a message's held body slices go back to. gRPC does not
// always give them back: a data frame queued just after the client reset
// the stream reaches gRPC's writer after the stream is gone and is
// dropped without being freed (grpc-go's loopyWriter.preprocessData). A
// cleanup on lent, which only those slices reference, returns whatever
// gRPC never did once the garbage collector finds them unreachable.
type lent struct{ c *lentCount }

// lentCount is lent's state, apart from it so that the cleanup can run.
type lentCount struct {
	hold *Hold
	out  atomic.Int64 // slices gRPC has not given back
}

func newLent(h *Hold, n int) *lent {
	c := &lentCount{hold: h}
	c.out.Store(int64(n))
	h.refs.Add(int64(n))
	l := &lent{c: c}
	runtime.AddCleanup(l, (*lentCount).reclaim, c)
	return l
}

// reclaim drops the references of the slices gRPC lost.
func (c *lentCount) reclaim() {
	for n := c.out.Swap(0); n > 0; n-- {
		c.hold.Done()
	}
}

// Get is never called: lent only takes memory back (mem.BufferPool).
func (l *lent) Get(int) *[]byte { panic("ipcx: lent.Get") }

// Put is gRPC freeing one body slice.
func (l *lent) Put(*[]byte) {
	l.c.out.Add(-1)
	l.c.hold.Done()
}

// AddBody appends a piece of the body.
func (f *RawFlightData) AddBody(b []byte) {
	if len(b) == 0 {
		return
	}
	f.Body = append(f.Body, b)
	f.bodyLen += len(b)
}

// BodyLen is the body's size in bytes.
func (f *RawFlightData) BodyLen() int { return f.bodyLen }

// Write appends p to the body without copying; it lets
// ipc.Payload.SerializeBody fill the message.
func (f *RawFlightData) Write(p []byte) (int, error) {
	f.AddBody(p)
	return len(p), nil
}

// encode returns the protobuf encoding: a small prefix with the header,
// app metadata and the body's tag and length, then the body slices.
func (f *RawFlightData) encode() mem.BufferSlice {
	prefix := make([]byte, 0, len(f.Descriptor)+len(f.Header)+len(f.AppMetadata)+40)
	if len(f.Descriptor) > 0 {
		prefix = protowire.AppendTag(prefix, fieldDescriptor, protowire.BytesType)
		prefix = protowire.AppendBytes(prefix, f.Descriptor)
	}
	if len(f.Header) > 0 {
		prefix = protowire.AppendTag(prefix, fieldDataHeader, protowire.BytesType)
		prefix = protowire.AppendBytes(prefix, f.Header)
	}
	if len(f.AppMetadata) > 0 {
		prefix = protowire.AppendTag(prefix, fieldAppMetadata, protowire.BytesType)
		prefix = protowire.AppendBytes(prefix, f.AppMetadata)
	}
	if f.bodyLen > 0 {
		prefix = protowire.AppendTag(prefix, fieldDataBody, protowire.BytesType)
		prefix = protowire.AppendVarint(prefix, uint64(f.bodyLen))
	}
	out := make(mem.BufferSlice, 0, 1+len(f.Body))
	out = append(out, mem.SliceBuffer(prefix))
	var pool *lent
	if f.Hold != nil {
		held := 0
		for _, b := range f.Body {
			if !mem.IsBelowBufferPoolingThreshold(len(b)) {
				held++
			}
		}
		if held > 0 {
			pool = newLent(f.Hold, held)
		}
	}
	for _, b := range f.Body {
		switch {
		case f.Hold == nil:
			out = append(out, mem.SliceBuffer(b))
		case mem.IsBelowBufferPoolingThreshold(len(b)):
			// gRPC does not count references to small buffers: copy.
			out = append(out, mem.SliceBuffer(append([]byte(nil), b...)))
		default:
			piece := b[:len(b):len(b)]
			out = append(out, mem.NewBuffer(&piece, pool))
		}
	}
	return out
}

// codec is gRPC's protobuf codec, except that it encodes RawFlightData
// without copying its body.
type codec struct {
	proto encoding.CodecV2
}

// ServerCodec returns the codec to install on the Flight gRPC server with
// grpc.ForceServerCodecV2. Every message but RawFlightData goes through
// the standard protobuf codec.
func ServerCodec() encoding.CodecV2 {
	return codec{proto: encoding.GetCodecV2("proto")}
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*RawFlightData); ok {
		return f.encode(), nil
	}
	return c.proto.Marshal(v)
}

// Unmarshal decodes FlightData (DoPut, DoExchange uploads) like the
// client codec does: one copy out of gRPC's buffers instead of the
// protobuf codec's two, and compressed batches decompressed in parallel.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *RawFlightData:
		return fmt.Errorf("ipcx: RawFlightData is send-only")
	case *flight.FlightData:
		return unmarshalFlightData(data, m)
	case *FlightMessage:
		return m.unmarshal(data)
	case *groupMessage:
		return m.unmarshal(data)
	}
	return c.proto.Unmarshal(data, v)
}

func (c codec) Name() string { return "proto" }
