package flightsql

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Session option names.
const (
	optCatalog = "catalog"
	optSchema  = "schema"
)

// SetSessionOptions sets the session's default catalog and schema, each
// checked against the database before it is accepted, its result
// compression (none, lz4, zstd or auto), its query_timeout, which
// lowers the server's --query-timeout and never raises it, and its
// split_rows (see Local).
func (s *Server) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "no session: %v", err)
	}
	res := &flight.SetSessionOptionsResult{Errors: map[string]*flight.SetSessionOptionsResultError{}}
	for name, v := range req.GetSessionOptions() {
		switch name {
		case optCatalog, optSchema:
			str, ok := v.GetOptionValue().(*pb.SessionOptionValue_StringValue)
			if v.GetOptionValue() == nil {
				sess.EraseSessionOption(name)
				continue
			}
			if !ok {
				res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
				continue
			}
			if err := s.checkNamespace(ctx, name, str.StringValue); err != nil {
				s.log.Info("rejected session option", "option", name, "value", str.StringValue, "err", err)
				res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
				continue
			}
			sess.SetSessionOption(name, v)
		case optCompression:
			str, ok := v.GetOptionValue().(*pb.SessionOptionValue_StringValue)
			switch {
			case v.GetOptionValue() == nil:
				sess.EraseSessionOption(name)
			case !ok || !ValidCompression(str.StringValue):
				res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
			default:
				sess.SetSessionOption(name, v)
			}
		case optQueryTimeout:
			if v.GetOptionValue() == nil {
				sess.EraseSessionOption(name)
				continue
			}
			if _, err := parseTimeout(v); err != nil {
				s.log.Info("rejected session option", "option", name, "err", err)
				res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
				continue
			}
			sess.SetSessionOption(name, v)
		case optSplitRows:
			if v.GetOptionValue() == nil {
				sess.EraseSessionOption(name)
				continue
			}
			if _, err := parseSplitRows(v); err != nil {
				s.log.Info("rejected session option", "option", name, "err", err)
				res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidValue}
				continue
			}
			sess.SetSessionOption(name, v)
		default:
			res.Errors[name] = &flight.SetSessionOptionsResultError{Value: flight.SetSessionOptionsResultErrorInvalidName}
		}
	}
	resendCookie(ctx, sess)
	return res, nil
}

// resendCookie puts the session's cookie, options as now set, in the
// response header too. arrow-go's session middleware sends a new
// session's cookie in the header when the call starts, before the options
// are set, and the final one in the trailer; a client that reads only
// headers (Arrow Java's cookie middleware), or that sees the header after
// the trailer, would otherwise keep the empty session. Two cookies of one
// name in a header are applied in order, so the last, this one, wins.
func resendCookie(ctx context.Context, sess session.ServerSession) {
	c, err := session.CreateCookieForSession(sess)
	if err != nil {
		return
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("Set-Cookie", c.String()))
}

// checkNamespace checks that a catalog or schema exists.
func (s *Server) checkNamespace(ctx context.Context, kind, name string) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	col := "catalog_name"
	if kind == optSchema {
		col = "schema_name"
	}
	rows, err := c.Query(ctx, fmt.Sprintf("SELECT count(*) FROM information_schema.schemata WHERE %s = ?", col), name)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() || rows.RecordBatch().Column(0).ValueStr(0) == "0" {
		return fmt.Errorf("no %s named %q", kind, name)
	}
	return nil
}

// GetSessionOptions returns the session's options.
func (s *Server) GetSessionOptions(ctx context.Context, _ *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "no session: %v", err)
	}
	return &flight.GetSessionOptionsResult{SessionOptions: sess.GetSessionOptions()}, nil
}

// CloseSession ends the session; its options are forgotten.
func (s *Server) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	sess, err := session.GetSessionFromContext(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "no session: %v", err)
	}
	if err := sess.Close(); err != nil {
		return nil, status.Errorf(codes.Internal, "close session: %v", err)
	}
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}
