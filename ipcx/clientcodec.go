package ipcx

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// clientCodec is gRPC's protobuf codec, except that it decodes FlightData
// by hand: the message is copied once out of gRPC's receive buffers, and
// its header and body alias that copy. The standard codec copies the body
// a second time. (arrow-go's IPC reader then wraps the body without
// copying.)
//
// A compressed record or dictionary batch is decompressed here, in
// parallel (Decompress), into a new uncompressed body with a rewritten
// header, so the Flight reader above (arrow-go's, unchanged) never sees
// compression; the compressed copy is scratch memory reused for the next
// message.
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
		return unmarshalDecompress(data, m)
	}
	return c.proto.Unmarshal(data, v)
}

// unmarshalDecompress decodes a FlightData and decompresses its body.
func unmarshalDecompress(data mem.BufferSlice, fd *flight.FlightData) error {
	buf := getScratch(data.Len())
	data.CopyTo(buf)
	if err := UnmarshalFlightData(buf, fd); err != nil {
		return err
	}
	if len(fd.DataHeader) == 0 {
		return nil // a descriptor or app metadata alone
	}
	header, body, changed, err := Decompress(fd.DataHeader, fd.DataBody, nil)
	if err != nil {
		return fmt.Errorf("decompress FlightData: %w", err)
	}
	if !changed {
		return nil // fd aliases buf, which is not reused
	}
	fd.DataHeader, fd.DataBody = header, body
	if fd.AppMetadata != nil {
		fd.AppMetadata = append([]byte(nil), fd.AppMetadata...)
	}
	putScratch(buf)
	return nil
}

func (c clientCodec) Name() string { return "proto" }

// UnmarshalFlightData decodes b into fd; fd's header, metadata and body
// alias b.
func UnmarshalFlightData(b []byte, fd *flight.FlightData) error {
	fd.Reset()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("decode FlightData: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("decode FlightData field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("decode FlightData field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 1:
			fd.FlightDescriptor = &flight.FlightDescriptor{}
			if err := proto.Unmarshal(v, fd.FlightDescriptor); err != nil {
				return fmt.Errorf("decode FlightData descriptor: %w", err)
			}
		case fieldDataHeader:
			fd.DataHeader = v
		case fieldAppMetadata:
			fd.AppMetadata = v
		case fieldDataBody:
			fd.DataBody = v
		}
	}
	return nil
}
