package flightsql

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/panics"
)

// toStatus maps an error to a gRPC status, in one place for the whole
// service. Engine errors keep DuckDB's message, so the user sees what was
// wrong with their statement; errors that already carry a status pass
// through, and so does a recovered panic, which the recovering
// interceptor logs, counts and answers Internal (recover.go).
func toStatus(err error) error {
	if err == nil || panics.As(err) != nil {
		return err
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var le *admit.LimitError
	var ended *txnEndedError
	switch {
	case errors.As(err, &ended):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.As(err, &le):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	var ee *engine.Error
	if !errors.As(err, &ee) {
		return status.Error(codes.Internal, err.Error())
	}
	code := codes.Internal
	switch ee.Kind {
	case engine.KindInvalid:
		code = codes.InvalidArgument
	case engine.KindNotFound:
		code = codes.NotFound
	case engine.KindConstraint:
		code = codes.AlreadyExists
	case engine.KindCanceled:
		code = codes.Canceled
	case engine.KindPermission:
		code = codes.PermissionDenied
	case engine.KindTransaction:
		code = codes.Aborted
	case engine.KindResource:
		code = codes.ResourceExhausted
	}
	return status.Error(code, err.Error())
}

func invalidf(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}
