package auth

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// payloadAuth is a flight.ClientAuthHandler that logs in with a serialized
// flight.BasicAuth in the Handshake payload, as Java's authenticateBasic
// does, and then sends the returned token as "auth-token-bin".
type payloadAuth struct {
	user, password string
	token          string
}

func (p *payloadAuth) Authenticate(_ context.Context, conn flight.AuthConn) error {
	payload, err := proto.Marshal(&flight.BasicAuth{Username: p.user, Password: p.password})
	if err != nil {
		return err
	}
	if err := conn.Send(payload); err != nil {
		return err
	}
	token, err := conn.Read()
	if err != nil {
		return err
	}
	p.token = string(token)
	return nil
}

func (p *payloadAuth) GetToken(context.Context) (string, error) { return p.token, nil }

func TestAuthenticator_Handshake(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	addr := startServer(t, a)

	t.Run("AuthenticateBasicToken", func(t *testing.T) {
		c := dial(t, addr)
		ctx, err := c.AuthenticateBasicToken(testContext(t), "alice", "alice-pw")
		if err != nil {
			t.Fatalf("AuthenticateBasicToken: %v", err)
		}
		got, _, err := calls["unary"](ctx, c)
		if want := "alice/admin"; err != nil || got != want {
			t.Errorf("whoami after login = %q, %v; want %q, nil", got, err, want)
		}
		md, _ := metadata.FromOutgoingContext(ctx)
		if vals := md.Get("authorization"); len(vals) != 1 {
			t.Errorf("outgoing authorization after login = %q, want only the Bearer token", vals)
		}
	})

	t.Run("flightsql client", func(t *testing.T) {
		cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		ctx, err := cl.Client.AuthenticateBasicToken(testContext(t), "carol", "carol-pw")
		if err != nil {
			t.Fatalf("AuthenticateBasicToken: %v", err)
		}
		got, _, err := calls["stream"](ctx, cl.Client)
		if want := "carol/readonly"; err != nil || got != want {
			t.Errorf("whoami after login = %q, %v; want %q, nil", got, err, want)
		}
	})

	t.Run("AuthenticateBasicToken wrong password", func(t *testing.T) {
		_, err := dial(t, addr).AuthenticateBasicToken(testContext(t), "alice", "bob-pw")
		wantStatus(t, err, codes.Unauthenticated, `authentication failed for user "alice"`)
	})

	t.Run("payload", func(t *testing.T) {
		auth := &payloadAuth{user: "bob", password: "bob-pw"}
		c, err := flight.NewClientWithMiddleware(addr, auth, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Authenticate(testContext(t)); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		for name, do := range calls {
			got, _, err := do(testContext(t), c)
			if want := "bob/readwrite"; err != nil || got != want {
				t.Errorf("%s whoami after payload login = %q, %v; want %q, nil", name, got, err, want)
			}
		}
	})

	t.Run("payload wrong password", func(t *testing.T) {
		auth := &payloadAuth{user: "bob", password: "nope"}
		c, err := flight.NewClientWithMiddleware(addr, auth, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		wantStatus(t, c.Authenticate(testContext(t)), codes.Unauthenticated, `authentication failed for user "bob"`)
	})

	rawHandshake := func(t *testing.T, ctx context.Context, payload []byte) (metadata.MD, error) {
		t.Helper()
		s, err := dial(t, addr).Handshake(ctx)
		if err != nil {
			return nil, err
		}
		if payload != nil {
			if err := s.Send(&flight.HandshakeRequest{Payload: payload}); err != nil {
				return nil, err
			}
		}
		if err := s.CloseSend(); err != nil {
			return nil, err
		}
		for {
			if _, err := s.Recv(); err != nil {
				header, _ := s.Header()
				if errors.Is(err, io.EOF) {
					err = nil
				}
				return header, err
			}
		}
	}

	t.Run("no credentials", func(t *testing.T) {
		_, err := rawHandshake(t, testContext(t), nil)
		wantStatus(t, err, codes.Unauthenticated, msgAuthRequired)
	})
	t.Run("idle client", func(t *testing.T) {
		a.handshakeTimeout = 50 * time.Millisecond
		t.Cleanup(func() { a.handshakeTimeout = handshakeTimeout })
		s, err := dial(t, addr).Handshake(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		// Send nothing and keep the stream open.
		_, err = s.Recv()
		wantStatus(t, err, codes.Unauthenticated, msgAuthRequired)
	})
	t.Run("garbage payload", func(t *testing.T) {
		_, err := rawHandshake(t, testContext(t), []byte{0xff, 0xff, 0xff})
		wantStatus(t, err, codes.Unauthenticated, msgAuthRequired)
	})
	t.Run("Basic header with empty payload (JDBC)", func(t *testing.T) {
		ctx := metadata.AppendToOutgoingContext(testContext(t), "authorization", basicValue("alice", "alice-pw"))
		header, err := rawHandshake(t, ctx, []byte{})
		if err != nil {
			t.Fatalf("Handshake: %v", err)
		}
		bearerFrom(t, header)
	})
}

// TestAuthenticator_Middleware serves through arrow-go's own server
// wrapper, flight.NewServerWithMiddleware, to show the two fit together.
func TestAuthenticator_Middleware(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	srv := flight.NewServerWithMiddleware([]flight.ServerMiddleware{a.Middleware()})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.InitListener(lis)
	srv.RegisterFlightService(a.WrapFlightServer(&whoamiServer{}))
	go srv.Serve()
	t.Cleanup(srv.Shutdown)

	c := dial(t, lis.Addr().String())
	if _, _, err := calls["unary"](testContext(t), c); err == nil {
		t.Fatal("call without credentials: got nil error, want Unauthenticated")
	}
	ctx, err := c.AuthenticateBasicToken(testContext(t), "bob", "bob-pw")
	if err != nil {
		t.Fatalf("AuthenticateBasicToken: %v", err)
	}
	for name, do := range calls {
		got, _, err := do(ctx, c)
		if want := "bob/readwrite"; err != nil || got != want {
			t.Errorf("%s whoami = %q, %v; want %q, nil", name, got, err, want)
		}
	}
}
