package bench

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/ipcx"
)

// BenchmarkTransport_DoGet streams 256 MB of pre-built batches per op
// through quiver's DoGet writer and arrow-go's reader over loopback.
func BenchmarkTransport_DoGet(b *testing.B) {
	mem := memory.NewGoAllocator()
	batches, schema := num20Batches(mem, 64*1024, 256e6)
	srv, addr, err := startTransportServer(batches, schema, mem)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	conn, err := grpc.NewClient(addr, append(client.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	fc := flight.NewClientFromConn(conn, nil)
	var total int64
	for _, r := range batches {
		total += ipcx.RecordBytes(r)
	}
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := runDoGet(context.Background(), fc); err != nil {
			b.Fatal(err)
		}
	}
}
