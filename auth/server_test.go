package auth

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// whoamiServer is a Flight server whose calls answer with the caller:
// "name/role", or "none" when the context holds no user.
type whoamiServer struct {
	flight.BaseFlightServer
}

func whoami(ctx context.Context) string {
	u, ok := UserFromContext(ctx)
	if !ok {
		return "none"
	}
	return u.Name + "/" + u.Role.String()
}

func whoamiInfo(ctx context.Context) *flight.FlightInfo {
	return &flight.FlightInfo{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(whoami(ctx))}}
}

// GetFlightInfo is the unary call under test.
func (whoamiServer) GetFlightInfo(ctx context.Context, _ *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return whoamiInfo(ctx), nil
}

// ListFlights is the streaming call under test.
func (whoamiServer) ListFlights(_ *flight.Criteria, s flight.FlightService_ListFlightsServer) error {
	return s.Send(whoamiInfo(s.Context()))
}

// startServer serves a whoami Flight service and the gRPC health service
// behind a's interceptors on 127.0.0.1:0 and returns its address.
func startServer(t *testing.T, a *Authenticator, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(append(a.ServerOptions(), opts...)...)
	flight.RegisterFlightServiceServer(s, a.WrapFlightServer(&whoamiServer{}))
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// dial returns a Flight client for addr that t closes.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) flight.Client {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	c, err := flight.NewClientWithMiddleware(addr, nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newTestAuthenticator returns an Authenticator over newTestStore's users
// and its Tokens.
func newTestAuthenticator(t *testing.T) (*Authenticator, *Store, *Tokens) {
	t.Helper()
	users := newTestStore(t)
	tokens := newTestTokens(t, testKey, users)
	a, err := NewAuthenticator(users, tokens)
	if err != nil {
		t.Fatal(err)
	}
	return a, users, tokens
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dialConn returns a plain gRPC connection to addr that t closes.
func dialConn(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
