package ipcx

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/quiverdata/quiver/internal/testmem"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// chunked splits b into gRPC buffers of at most size bytes, the way
// gRPC hands a message received in several HTTP/2 frames to a codec.
func chunked(b []byte, size int) mem.BufferSlice {
	var out mem.BufferSlice
	for len(b) > 0 {
		n := min(size, len(b))
		out = append(out, mem.SliceBuffer(append([]byte(nil), b[:n]...)))
		b = b[n:]
	}
	return out
}

// sink collects what a Flight writer sends.
type sink struct{ msgs []*flight.FlightData }

func (s *sink) Send(fd *flight.FlightData) error {
	s.msgs = append(s.msgs, proto.Clone(fd).(*flight.FlightData))
	return nil
}

// streamMessages writes recs with arrow-go's Flight writer and opts and
// returns the FlightData it sent, the schema first.
func streamMessages(t *testing.T, recs []arrow.RecordBatch, opts ...ipc.Option) []*flight.FlightData {
	t.Helper()
	var s sink
	w := flight.NewRecordWriter(&s, append([]ipc.Option{ipc.WithSchema(recs[0].Schema())}, opts...)...)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return s.msgs
}

// fakeStream plays FlightData messages through a codec (nil: the client
// codec), split into small gRPC buffers.
type fakeStream struct {
	msgs  []*flight.FlightData
	chunk int
	codec encoding.CodecV2
}

func (s *fakeStream) RecvMsg(m any) error {
	if len(s.msgs) == 0 {
		return io.EOF
	}
	b, err := proto.Marshal(s.msgs[0])
	if err != nil {
		return err
	}
	s.msgs = s.msgs[1:]
	data := chunked(b, s.chunk)
	defer data.Free()
	if s.codec != nil {
		return s.codec.Unmarshal(data, m)
	}
	return ClientCodec().Unmarshal(data, m)
}

func testBatches(mem memory.Allocator, n, rows int) []arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	var out []arrow.RecordBatch
	for k := range n {
		for i := range rows {
			v := k*rows + i
			if v%7 == 0 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(int64(v))
			}
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("value-%d", v%50))
		}
		out = append(out, b.NewRecordBatch())
	}
	return out
}

func TestFlightReader_RecyclesBodies(t *testing.T) {
	src := memory.NewCheckedAllocator(memory.NewGoAllocator())
	recs := testBatches(src, 4, 3000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
		src.AssertSize(t, 0)
	}()
	for _, tc := range []struct {
		name  string
		opts  []ipc.Option
		chunk int
	}{
		{"plain, 16 KB frames", nil, 16 << 10},
		{"plain, 7-byte frames", nil, 7},
		{"lz4", []ipc.Option{ipc.WithLZ4()}, 16 << 10},
		{"zstd, 1 KB frames", []ipc.Option{ipc.WithZstd()}, 1 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alloc := testmem.Checked(t)
			stream := &fakeStream{msgs: streamMessages(t, recs, tc.opts...), chunk: tc.chunk}
			rdr, err := NewFlightReader(stream, alloc)
			if err != nil {
				t.Fatal(err)
			}
			defer rdr.Release()
			var kept []arrow.RecordBatch
			defer func() {
				for _, r := range kept {
					r.Release()
				}
			}()
			for rdr.Next() {
				rec := rdr.RecordBatch()
				rec.Retain()
				kept = append(kept, rec)
				if alloc.CurrentAlloc() == 0 {
					t.Fatal("the batch body did not come from the reader's allocator")
				}
			}
			if err := rdr.Err(); err != nil {
				t.Fatal(err)
			}
			if len(kept) != len(recs) {
				t.Fatalf("read %d batches, want %d", len(kept), len(recs))
			}
			for i := range recs {
				if !array.RecordEqual(kept[i], recs[i]) {
					t.Fatalf("batch %d differs after later batches were read", i)
				}
			}
		})
	}
}

// TestFlightReader_ReleasedEarly checks a reader released in mid-stream,
// as a client that stops after the first batch does, frees everything.
func TestFlightReader_ReleasedEarly(t *testing.T) {
	recs := testBatches(memory.DefaultAllocator, 3, 1000)
	msgs := streamMessages(t, recs)
	for _, r := range recs {
		r.Release()
	}
	alloc := testmem.Checked(t)
	rdr, err := NewFlightReader(&fakeStream{msgs: msgs, chunk: 4096}, alloc)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	rdr.Release()
}

func TestFlightMessage_Fields(t *testing.T) {
	recs := testBatches(memory.DefaultAllocator, 1, 5000)
	defer recs[0].Release()
	fd := streamMessages(t, recs)[1]
	fd.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("cmd")}
	fd.AppMetadata = []byte("meta")
	b, err := proto.Marshal(fd)
	if err != nil {
		t.Fatal(err)
	}
	// An unknown varint field and an unknown bytes field are skipped.
	b = append(b, 0x20, 0x96, 0x01, 0x2a, 0x02, 'x', 'y')
	alloc := testmem.Checked(t)
	m := FlightMessage{Mem: alloc}
	if err := m.unmarshal(chunked(b, 100)); err != nil || m.Err != nil {
		t.Fatal(err, m.Err)
	}
	defer m.Body.Release()
	if !bytes.Equal(m.Header, fd.DataHeader) || string(m.AppMetadata) != "meta" || string(m.Descriptor.Cmd) != "cmd" ||
		!bytes.Equal(m.Body.Bytes(), fd.DataBody) {
		t.Fatalf("decoded %q %q %v, body %d bytes", m.Header, m.AppMetadata, m.Descriptor, m.Body.Len())
	}
}

func TestFlightMessage_Malformed(t *testing.T) {
	good, _ := proto.Marshal(&flight.FlightData{DataHeader: []byte("h"), DataBody: []byte("0123456789")})
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"truncated body", good[:len(good)-3]},
		{"truncated tag", []byte{0x80}},
		{"length past the end", []byte{0x12, 0x10, 'a'}},
		{"group wire type", []byte{0x13}},
		{"truncated fixed64", []byte{0x09, 1, 2}},
		{"bad descriptor", []byte{0x0a, 0x02, 0xff, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alloc := testmem.Checked(t)
			m := FlightMessage{Mem: alloc}
			// The receive succeeds (gRPC would answer a failed one with
			// Internal); the message carries the error.
			if err := m.unmarshal(chunked(tc.b, 4)); err != nil || m.Err == nil {
				t.Fatalf("decoding %x: got %v, Err %v; want nil, and an Err", tc.b, err, m.Err)
			}
			if m.Body != nil {
				t.Fatal("a failed decode left a body behind")
			}
		})
	}
}

// FuzzFlightMessage checks the hand decoder against protobuf's on any
// input: it never panics, never leaks, and agrees when both succeed.
func FuzzFlightMessage(f *testing.F) {
	good, _ := proto.Marshal(&flight.FlightData{
		FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"a"}},
		DataHeader:       []byte("h"), AppMetadata: []byte("m"), DataBody: []byte("0123456789"),
	})
	f.Add(good, uint8(3))
	f.Add([]byte{0x12, 0x10, 'a'}, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
		m := FlightMessage{Mem: alloc}
		if err := m.unmarshal(chunked(b, int(chunk)+1)); err != nil {
			t.Fatalf("unmarshal failed (%v); it must leave the error in Err", err)
		}
		err := m.Err
		var want flight.FlightData
		if err == nil && proto.Unmarshal(b, &want) == nil {
			var body []byte
			if m.Body != nil {
				body = m.Body.Bytes()
			}
			if !bytes.Equal(m.Header, want.DataHeader) || !bytes.Equal(m.AppMetadata, want.AppMetadata) ||
				!bytes.Equal(body, want.DataBody) {
				t.Fatalf("hand decoder disagrees with protobuf on %x", b)
			}
		}
		if m.Body != nil {
			m.Body.Release()
		}
		alloc.AssertSize(t, 0)
	})
}

// TestFlightReader_TruncatedBody checks a batch whose body is shorter
// than its header says fails cleanly, without leaking the body.
func TestFlightReader_TruncatedBody(t *testing.T) {
	recs := testBatches(memory.DefaultAllocator, 1, 1000)
	msgs := streamMessages(t, recs)
	recs[0].Release()
	msgs[1].DataBody = msgs[1].DataBody[:len(msgs[1].DataBody)-64]
	alloc := testmem.Checked(t)
	rdr, err := NewFlightReader(&fakeStream{msgs: msgs, chunk: 512}, alloc)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if rdr.Next() {
		t.Fatal("read a batch from a truncated body")
	}
	if err := rdr.Err(); err == nil || !strings.Contains(err.Error(), "its header says") {
		t.Fatalf("got %v, want the body length error", err)
	}
}
