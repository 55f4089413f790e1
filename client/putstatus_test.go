package client

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// endedStream is a DoPut stream the server has ended: sends fail with
// io.EOF, and receives give what the server sent, then its status.
type endedStream struct {
	grpc.ClientStream
	results []*flight.PutResult
	status  error // nil: the call ended OK
}

func (s *endedStream) SendMsg(any) error { return io.EOF }

func (s *endedStream) RecvMsg(m any) error {
	if len(s.results) > 0 {
		*m.(*flight.PutResult) = flight.PutResult{AppMetadata: s.results[0].AppMetadata}
		s.results = s.results[1:]
		return nil
	}
	if s.status != nil {
		return s.status
	}
	return io.EOF
}

func TestPutStatus_SendGetsTheServersReason(t *testing.T) {
	refused := status.Error(codes.ResourceExhausted, "too many connections (--max-connections 2)")
	tests := []struct {
		name               string
		stream             *endedStream
		wantSend, wantRecv error // wantRecv after the send
		wantMeta           string
	}{
		{"refused", &endedStream{status: refused}, refused, refused, ""},
		{"ended OK", &endedStream{}, io.EOF, io.EOF, ""},
		{"a result, then refused", &endedStream{results: []*flight.PutResult{{AppMetadata: []byte("n")}}, status: refused},
			io.EOF, nil, "n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := putStatus(context.Background(), &grpc.StreamDesc{}, nil, doPutMethod,
				func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
					return tt.stream, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SendMsg(&flight.FlightData{}); !errors.Is(err, tt.wantSend) || status.Code(err) != status.Code(tt.wantSend) {
				t.Errorf("send: got %v, want %v", err, tt.wantSend)
			}
			var res flight.PutResult
			err = s.RecvMsg(&res)
			if !errors.Is(err, tt.wantRecv) || status.Code(err) != status.Code(tt.wantRecv) {
				t.Errorf("receive: got %v, want %v", err, tt.wantRecv)
			}
			if string(res.AppMetadata) != tt.wantMeta {
				t.Errorf("receive: result %q, want %q", res.AppMetadata, tt.wantMeta)
			}
			if tt.wantMeta != "" {
				if err := s.RecvMsg(&res); status.Code(err) != codes.ResourceExhausted {
					t.Errorf("second receive: got %v, want the status", err)
				}
			}
		})
	}
}

func TestPutStatus_OtherCallsUntouched(t *testing.T) {
	inner := &endedStream{status: status.Error(codes.Internal, "x")}
	s, _ := putStatus(context.Background(), &grpc.StreamDesc{}, nil, "/arrow.flight.protocol.FlightService/DoExchange",
		func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
			return inner, nil
		})
	if s != grpc.ClientStream(inner) {
		t.Errorf("DoExchange's stream was wrapped")
	}
}
