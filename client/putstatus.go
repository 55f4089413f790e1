package client

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// doPutMethod is Flight's DoPut, the call every update, bulk load and
// prepared statement's parameters go through.
const doPutMethod = "/arrow.flight.protocol.FlightService/DoPut"

// putStatus is a stream interceptor that gives a DoPut's sender the
// server's reason when the server ends the call while the client still
// sends. gRPC then fails the send with a bare io.EOF and keeps the status
// for the next receive, which arrow-go's Flight SQL client never makes
// after a failed send: a statement the server refused before reading it
// (a login past --max-connections, on a busy server) reached the caller
// as "EOF" instead of RESOURCE_EXHAUSTED and its message.
func putStatus(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != doPutMethod {
		return cs, err
	}
	return &putStream{ClientStream: cs}, nil
}

// putStream is a DoPut stream whose failed send reads the call's status.
type putStream struct {
	grpc.ClientStream
	// held is a result read while learning why a send failed, for the
	// next RecvMsg; ended is the call's error once known.
	held  *flight.PutResult
	ended error
}

func (s *putStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if !errors.Is(err, io.EOF) {
		return err
	}
	res := new(flight.PutResult)
	switch rerr := s.ClientStream.RecvMsg(res); {
	case rerr == nil:
		s.held = res
	case !errors.Is(rerr, io.EOF):
		s.ended = rerr
		return rerr
	}
	return err
}

func (s *putStream) RecvMsg(m any) error {
	if s.held != nil {
		dst, ok := m.(proto.Message)
		if !ok {
			return s.ClientStream.RecvMsg(m)
		}
		proto.Reset(dst)
		proto.Merge(dst, s.held)
		s.held = nil
		return nil
	}
	if s.ended != nil {
		return s.ended
	}
	return s.ClientStream.RecvMsg(m)
}
