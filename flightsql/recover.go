package flightsql

import (
	"context"
	"fmt"
	"path"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/internal/panics"
)

// A panic while serving a call fails that call and nothing else. gRPC
// runs each call on a goroutine of its own and recovers nothing: an
// unrecovered panic there, or on any goroutine a call starts, ends the
// process and every other client's work with it.
//
// recoverUnary and recoverStream are the outermost interceptors, so they
// also cover authentication, the session middleware and the metrics. They
// recover a panic of the call's goroutine, and take the *panics.Error that
// a goroutine of the call (the DoGet producer, a metadata stream, the IPC
// writer's sender, DuckDB pulling an upload) recovered and returned as
// the call's error. Either way the panic is logged once, with its stack,
// counted in quiver_flight_panics_total, and the call answers Internal.

// Log attribute keys of a recovered panic.
const (
	logMethod = "method"
	logPanic  = "panic"
	logStack  = "stack"
)

func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if pe := panics.As(err); pe != nil {
			resp, err = nil, s.panicked(info.FullMethod, pe)
		}
	}()
	defer panics.Recover(&err)
	return h(ctx, req)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer func() {
		if pe := panics.As(err); pe != nil {
			err = s.panicked(info.FullMethod, pe)
		}
	}()
	defer panics.Recover(&err)
	return h(srv, ss)
}

// panicked logs and counts a recovered panic of a call to method and
// returns the call's error.
func (s *Server) panicked(method string, pe *panics.Error) error {
	panicsTotal.WithLabelValues(method).Inc()
	s.log.Error("recovered a panic serving a call; the call failed, the server goes on",
		logMethod, method, logPanic, fmt.Sprint(pe.Value), logStack, string(pe.Stack))
	return status.Errorf(codes.Internal,
		"internal error: %s stopped on a bug in the server (%v); the server logged it and goes on serving",
		path.Base(method), pe.Value)
}

// recoverChunk, deferred by a goroutine that feeds a DoGet stream of
// StreamChunks, ends the stream with the goroutine's panic as its error.
// Defer it last, so that it runs before the goroutine closes the channel.
func recoverChunk(ctx context.Context, ch chan<- flight.StreamChunk) {
	if p := recover(); p != nil {
		sendErr(ctx, ch, panics.New(p))
	}
}
