package auth

import (
	"errors"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/protobuf/proto"
)

// Handshake serves Flight's Handshake RPC. It needs the interceptors
// installed in front of it.
//
// Clients that log in with metadata (arrow-go's AuthenticateBasicToken,
// ADBC, JDBC, pyarrow's authenticate_basic_token) have already been
// answered by the interceptor, which put the bearer token in the response
// header; Handshake then returns at once without reading the stream.
//
// Clients that log in with a payload (a flight.ClientAuthHandler sending a
// serialized flight.BasicAuth, as Java's authenticateBasic does) get the
// token back as the response payload, and in the response header. They then
// send it as "auth-token-bin" metadata, which the interceptors accept like a
// Bearer token.
func (a *Authenticator) Handshake(stream flight.FlightService_HandshakeServer) error {
	ctx := stream.Context()
	if _, ok := UserFromContext(ctx); ok || a.disabled {
		return nil
	}

	req, err := a.recvHandshake(stream)
	if errors.Is(err, io.EOF) || errors.Is(err, errHandshakeTimeout) {
		return a.reject(ctx, handshakeMethod, callCreds{}, nil)
	}
	if err != nil {
		return err
	}
	var basic flight.BasicAuth
	if err := proto.Unmarshal(req.GetPayload(), &basic); err != nil || basic.GetUsername() == "" {
		return a.reject(ctx, handshakeMethod, callCreds{}, nil)
	}
	cred := callCreds{kind: credBasic, user: basic.GetUsername(), password: basic.GetPassword()}

	u, err := a.verify(ctx, cred)
	if err != nil {
		return a.reject(ctx, handshakeMethod, cred, err)
	}
	token, err := a.login(ctx, handshakeMethod, u)
	if err != nil {
		return err
	}
	if err := stream.SetHeader(bearerHeader(token)); err != nil {
		a.log.Warn("set authorization header", logKeyMethod, handshakeMethod, logKeyErr, err)
	}
	// A failed Send already carries the transport's status.
	return stream.Send(&flight.HandshakeResponse{Payload: []byte(token)})
}

// handshakeTimeout bounds how long an unauthenticated Handshake may wait
// for its payload, so that idle clients cannot hold streams open.
const handshakeTimeout = 10 * time.Second

var errHandshakeTimeout = errors.New("no handshake payload in time")

// recvHandshake reads the first Handshake request, giving up after
// a.handshakeTimeout. On timeout the receiving goroutine ends when the
// handler returns and gRPC closes the stream.
func (a *Authenticator) recvHandshake(stream flight.FlightService_HandshakeServer) (*flight.HandshakeRequest, error) {
	type result struct {
		req *flight.HandshakeRequest
		err error
	}
	done := make(chan result, 1)
	go func() {
		req, err := stream.Recv()
		done <- result{req, err}
	}()
	timer := time.NewTimer(a.handshakeTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.req, r.err
	case <-timer.C:
		return nil, errHandshakeTimeout
	}
}

// WrapFlightServer returns srv with its Handshake served by a.Handshake.
// Use it around flightsql.NewFlightServer's result before registering it.
func (a *Authenticator) WrapFlightServer(srv flight.FlightServer) flight.FlightServer {
	return &handshakeServer{FlightServer: srv, auth: a}
}

type handshakeServer struct {
	flight.FlightServer
	auth *Authenticator
}

func (s *handshakeServer) Handshake(stream flight.FlightService_HandshakeServer) error {
	return s.auth.Handshake(stream)
}
