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
// The first message must name the upload's command in its descriptor
// (putCommand). Every message's IPC metadata is checked (checkIPCMessage)
// before arrow-go's reader sees it, since it allocates by the counts a schema
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
	put, err := putCommand(first.Descriptor)
	if err == nil {
		err = checkMessage(first)
	}
	if err != nil {
		if first.Body != nil {
			first.Body.Release()
		}
		return err
	}
	cmd, ok := put.(*pb.CommandStatementIngest)
	if !ok {
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
		in = &checkedReader{RecordReader: rdr}
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

// putCommand is the Flight SQL command a DoPut's first message names in
// its descriptor, which must be there: arrow-go's router reads the command
// from the first message's descriptor and dereferences it unchecked, so a
// descriptor that is missing (a nil pointer), not a command, or not one of
// the commands DoPut takes, is refused here with InvalidArgument before
// the router sees the upload. A descriptor on a later message does not
// count: the command decides how the messages after it are read.
func putCommand(d *flight.FlightDescriptor) (proto.Message, error) {
	switch {
	case d == nil:
		return nil, invalidf("DoPut: the first message carries no flight descriptor; it must name the upload's command (%s)", putCommands)
	case d.GetType() != flight.DescriptorCMD:
		return nil, invalidf("DoPut: the flight descriptor is of type %s; Flight SQL uploads name a command (type CMD: %s)", d.GetType(), putCommands)
	case len(d.GetCmd()) == 0:
		return nil, invalidf("DoPut: the flight descriptor's command is empty; it must name the upload's command (%s)", putCommands)
	}
	var a anypb.Any
	if err := proto.Unmarshal(d.GetCmd(), &a); err != nil {
		return nil, invalidf("DoPut: the flight descriptor's command is not a Flight SQL command (a protobuf Any): %v", err)
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return nil, invalidf("DoPut: the flight descriptor's command %q cannot be read: %v", a.GetTypeUrl(), err)
	}
	switch msg.(type) {
	case *pb.CommandStatementIngest, *pb.CommandStatementUpdate, *pb.CommandStatementSubstraitPlan,
		*pb.CommandPreparedStatementQuery, *pb.CommandPreparedStatementUpdate:
		return msg, nil
	}
	return nil, invalidf("DoPut: %s is not a command DoPut takes (%s)", a.GetTypeUrl(), putCommands)
}

// putCommands names the commands DoPut takes, for error messages.
const putCommands = "CommandStatementIngest, CommandStatementUpdate, CommandPreparedStatementQuery or CommandPreparedStatementUpdate"

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
	// Received as a FlightMessage, whose decoding problems are the
	// client's InvalidArgument (checkMessage); the body is Go memory,
	// which arrow-go's reader keeps as a plain byte slice.
	m := &ipcx.FlightMessage{}
	if err := r.FlightService_DoPutServer.RecvMsg(m); err != nil {
		return nil, err
	}
	if err := checkMessage(m); err != nil {
		return nil, err
	}
	return m.FlightData(), nil
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
		if err := checkMessage(fm); err != nil {
			if fm.Body != nil {
				fm.Body.Release()
				fm.Body = nil
			}
			return err
		}
	}
	return nil
}

// checkMessage checks that an uploaded message was decoded, and its IPC
// metadata, if it has any.
func checkMessage(m *ipcx.FlightMessage) error {
	if m.Err != nil {
		return status.Errorf(codes.InvalidArgument, "DoPut: %v", m.Err)
	}
	if len(m.Header) == 0 {
		return nil
	}
	if _, err := checkIPCMessage(m.Header); err != nil {
		return status.Errorf(codes.InvalidArgument, "DoPut: %v", err)
	}
	return nil
}

// checkedReader passes on the batches of an upload that arrow-go's IPC
// reader reads (nested columns) once each is checked whole
// (validateRecord).
type checkedReader struct {
	array.RecordReader
	err error
}

func (r *checkedReader) Next() bool {
	if r.err != nil || !r.RecordReader.Next() {
		return false
	}
	if err := validateRecord(r.RecordReader.RecordBatch()); err != nil {
		r.err = err
		return false
	}
	return true
}

func (r *checkedReader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.RecordReader.Err()
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
