package ipcx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// FlightMessage is a FlightData as the client codec decodes it for
// NewFlightReader. The small fields are copied out of gRPC's receive
// buffers; the body is copied once, straight from those buffers into
// memory from Mem, so a reader can hand it to its batches and give it
// back to Mem when the last of them is released. (arrow-go's Flight
// reader takes a FlightData whose body is a plain byte slice, which it
// can never return, so every batch costs fresh, zeroed memory.) A
// compressed batch is decompressed here into a second buffer from Mem.
type FlightMessage struct {
	// Mem allocates the body; set it before RecvMsg. nil means Go memory.
	Mem         memory.Allocator
	Descriptor  *flight.FlightDescriptor
	Header      []byte
	AppMetadata []byte
	// Body is nil when the message has none; the receiver owns the
	// reference.
	Body *memory.Buffer
	// Err is why the message could not be decoded: malformed protobuf, a
	// descriptor that does not parse, a header or compressed body that
	// does not decode. The receive itself succeeds, with what could be
	// read, and the receiver refuses the message: gRPC answers a receive
	// that fails in the codec with Internal, sent to the peer at once,
	// though the peer's message is at fault.
	Err error
}

// FlightData is m as arrow-go's FlightData; the body aliases m.Body,
// which must stay unreleased while it is used.
func (m *FlightMessage) FlightData() *flight.FlightData {
	fd := &flight.FlightData{}
	m.fill(fd)
	return fd
}

// fill sets fd's fields from m.
func (m *FlightMessage) fill(fd *flight.FlightData) {
	fd.FlightDescriptor, fd.DataHeader, fd.AppMetadata = m.Descriptor, m.Header, m.AppMetadata
	if m.Body != nil {
		fd.DataBody = m.Body.Bytes()
	}
}

// unmarshal decodes the protobuf FlightData in data into m. It never
// fails: a message that does not decode is left with its Err set.
func (m *FlightMessage) unmarshal(data mem.BufferSlice) error {
	m.Err = m.decode(data)
	if m.Err != nil && m.Body != nil {
		m.Body.Release()
		m.Body = nil
	}
	return nil
}

func (m *FlightMessage) decode(data mem.BufferSlice) error {
	alloc := m.Mem
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	m.Descriptor, m.Header, m.AppMetadata = nil, nil, nil
	if m.Body != nil {
		m.Body.Release()
		m.Body = nil
	}
	err := walkFlightData(data, func(num uint64, r *mem.Reader, n int) error {
		switch num {
		case fieldDescriptor, fieldDataHeader, fieldAppMetadata:
			b := make([]byte, n)
			io.ReadFull(r, b) // cannot fail: n ≤ Remaining
			switch num {
			case fieldDescriptor:
				m.Descriptor = &flight.FlightDescriptor{}
				if err := proto.Unmarshal(b, m.Descriptor); err != nil {
					return fmt.Errorf("decode FlightData descriptor: %w", err)
				}
			case fieldDataHeader:
				m.Header = b
			default:
				m.AppMetadata = b
			}
		case fieldDataBody:
			if m.Body != nil {
				m.Body.Release()
			}
			m.Body = memory.NewBufferWithAllocator(alloc.Allocate(n), alloc)
			io.ReadFull(r, m.Body.Bytes())
		}
		return nil
	})
	if err != nil {
		return err
	}
	if m.Body == nil || len(m.Header) == 0 {
		return nil // a schema, or a descriptor or app metadata alone
	}
	var out *memory.Buffer
	header, _, changed, err := Decompress(m.Header, m.Body.Bytes(), func(n int) []byte {
		out = memory.NewBufferWithAllocator(alloc.Allocate(n), alloc)
		return out.Bytes()
	})
	if err != nil {
		if out != nil {
			out.Release()
		}
		return fmt.Errorf("decompress FlightData: %w", err)
	}
	if changed {
		m.Body.Release()
		m.Header, m.Body = header, out
	}
	return nil
}

// walkFlightData reads the protobuf FlightData in data field by field:
// field is called for each length-delimited field, with r positioned at
// its n bytes; whatever field leaves of them is skipped. Other wire types
// are skipped.
func walkFlightData(data mem.BufferSlice, field func(num uint64, r *mem.Reader, n int) error) error {
	r := data.Reader()
	defer r.Close()
	for r.Remaining() > 0 {
		tag, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("decode FlightData: tag: %w", unexpectedEOF(err))
		}
		num, typ := tag>>3, tag&7
		switch typ {
		case 0: // varint
			if _, err := binary.ReadUvarint(r); err != nil {
				return fmt.Errorf("decode FlightData field %d: %w", num, unexpectedEOF(err))
			}
			continue
		case 1, 5: // fixed64, fixed32
			n := 8
			if typ == 5 {
				n = 4
			}
			if k, _ := r.Discard(n); k != n {
				return fmt.Errorf("decode FlightData field %d: %w", num, io.ErrUnexpectedEOF)
			}
			continue
		case 2: // length-delimited
		default:
			return fmt.Errorf("decode FlightData field %d: wire type %d", num, typ)
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("decode FlightData field %d: length: %w", num, unexpectedEOF(err))
		}
		if n > uint64(r.Remaining()) {
			return fmt.Errorf("decode FlightData field %d: %d bytes announced, %d left: %w", num, n, r.Remaining(), io.ErrUnexpectedEOF)
		}
		end := r.Remaining() - int(n)
		if err := field(num, r, int(n)); err != nil {
			return err
		}
		if left := r.Remaining() - end; left > 0 {
			r.Discard(left)
		}
	}
	return nil
}

// checkBody makes sure a message's body holds what its header says, so
// that a truncated or lying message is an error here and not a panic in
// arrow-go's reader (which recovers it, but leaks the batch it was
// building).
func checkBody(header []byte, bodyLen int) error {
	n, err := fbBodyLength(header)
	if err != nil {
		return err
	}
	if n > int64(bodyLen) {
		return fmt.Errorf("read Flight stream: message body is %d bytes, its header says %d", bodyLen, n)
	}
	m, err := parseBatchMeta(header)
	if errors.Is(err, errNotBatch) {
		return nil
	}
	if err != nil {
		return err
	}
	for i, b := range m.buffers {
		if b.offset < 0 || b.length < 0 || b.offset+b.length > n {
			return fmt.Errorf("read Flight stream: buffer %d (%d bytes at %d) lies outside the %d-byte body", i, b.length, b.offset, n)
		}
	}
	return nil
}

// flightStream is the receiving half of a Flight stream (DoGet,
// DoExchange): grpc.ClientStream's RecvMsg.
type flightStream interface {
	RecvMsg(m any) error
}

// NewFlightReader reads a Flight data stream (the client end of DoGet or
// DoExchange) as Arrow batches with arrow-go's IPC reader. The stream's
// connection must use ClientCodec. Batch bodies come from alloc (nil: Go
// memory) and go back to it when the last batch using them is released.
//
// Recycled memory is reused at once, so a Go string taken from a batch
// (array.String.Value aliases the batch) must not outlive the batch; give
// Go memory for results whose strings a consumer may keep.
func NewFlightReader(stream flightStream, alloc memory.Allocator, opts ...ipc.Option) (*ipc.Reader, error) {
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	mr := &flightMessageReader{s: stream, mem: alloc}
	mr.refs.Store(1)
	// The IPC reader takes over mr's reference and releases it.
	rdr, err := ipc.NewReaderFromMessageReader(mr, append([]ipc.Option{ipc.WithAllocator(alloc)}, opts...)...)
	if err != nil {
		mr.Release()
		return nil, err
	}
	return rdr, nil
}

// flightMessageReader hands FlightMessages to arrow-go's IPC reader.
type flightMessageReader struct {
	heldMessage
	s   flightStream
	mem memory.Allocator
}

// Message receives the next message; it is valid until the next call.
// At the end of the stream it returns io.EOF; a failed call returns
// gRPC's status error unchanged.
func (r *flightMessageReader) Message() (*ipc.Message, error) {
	r.drop()
	m := FlightMessage{Mem: r.mem}
	err := r.s.RecvMsg(&m)
	body := m.Body
	if body == nil {
		body = memory.NewBufferBytes(nil)
	}
	switch {
	case err != nil:
	case m.Err != nil:
		err = m.Err
	case len(m.Header) == 0:
		err = errors.New("read Flight stream: FlightData without an IPC header")
	default:
		err = checkBody(m.Header, body.Len())
	}
	if err != nil {
		body.Release()
		return nil, err
	}
	return r.set(memory.NewBufferBytes(m.Header), body), nil
}
