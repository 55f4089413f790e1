package ipcx

import (
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// clientCodec is gRPC's protobuf codec, except that it decodes FlightData
// by hand (FlightMessage): the body is copied once out of gRPC's receive
// buffers, where the standard codec copies it twice, and a compressed
// record or dictionary batch is decompressed in parallel (Decompress) into
// a new uncompressed body with a rewritten header, so the reader above
// never sees compression. Into a FlightMessage (NewFlightReader) the body
// goes to the reader's allocator; into arrow-go's FlightData, to Go
// memory.
type clientCodec struct {
	proto encoding.CodecV2
}

// ClientCodec returns the codec for Flight clients, installed with
// grpc.WithDefaultCallOptions(grpc.ForceCodecV2(ipcx.ClientCodec())).
func ClientCodec() encoding.CodecV2 {
	return clientCodec{proto: encoding.GetCodecV2("proto")}
}

func (c clientCodec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*RawFlightData); ok {
		return f.encode(), nil
	}
	return c.proto.Marshal(v)
}

func (c clientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *FlightMessage:
		return m.unmarshal(data)
	case *flight.FlightData:
		return unmarshalFlightData(data, m)
	}
	return c.proto.Unmarshal(data, v)
}

// unmarshalFlightData decodes a FlightData for arrow-go's readers,
// which take its body as a plain byte slice they never give back: the
// body is copied once out of gRPC's buffers into Go memory, and a
// compressed batch is decompressed there (FlightMessage does both).
func unmarshalFlightData(data mem.BufferSlice, fd *flight.FlightData) error {
	var m FlightMessage // Mem nil: Go memory
	m.unmarshal(data)
	if m.Err != nil {
		return m.Err
	}
	fd.Reset()
	m.fill(fd)
	return nil
}

func (c clientCodec) Name() string { return "proto" }
