package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/ipcx"
	"github.com/quiverdata/quiver/mempool"
)

// TransportConfig sizes the transport suite.
type TransportConfig struct {
	// MB is the Arrow payload per run, in MB.
	MB int
	// BatchRows is the rows per pre-built batch (20 BIGINT columns).
	BatchRows int
	Reps      int
}

// Transport measures DoGet and DoPut of pre-built batches (no engine)
// against raw TCP loopback moving the same bytes.
func Transport(ctx context.Context, cfg TransportConfig) (*report.Report, error) {
	if cfg.MB <= 0 {
		cfg.MB = 1024
	}
	if cfg.BatchRows <= 0 {
		cfg.BatchRows = 64 * 1024
	}
	mem := memory.NewGoAllocator()
	batches, schema := num20Batches(mem, cfg.BatchRows, int64(cfg.MB)*1e6)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	var arrowBytes int64
	for _, b := range batches {
		arrowBytes += ipcx.RecordBytes(b)
	}

	srv, addr, err := startTransportServer(batches, schema, mem)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	conn, err := grpc.NewClient(addr, append(client.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		return nil, fmt.Errorf("dial transport server: %w", err)
	}
	defer conn.Close()
	fc := flight.NewClientFromConn(conn, nil)

	tcpAddr, stopTCP, err := startBatchTCPSource(batches)
	if err != nil {
		return nil, err
	}
	defer stopTCP()

	doGet := report.Contender{Name: "Flight DoGet", Run: func() (report.Sample, error) {
		return report.Timed(func() (int64, int64, error) { return runDoGet(ctx, fc) })
	}}
	doPut := report.Contender{Name: "Flight DoPut", Run: func() (report.Sample, error) {
		return report.Timed(func() (int64, int64, error) { return runDoPut(ctx, fc, batches, schema, mem) })
	}}
	tcp := report.Contender{Name: "raw TCP", Run: func() (report.Sample, error) {
		return report.Timed(func() (int64, int64, error) { return runTCP(tcpAddr, arrowBytes) })
	}}
	stats, err := report.Alternate(cfg.Reps, tcp, doGet, doPut)
	if err != nil {
		return nil, err
	}
	r := &report.Report{Suite: "transport", Reps: cfg.Reps}
	t := &report.Table{
		Title:   fmt.Sprintf("Transport limit: %d MB of pre-built Arrow batches (20 BIGINT × %d rows each), loopback", arrowBytes/1e6, cfg.BatchRows),
		Note:    "The same batch buffers written to a raw TCP socket (writev) and read into a reused buffer are the ceiling; the ratio is Flight's share of it.",
		Columns: []string{"path", "ms", "MB/s", "vs raw TCP"},
	}
	for _, s := range stats {
		r.Add("transport", "num20", s)
		t.Rows = append(t.Rows, []string{s.Name, report.FmtMS(s), report.FmtMBps(s), report.FmtX(s.MBps() / stats[0].MBps())})
		t.Bars = append(t.Bars, report.Bar{Group: "loopback", Series: s.Name, Value: s.MBps(), Unit: "MB/s"})
	}
	r.Tables = append(r.Tables, t)
	return r, nil
}

// num20Batches builds batches of 20 BIGINT columns until total bytes.
func num20Batches(mem memory.Allocator, rows int, total int64) ([]arrow.RecordBatch, *arrow.Schema) {
	fields := make([]arrow.Field, 20)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int64}
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	per := int64(rows) * 20 * 8
	n := int((total + per - 1) / per)
	var out []arrow.RecordBatch
	for k := 0; k < n; k++ {
		for c := range fields {
			cb := b.Field(c).(*array.Int64Builder)
			cb.Reserve(rows)
			for i := 0; i < rows; i++ {
				cb.UnsafeAppend(int64(k*rows+i) * int64(c+1))
			}
		}
		out = append(out, b.NewRecordBatch())
	}
	return out, schema
}

// transportServer serves the pre-built batches on DoGet and discards
// DoPut streams, with quiver's gRPC settings and zero-copy writer.
type transportServer struct {
	flight.BaseFlightServer
	batches []arrow.RecordBatch
	schema  *arrow.Schema
	mem     memory.Allocator
}

func (s *transportServer) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	w := ipcx.NewWriter(stream, ipc.WithSchema(s.schema), ipc.WithAllocator(s.mem))
	for _, b := range s.batches {
		if err := w.Write(b); err != nil {
			return err
		}
	}
	return w.Close()
}

func (s *transportServer) DoPut(stream flight.FlightService_DoPutServer) error {
	r, err := flight.NewRecordReader(stream, ipc.WithAllocator(s.mem))
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return stream.Send(&flight.PutResult{})
}

func startTransportServer(batches []arrow.RecordBatch, schema *arrow.Schema, mem memory.Allocator) (*grpc.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listen: %w", err)
	}
	gs := grpc.NewServer(flightsql.GRPCServerOptions()...)
	flight.RegisterFlightServiceServer(gs, &transportServer{batches: batches, schema: schema, mem: mem})
	go gs.Serve(ln)
	return gs, ln.Addr().String(), nil
}

// recvMem holds the batches the transport client receives: quiver's
// client recycles the memory of batches without strings.
var recvMem = mempool.New()

func runDoGet(ctx context.Context, fc flight.Client) (int64, int64, error) {
	stream, err := fc.DoGet(ctx, &flight.Ticket{Ticket: []byte("all")})
	if err != nil {
		return 0, 0, err
	}
	r, err := ipcx.NewFlightReader(stream, recvMem)
	if err != nil {
		return 0, 0, err
	}
	defer r.Release()
	var bytes, rows int64
	for r.Next() {
		bytes += ipcx.RecordBytes(r.RecordBatch())
		rows += r.RecordBatch().NumRows()
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	return bytes, rows, nil
}

func runDoPut(ctx context.Context, fc flight.Client, batches []arrow.RecordBatch, schema *arrow.Schema, mem memory.Allocator) (int64, int64, error) {
	stream, err := fc.DoPut(ctx)
	if err != nil {
		return 0, 0, err
	}
	w := ipcx.NewWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("sink")}); err != nil {
		return 0, 0, err
	}
	var bytes, rows int64
	for _, b := range batches {
		if err := w.Write(b); err != nil {
			return 0, 0, err
		}
		bytes += ipcx.RecordBytes(b)
		rows += b.NumRows()
	}
	if err := w.Close(); err != nil {
		return 0, 0, err
	}
	if err := stream.CloseSend(); err != nil {
		return 0, 0, err
	}
	if _, err := stream.Recv(); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	return bytes, rows, nil
}

// startBatchTCPSource starts a loopback server that writes the buffers of
// batches to each connection, as they lie in memory: the raw-socket
// ceiling for moving the same bytes Flight moves.
func startBatchTCPSource(batches []arrow.RecordBatch) (string, func(), error) {
	var bufs [][]byte
	for _, b := range batches {
		for _, col := range b.Columns() {
			for _, buf := range col.Data().Buffers() {
				if buf != nil && buf.Len() > 0 {
					bufs = append(bufs, buf.Bytes())
				}
			}
		}
	}
	return serveTCP(func(c net.Conn, _ int64) {
		nb := net.Buffers(append([][]byte(nil), bufs...))
		nb.WriteTo(c)
	})
}

// startTCPSink starts a loopback server that writes n requested bytes to
// each connection from one reused buffer: the raw-socket ceiling for a
// server-to-client stream of n bytes.
func startTCPSink() (string, func(), error) {
	buf := make([]byte, 1<<20)
	return serveTCP(func(c net.Conn, n int64) { writeRepeated(c, buf, n) })
}

// writeRepeated writes n bytes to c, buf over and over.
func writeRepeated(c net.Conn, buf []byte, n int64) {
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := c.Write(buf[:k]); err != nil {
			return
		}
		n -= k
	}
}

// serveTCP starts a loopback server that reads a byte count (a line) from
// each connection, then hands it to send.
func serveTCP(send func(c net.Conn, n int64)) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen: %w", err)
	}
	go acceptCounted(ln, send)
	return ln.Addr().String(), func() { ln.Close() }, nil
}

// acceptCounted serves each connection ln accepts: it reads a byte count
// (a line) and hands it to send. It returns the error that ended Accept.
func acceptCounted(ln net.Listener, send func(c net.Conn, n int64)) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			var n int64
			if _, err := fmt.Fscanf(c, "%d\n", &n); err != nil {
				return
			}
			send(c, n)
		}()
	}
}

func runTCP(addr string, n int64) (int64, int64, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "%d\n", n); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 1<<20)
	var got int64
	for got < n {
		k, err := c.Read(buf)
		got += int64(k)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, 0, err
		}
	}
	if got != n {
		return 0, 0, fmt.Errorf("raw TCP: read %d of %d bytes", got, n)
	}
	return n, 0, nil
}
