package flightsql_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/ipcx"
	"github.com/quiverdata/quiver/server"
)

// codecBatches reads quiver_flight_result_batches_total by codec.
func codecBatches(t *testing.T) map[string]float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "quiver_flight_result_batches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "codec" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// sentWith runs fn and returns the result batches sent meanwhile, by
// codec.
func sentWith(t *testing.T, fn func()) map[string]float64 {
	t.Helper()
	before := codecBatches(t)
	fn()
	after := codecBatches(t)
	for k := range after {
		after[k] -= before[k]
		if after[k] == 0 {
			delete(after, k)
		}
	}
	return after
}

// compressionTable is created by every test here: ints and strings, 4
// batches of 64K rows.
const compressionTable = `CREATE TABLE ct AS SELECT i AS id, i * 7 AS n, 'val_' || (i * 13 % 100000) AS s,
	CASE WHEN i % 10 = 0 THEN NULL ELSE i % 1000 END AS maybe FROM range(250000) t(i)`

func TestCompression_Negotiation(t *testing.T) {
	for _, def := range []string{"none", "lz4"} {
		t.Run("server default "+def, func(t *testing.T) {
			srv := testutil.StartServer(t, server.Config{Compression: def})
			plain := testutil.Dial(t, srv, client.Config{})
			if _, err := plain.Exec(context.Background(), compressionTable); err != nil {
				t.Fatal(err)
			}
			q := "SELECT * FROM ct"
			for _, tt := range []struct {
				name   string
				header string
				want   string
			}{
				{"no header", "", def},
				{"header zstd", "zstd", "zstd"},
				{"header lz4", "LZ4", "lz4"},
				{"header none", "none", "none"},
			} {
				t.Run(tt.name, func(t *testing.T) {
					c := testutil.Dial(t, srv, client.Config{Compression: tt.header})
					got := sentWith(t, func() {
						if n, _ := queryAll(t, c, q); n != 250000 {
							t.Fatalf("rows: got %d, want 250000", n)
						}
					})
					if got[tt.want] == 0 || len(got) != 1 {
						t.Errorf("batches by codec: got %v, want all %s", got, tt.want)
					}
				})
			}
			t.Run("session option", func(t *testing.T) {
				ctx, res := testutil.SessionCookie(t, plain, "compression", "zstd")
				if len(res.Errors) != 0 {
					t.Fatalf("set compression=zstd: errors %v", res.Errors)
				}
				got := sentWith(t, func() {
					r, err := plain.Query(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Release()
					for r.Next() {
					}
					if err := r.Err(); err != nil {
						t.Fatal(err)
					}
				})
				if got["zstd"] == 0 || len(got) != 1 {
					t.Errorf("batches by codec: got %v, want all zstd", got)
				}
				// The header wins over the session option.
				hdr := testutil.Dial(t, srv, client.Config{Compression: "none"})
				got = sentWith(t, func() {
					r, err := hdr.Query(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Release()
					for r.Next() {
					}
				})
				if got["none"] == 0 || len(got) != 1 {
					t.Errorf("header none over session zstd: got %v, want all none", got)
				}
			})
			t.Run("bad session option", func(t *testing.T) {
				_, res := testutil.SessionCookie(t, plain, "compression", "gzip")
				if e := res.Errors["compression"]; e == nil || e.Value != flight.SetSessionOptionsResultErrorInvalidValue {
					t.Errorf("compression=gzip: got %v, want INVALID_VALUE", e)
				}
			})
			t.Run("bad header", func(t *testing.T) {
				c := testutil.Dial(t, srv, client.Config{Compression: "gzip"})
				r, err := c.Query(context.Background(), q)
				if err == nil {
					for r.Next() {
					}
					err = r.Err()
					r.Release()
				}
				wantCode(t, err, codes.InvalidArgument, `unknown compression "gzip"`)
			})
		})
	}
}

// stockClient is arrow-go's Flight SQL client with gRPC's standard codec:
// its reader decompresses with arrow-go's own codecs.
func stockClient(t *testing.T, addr string) *flightsql.Client {
	t.Helper()
	c, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stockFetch runs q with arrow-go's client asking for comp and returns
// the batches, retained.
func stockFetch(t *testing.T, c *flightsql.Client, q, comp string) []arrow.RecordBatch {
	t.Helper()
	return stockFetchCtx(t, context.Background(), c, q, comp)
}

// stockFetchCtx is stockFetch on ctx; comp "" sends no header.
func stockFetchCtx(t *testing.T, ctx context.Context, c *flightsql.Client, q, comp string) []arrow.RecordBatch {
	t.Helper()
	if comp != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-quiver-compression", comp)
	}
	info, err := c.Execute(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return out
}

func TestCompression_DoGetReadByStockReader(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	srv := testutil.StartServer(t, server.Config{Allocator: mem})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), compressionTable); err != nil {
		t.Fatal(err)
	}
	q := "SELECT * FROM ct ORDER BY id"
	stock := stockClient(t, srv.FlightAddr)
	want := stockFetch(t, stock, q, "none")
	defer releaseBatches(want)
	check := func(t *testing.T, got []arrow.RecordBatch) {
		t.Helper()
		defer releaseBatches(got)
		if len(got) != len(want) {
			t.Fatalf("got %d batches, want %d", len(got), len(want))
		}
		for i := range got {
			if !array.RecordEqual(got[i], want[i]) {
				t.Fatalf("batch %d differs from the uncompressed result", i)
			}
		}
	}
	for _, comp := range []string{"lz4", "zstd", "auto"} {
		t.Run("arrow-go reader/"+comp, func(t *testing.T) {
			check(t, stockFetch(t, stock, q, comp))
		})
		t.Run("quiver client/"+comp, func(t *testing.T) {
			qc := testutil.Dial(t, srv, client.Config{Compression: comp})
			r, err := qc.Query(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			var got []arrow.RecordBatch
			for r.Next() {
				rec := r.RecordBatch()
				rec.Retain()
				got = append(got, rec)
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			r.Release()
			check(t, got)
		})
	}
	// Every result buffer went back to the server's allocator once gRPC
	// had sent it.
	waitFreedCompression(t, mem)
}

func releaseBatches(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// scalarOf runs a one-value query and returns the value as a string.
func scalarOf(t *testing.T, c *client.Client, sql string) string {
	t.Helper()
	n, first := queryAll(t, c, sql)
	if n != 1 || len(first) != 1 {
		t.Fatalf("%s: got %d rows", sql, n)
	}
	return first[0]
}

// waitFreedCompression waits until gRPC has let go of every result
// buffer (Hold) and checks the allocator is empty.
func waitFreedCompression(t *testing.T, mem *memory.CheckedAllocator) {
	t.Helper()
	for i := 0; i < 100 && mem.CurrentAlloc() != 0; i++ {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if n := mem.CurrentAlloc(); n != 0 {
		t.Errorf("server allocator: %d bytes still allocated after the streams ended", n)
	}
}

// putSender sends a DoPut stream's messages, the first with the
// descriptor the command travels in.
type putSender struct {
	stream flight.FlightService_DoPutClient
	desc   *flight.FlightDescriptor
}

func (p *putSender) SendMsg(m any) error {
	if p.desc == nil {
		return p.stream.SendMsg(m)
	}
	fd := m.(*ipcx.RawFlightData)
	first := &flight.FlightData{FlightDescriptor: p.desc, DataHeader: fd.Header, AppMetadata: fd.AppMetadata}
	for _, b := range fd.Body {
		first.DataBody = append(first.DataBody, b...)
	}
	p.desc = nil
	return p.stream.Send(first)
}

// ingestQuiver bulk-loads recs into table through DoPut, written by
// quiver's compressing writer.
func ingestQuiver(t *testing.T, c *client.Client, table string, comp ipcx.Compression, recs []arrow.RecordBatch) int64 {
	t.Helper()
	cmd, err := anypb.New(&pb.CommandStatementIngest{
		Table: table,
		TableDefinitionOptions: &pb.CommandStatementIngest_TableDefinitionOptions{
			IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_CREATE,
			IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_FAIL,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.SQL().Client.DoPut(c.Context(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	w := ipcx.NewCompressedWriter(&putSender{stream: stream, desc: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: raw}},
		comp, ipc.WithSchema(recs[0].Schema()))
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	res, err := stream.Recv()
	if err != nil {
		t.Fatalf("ingest %s: %v", table, err)
	}
	var upd pb.DoPutUpdateResult
	if err := proto.Unmarshal(res.GetAppMetadata(), &upd); err != nil {
		t.Fatal(err)
	}
	return upd.GetRecordCount()
}

func TestCompression_DoPutIngest(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	mem := testmem.CheckedWait(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "noise", Type: arrow.BinaryTypes.Binary},
	}, nil)
	var recs []arrow.RecordBatch
	for b := 0; b < 3; b++ {
		rb := array.NewRecordBuilder(mem, schema)
		for i := 0; i < 100_000; i++ {
			id := int64(b*100_000 + i)
			rb.Field(0).(*array.Int64Builder).Append(id)
			if id%9 == 0 {
				rb.Field(1).AppendNull()
			} else {
				rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id%5000))
			}
			// An incompressible buffer: goes raw inside compressed batches.
			x := uint64(id)*0x9E3779B97F4A7C15 + 1
			rb.Field(2).(*array.BinaryBuilder).Append([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24), byte(x >> 32), byte(x >> 40), byte(x >> 48), byte(x >> 56)})
		}
		recs = append(recs, rb.NewRecordBatch())
		rb.Release()
	}
	defer releaseBatches(recs)
	for _, comp := range []ipcx.Compression{{Codec: ipcx.CodecLZ4}, {Codec: ipcx.CodecZSTD}, {Auto: true}} {
		t.Run(comp.String(), func(t *testing.T) {
			table := "put_" + comp.String()
			if n := ingestQuiver(t, c, table, comp, recs); n != 300_000 {
				t.Fatalf("ingest: got %d rows, want 300000", n)
			}
			got := scalarOf(t, c, "SELECT sum(id)::VARCHAR || '/' || count(name)::VARCHAR || '/' || max(name) || '/' || count(DISTINCT noise)::VARCHAR FROM "+table)
			if want := "44999850000/266666/n999/300000"; got != want {
				t.Errorf("sum(id)/count(name)/max(name)/distinct noise: got %s, want %s", got, want)
			}
		})
	}
}

func TestCompression_AutoPicksNoneOnLoopback(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Compression: "auto"})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), `CREATE TABLE wide AS SELECT i AS c0, i*2 AS c1, i*3 AS c2, i*4 AS c3, i*5 AS c4,
		i*6 AS c5, i*7 AS c6, i*8 AS c7, i*9 AS c8, i*10 AS c9 FROM range(2000000) t(i)`); err != nil {
		t.Fatal(err)
	}
	// A client on this host is never sent compressed batches: the link
	// is a memory copy on the cores compression would take.
	for i := 0; i < 2; i++ {
		got := sentWith(t, func() {
			if n, _ := queryAll(t, c, "SELECT * FROM wide"); n != 2_000_000 {
				t.Fatalf("rows: got %d", n)
			}
		})
		// 31 batches of 64K rows, or a few more when the server splits
		// the table into parts of its own.
		if got["none"] < 31 || len(got) != 1 {
			t.Errorf("stream %d: batches by codec %v, want 31 or more, all uncompressed", i+1, got)
		}
	}
}

// TestCompression_DefaultSparesClientsWithoutCodecs: a server default of
// zstd reaches a client that asks for nothing, except one whose user agent
// says its stock Arrow reader cannot decompress (the JDBC driver's
// grpc-java, Arrow .NET's grpc-dotnet); those get none unless they ask.
func TestCompression_DefaultSparesClientsWithoutCodecs(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Compression: "zstd"})
	plain := testutil.Dial(t, srv, client.Config{})
	if _, err := plain.Exec(context.Background(), compressionTable); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, userAgent, header, want string
	}{
		{"arrow-go asking nothing", "", "", "zstd"},
		{"grpc-java asking nothing", "grpc-java-netty/1.70.0", "", "none"},
		{"grpc-dotnet asking nothing", "grpc-dotnet/2.66.0", "", "none"},
		{"grpc-java asking lz4", "grpc-java-netty/1.70.0", "lz4", "lz4"},
		{"a user agent naming java later", "my-app grpc-java-netty/1.70.0", "", "zstd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
			if tt.userAgent != "" {
				opts = append(opts, grpc.WithUserAgent(tt.userAgent))
			}
			c, err := flightsql.NewClient(srv.FlightAddr, nil, nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got := sentWith(t, func() {
				var n int64
				for _, rec := range stockFetchCtx(t, plain.Context(context.Background()), c, "SELECT * FROM ct", tt.header) {
					n += rec.NumRows()
					rec.Release()
				}
				if n != 250000 {
					t.Fatalf("rows: got %d, want 250000", n)
				}
			})
			if got[tt.want] == 0 || len(got) != 1 {
				t.Errorf("batches by codec: got %v, want all %s", got, tt.want)
			}
		})
	}
}
