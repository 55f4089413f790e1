// Package client is quiver's Go client: it connects to a Flight SQL server,
// authenticates, streams query results as Arrow record batches, runs
// updates and bulk-ingests Arrow streams.
package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/ipcx"
	"github.com/quiverdata/quiver/mempool"
)

// CompressionHeader is the call header that asks the server to compress
// result bodies: lz4, zstd, none or auto.
const CompressionHeader = "x-quiver-compression"

// MaxMessageSize is the client's gRPC message limit, matching the server's.
const MaxMessageSize = ipcx.MaxMessageSize

// Config says where and how to connect.
type Config struct {
	// Addr is HOST:PORT of the Flight SQL port.
	Addr     string
	User     string
	Password string
	// TLS turns on TLS; CAFile verifies the server (system roots when
	// empty); CertFile and KeyFile present a client certificate (mTLS).
	TLS                bool
	CAFile             string
	CertFile, KeyFile  string
	InsecureSkipVerify bool
	// Compression is sent as CompressionHeader on every call when set.
	Compression string
	// Allocator holds result batches. When nil, batches without strings
	// or binary data come from recycled memory (a bulk fetch then costs
	// no fresh memory per batch), and the others from Go memory, so that
	// Go strings taken from them stay valid after the batch is released.
	Allocator memory.Allocator
	// FetchParallel is how many endpoints of a result are fetched at
	// once; 0 means min(endpoints, 4). The batches of different endpoints
	// then interleave, and the client holds at most 2×FetchParallel+1 of
	// them at a time, whatever the result's size. 1 fetches the endpoints
	// one after another, in order.
	FetchParallel int
}

// recycled backs result batches without variable-width data when the
// caller names no allocator.
var recycled = mempool.New()

// grpcPool is the clients' gRPC receive-buffer pool.
var grpcPool = &mempool.GRPC{}

// DialOptions are the gRPC settings for bulk Arrow data, matching the
// server's: large message limits, wide windows, big socket buffers.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize),
			grpc.ForceCodecV2(ipcx.ClientCodec())),
		grpc.WithInitialWindowSize(ipcx.StreamWindow),
		grpc.WithInitialConnWindowSize(ipcx.ConnWindow),
		grpc.WithReadBufferSize(ipcx.ReadBufferSize),
		grpc.WithWriteBufferSize(ipcx.WriteBufferSize),
		experimental.WithBufferPool(grpcPool),
		grpc.WithChainStreamInterceptor(putStatus),
	}
}

// Client is a connection to a quiver server. It is safe for concurrent use.
type Client struct {
	sql *flightsql.Client
	// compression is Config.Compression; host is the server's host.
	compression, host string
	md                metadata.MD
	mem               memory.Allocator
	// fetchParallel is Config.FetchParallel; locs holds the connections
	// to the locations endpoints name.
	fetchParallel int
	locs          *locations
}

// Dial connects and, when a user is given, authenticates with Basic
// credentials, keeping the bearer token the server returns.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Addr == "" {
		return nil, errors.New("no server address: give --server HOST:PORT or set QUIVER_SERVER")
	}
	mem := cfg.Allocator
	creds := insecure.NewCredentials()
	if cfg.TLS || cfg.CAFile != "" || cfg.CertFile != "" {
		tc, err := auth.ClientTLSConfig(cfg.CAFile, cfg.CertFile, cfg.KeyFile, cfg.InsecureSkipVerify)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tc)
	}
	opts := append(DialOptions(), grpc.WithTransportCredentials(creds))
	sc, err := flightsql.NewClientCtx(ctx, cfg.Addr, nil, nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
	}
	host, _, _ := net.SplitHostPort(cfg.Addr)
	c := &Client{sql: sc, md: metadata.MD{}, mem: mem, compression: cfg.Compression, host: host,
		fetchParallel: cfg.FetchParallel, locs: newLocations(cfg)}
	if cfg.Compression != "" {
		c.md.Set(CompressionHeader, cfg.Compression)
	}
	if cfg.User != "" {
		actx, err := sc.Client.AuthenticateBasicToken(ctx, cfg.User, cfg.Password)
		if err != nil {
			sc.Close()
			return nil, fmt.Errorf("authenticate to %s as %s: %w", cfg.Addr, cfg.User, err)
		}
		if md, ok := metadata.FromOutgoingContext(actx); ok {
			c.md = metadata.Join(c.md, md)
		}
	}
	return c, nil
}

// Context returns ctx carrying the client's credentials and headers; use it
// for calls made through SQL().
func (c *Client) Context(ctx context.Context) context.Context {
	if len(c.md) == 0 {
		return ctx
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		return metadata.NewOutgoingContext(ctx, metadata.Join(md, c.md))
	}
	return metadata.NewOutgoingContext(ctx, c.md)
}

// SQL is the underlying arrow-go Flight SQL client; call it with Context.
func (c *Client) SQL() *flightsql.Client { return c.sql }

// Close closes the connection and those to the locations of results'
// endpoints.
func (c *Client) Close() error {
	err := c.sql.Close()
	return errors.Join(err, c.locs.close())
}

// Exec runs DDL or DML and returns the rows changed.
func (c *Client) Exec(ctx context.Context, sql string) (int64, error) {
	return c.sql.ExecuteUpdate(c.Context(ctx), sql)
}

// Query runs a query and streams its result. The caller must Release the
// returned reader; batches are valid until the next call to Next unless
// retained.
func (c *Client) Query(ctx context.Context, sql string) (*Result, error) {
	ctx = c.Context(ctx)
	info, err := c.sql.Execute(ctx, sql)
	if err != nil {
		return nil, err
	}
	return c.fetch(ctx, info)
}

// fetch streams the result info describes; see endpoints.go.
func (c *Client) fetch(ctx context.Context, info *flight.FlightInfo) (*Result, error) {
	schema, err := flight.DeserializeSchema(info.GetSchema(), c.allocator())
	if err != nil {
		return nil, fmt.Errorf("read result schema: %w", err)
	}
	r := &Result{ctx: ctx, c: c, schema: schema, mem: c.resultMem(schema), endpoints: info.GetEndpoint()}
	r.refs = 1
	if n := len(r.endpoints); n > 1 {
		if w := c.fetchWorkers(n); w > 1 {
			r.pool = startFetch(ctx, c, r.endpoints, r.mem, w)
		}
	}
	return r, nil
}

// allocator is Config.Allocator, or Go memory.
func (c *Client) allocator() memory.Allocator {
	if c.mem != nil {
		return c.mem
	}
	return memory.DefaultAllocator
}

// resultMem is the allocator for a result's batches (Config.Allocator).
func (c *Client) resultMem(schema *arrow.Schema) memory.Allocator {
	if c.mem != nil {
		return c.mem
	}
	for _, f := range schema.Fields() {
		if hasVarWidth(f.Type) {
			return memory.DefaultAllocator
		}
	}
	return recycled
}

// hasVarWidth reports whether values of dt can hold bytes that a Go
// string or []byte taken from an array would alias.
func hasVarWidth(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case arrow.BinaryDataType, *arrow.FixedSizeBinaryType:
		return true
	case arrow.NestedType:
		for _, f := range t.Fields() {
			if hasVarWidth(f.Type) {
				return true
			}
		}
	case *arrow.DictionaryType:
		return hasVarWidth(t.ValueType)
	case arrow.ExtensionType:
		return hasVarWidth(t.StorageType())
	}
	return false
}

// Ingest bulk-loads the batches of rdr into table through Flight SQL's
// CommandStatementIngest and returns the rows written.
//
// The batches go through quiver's IPC writer: their buffers are handed to
// gRPC without the two copies arrow-go's Flight writer makes, and they
// are compressed (Config.Compression: lz4, zstd or auto) in parallel. A
// reader that yields no batch at all fails with ErrNoRows and creates
// nothing; a reader that fails midway cancels the call, and the server
// keeps none of its rows.
func (c *Client) Ingest(ctx context.Context, rdr array.RecordReader, opts *flightsql.ExecuteIngestOpts) (int64, error) {
	return c.ingest(ctx, rdr, opts, c.compression)
}

func (c *Client) ingest(ctx context.Context, rdr array.RecordReader, opts *flightsql.ExecuteIngestOpts, compression string) (int64, error) {
	cmd := (*pb.CommandStatementIngest)(opts)
	if cmd.GetTableDefinitionOptions() == nil || cmd.GetTable() == "" {
		return 0, errors.New("ingest: the table and its table definition options are required")
	}
	comp := ipcx.Compression{}
	if compression != "" {
		var err error
		if comp, err = ipcx.ParseCompression(compression); err != nil {
			return 0, err
		}
		comp.Peer = c.host
	}
	any, err := anypb.New(cmd)
	if err != nil {
		return 0, fmt.Errorf("encode ingest command: %w", err)
	}
	desc, err := proto.Marshal(any)
	if err != nil {
		return 0, fmt.Errorf("encode ingest command: %w", err)
	}
	// Cancelling the call is what tells the server to abort.
	ctx, cancel := context.WithCancel(c.Context(ctx))
	defer cancel()
	stream, err := c.sql.Client.DoPut(ctx)
	if err != nil {
		return 0, err
	}
	w := ipcx.NewCompressedWriter(stream, comp, ipc.WithSchema(rdr.Schema()))
	if err := w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: desc}); err != nil {
		return 0, err
	}
	batches := 0
	var werr error
	for rdr.Next() {
		if werr = w.Write(rdr.RecordBatch()); werr != nil {
			break // the server's own error comes with its answer below
		}
		batches++
	}
	if err := rdr.Err(); err != nil {
		cancel()
		w.Close()
		return 0, err
	}
	if batches == 0 && werr == nil {
		cancel()
		w.Close()
		return 0, ErrNoRows
	}
	if err := w.Close(); err != nil && werr == nil {
		werr = err
	}
	if err := stream.CloseSend(); err != nil && werr == nil {
		werr = err
	}
	res, err := stream.Recv()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			return 0, err
		}
		if werr != nil {
			return 0, werr
		}
		return 0, errors.New("ingest: the server ended the call without a result")
	}
	var upd pb.DoPutUpdateResult
	if err := proto.Unmarshal(res.GetAppMetadata(), &upd); err != nil {
		return 0, fmt.Errorf("decode ingest result: %w", err)
	}
	// The server sends the count even when the ingest failed; the
	// failure, if any, ends the call.
	if _, err := stream.Recv(); err != nil && !errors.Is(err, io.EOF) {
		return upd.GetRecordCount(), err
	}
	return upd.GetRecordCount(), nil
}

// Result streams a query result across its endpoints: in order when
// there is one endpoint or Config.FetchParallel is 1, else as the
// endpoints' batches arrive. It implements array.RecordReader; it belongs
// to one goroutine, and its owner must Release it, which stops its
// fetching goroutines and frees every batch it still holds.
type Result struct {
	ctx       context.Context
	c         *Client
	schema    *arrow.Schema
	mem       memory.Allocator
	endpoints []*flight.FlightEndpoint
	// Fetched in order: cur reads endpoints[next-1].
	next int
	cur  *endpointReader
	// Fetched in parallel.
	pool *fetchPool
	rec  arrow.RecordBatch // handed out by Next; owned until the next
	err  error
	refs int
}

// Schema is the result's schema.
func (r *Result) Schema() *arrow.Schema { return r.schema }

// Next reads the next batch, releasing the one before.
func (r *Result) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.err != nil {
		return false
	}
	if r.pool != nil {
		r.rec = r.pool.recv()
		if r.rec == nil {
			if r.err = r.pool.error(); r.err != nil {
				r.pool.stop()
			}
		}
		return r.rec != nil
	}
	for {
		if r.cur == nil {
			if r.next == len(r.endpoints) {
				return false
			}
			r.cur = newEndpointReader(r.ctx, r.c, r.endpoints, r.next, r.mem)
			r.next++
		}
		rec, err := r.cur.next()
		if rec != nil {
			r.rec = rec
			return true
		}
		r.cur.close()
		r.cur = nil
		if err != nil {
			r.err = err
			return false
		}
	}
}

// RecordBatch is the batch Next read. It is valid until the next call to
// Next or Release unless retained.
func (r *Result) RecordBatch() arrow.RecordBatch { return r.rec }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (r *Result) Record() arrow.RecordBatch { return r.rec }

// Err is the error that ended the stream, if any.
func (r *Result) Err() error { return r.err }

// Retain adds a reference.
func (r *Result) Retain() { r.refs++ }

// Release drops a reference; the last one ends the result's calls, stops
// its fetching goroutines and releases its batches.
func (r *Result) Release() {
	r.refs--
	if r.refs != 0 {
		return
	}
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.cur != nil {
		r.cur.close()
		r.cur = nil
	}
	if r.pool != nil {
		r.pool.stop()
	}
}
