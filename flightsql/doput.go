package flightsql

import (
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ipcx"
)

// DoPut serves bulk ingest (CommandStatementIngest) itself and hands every
// other upload to arrow-go's router. arrow-go's Flight reader takes each
// batch body as a plain byte slice that it can never give back, so every
// uploaded batch cost fresh, zeroed memory; quiver's reader receives the
// bodies straight into the server's recycling allocator, and they go back
// to it once DuckDB has inserted them.
//
// An upload of flat columns (numbers, booleans, strings, binary: see
// ipcx.GroupDecodable) is read by ipcx.GroupReader, which copies each
// batch's buffers out of gRPC's receive buffers straight into batches of
// a DuckDB row group's rows; other uploads are read a message at a time
// and joined into such batches by the engine. Either way the client's
// batch sizes do not decide DuckDB's.
//
// Every message's IPC metadata is checked (checkIPCMessage) before
// arrow-go's reader sees it, since it allocates by the counts a schema
// claims; GroupReader checks the batches it decodes against their bodies
// itself.
func (v *service) DoPut(stream flight.FlightService_DoPutServer) error {
	first := &ipcx.FlightMessage{}
	if err := stream.RecvMsg(first); err != nil {
		if errors.Is(err, io.EOF) {
			return status.Error(codes.InvalidArgument, "DoPut: the stream ended before its first message")
		}
		return err
	}
	if err := checkHeader(first.Header); err != nil {
		if first.Body != nil {
			first.Body.Release()
		}
		return err
	}
	cmd := ingestCommand(first.Descriptor)
	if cmd == nil {
		return v.FlightServer.DoPut(&replayPut{FlightService_DoPutServer: stream, first: first.FlightData()})
	}
	var in array.RecordReader
	msgs := &replayMsg{s: stream, first: first}
	rdr, err := ipcx.NewFlightReader(msgs, v.s.mem)
	switch {
	case err != nil:
		in = failedReader{err: err}
	case ipcx.GroupDecodable(rdr.Schema()):
		// Flat columns are read straight into row-group-sized batches.
		schema := rdr.Schema()
		rdr.Release()
		g, err := ipcx.NewGroupReader(msgs, schema, engine.RowGroupSize, v.s.mem)
		if err != nil {
			return status.Errorf(codes.Internal, "DoPut: %v", err)
		}
		defer g.Release()
		in = g
	default:
		defer rdr.Release()
		in = rdr
	}
	n, ierr := v.s.ingestStream(stream.Context(), cmd, in)
	// Like arrow-go's router: the count always, then the failure if any.
	meta, err := proto.Marshal(&pb.DoPutUpdateResult{RecordCount: n})
	if err != nil {
		return status.Errorf(codes.Internal, "encode the ingest result: %v", err)
	}
	if err := stream.Send(&flight.PutResult{AppMetadata: meta}); err != nil {
		return err
	}
	return ierr
}

// ingestCommand is the CommandStatementIngest a DoPut descriptor carries,
// or nil.
func ingestCommand(d *flight.FlightDescriptor) *pb.CommandStatementIngest {
	if d.GetType() != flight.DescriptorCMD {
		return nil
	}
	var a anypb.Any
	if proto.Unmarshal(d.GetCmd(), &a) != nil || !a.MessageIs(&pb.CommandStatementIngest{}) {
		return nil
	}
	var cmd pb.CommandStatementIngest
	if a.UnmarshalTo(&cmd) != nil {
		return nil
	}
	return &cmd
}

// replayPut gives arrow-go's router the first message again, then the
// rest of the stream.
type replayPut struct {
	flight.FlightService_DoPutServer
	first *flight.FlightData
}

func (r *replayPut) Recv() (*flight.FlightData, error) {
	if fd := r.first; fd != nil {
		r.first = nil
		return fd, nil
	}
	fd, err := r.FlightService_DoPutServer.Recv()
	if err != nil {
		return nil, err
	}
	if err := checkHeader(fd.GetDataHeader()); err != nil {
		return nil, err
	}
	return fd, nil
}

// replayMsg gives quiver's Flight reader the first message again, then
// the rest of the stream.
type replayMsg struct {
	s     flight.FlightService_DoPutServer
	first *ipcx.FlightMessage
}

func (r *replayMsg) RecvMsg(m any) error {
	if first := r.first; first != nil {
		r.first = nil
		if fm, ok := m.(*ipcx.FlightMessage); ok {
			*fm = *first
			return nil
		}
	}
	if err := r.s.RecvMsg(m); err != nil {
		return err
	}
	if fm, ok := m.(*ipcx.FlightMessage); ok {
		if err := checkHeader(fm.Header); err != nil {
			if fm.Body != nil {
				fm.Body.Release()
				fm.Body = nil
			}
			return err
		}
	}
	return nil
}

// checkHeader checks an uploaded message's IPC metadata, if it has any.
func checkHeader(h []byte) error {
	if len(h) == 0 {
		return nil
	}
	if _, err := checkIPCMessage(h); err != nil {
		return status.Errorf(codes.InvalidArgument, "DoPut: %v", err)
	}
	return nil
}

// failedReader is an upload whose schema could not be read.
type failedReader struct{ err error }

func (f failedReader) Retain()                        {}
func (f failedReader) Release()                       {}
func (f failedReader) Schema() *arrow.Schema          { return nil }
func (f failedReader) Next() bool                     { return false }
func (f failedReader) RecordBatch() arrow.RecordBatch { return nil }
func (f failedReader) Record() arrow.RecordBatch      { return nil }
func (f failedReader) Err() error                     { return f.err }
