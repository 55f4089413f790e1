package ipcx

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// frames splits an encoded 10 MB FlightData into 16 KB buffers, the way
// gRPC receives it from HTTP/2 DATA frames.
func frames(b *testing.B) (mem.BufferSlice, int) {
	fd := &flight.FlightData{DataHeader: make([]byte, 200), DataBody: make([]byte, 10<<20)}
	raw, err := proto.Marshal(fd)
	if err != nil {
		b.Fatal(err)
	}
	var bs mem.BufferSlice
	for off := 0; off < len(raw); off += 16 << 10 {
		end := min(off+16<<10, len(raw))
		bs = append(bs, mem.SliceBuffer(raw[off:end]))
	}
	return bs, len(raw)
}

func benchUnmarshal(b *testing.B, c encoding.CodecV2) {
	bs, n := frames(b)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		var fd flight.FlightData
		if err := c.Unmarshal(bs, &fd); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshal_Proto(b *testing.B)  { benchUnmarshal(b, encoding.GetCodecV2("proto")) }
func BenchmarkUnmarshal_Client(b *testing.B) { benchUnmarshal(b, ClientCodec()) }
