package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// call makes one unary or streaming whoami call with md and returns the
// answer and the response header.
type call func(ctx context.Context, c flight.Client) (string, metadata.MD, error)

var calls = map[string]call{
	"unary": func(ctx context.Context, c flight.Client) (string, metadata.MD, error) {
		var header metadata.MD
		info, err := c.GetFlightInfo(ctx, &flight.FlightDescriptor{}, grpc.Header(&header))
		if err != nil {
			return "", header, err
		}
		return string(info.GetFlightDescriptor().GetCmd()), header, nil
	},
	"stream": func(ctx context.Context, c flight.Client) (string, metadata.MD, error) {
		s, err := c.ListFlights(ctx, &flight.Criteria{})
		if err != nil {
			return "", nil, err
		}
		info, err := s.Recv()
		header, _ := s.Header()
		if err != nil {
			return "", header, err
		}
		return string(info.GetFlightDescriptor().GetCmd()), header, nil
	},
}

// bearerFrom returns the token in a response header's authorization value.
func bearerFrom(t *testing.T, header metadata.MD) string {
	t.Helper()
	vals := header.Get("authorization")
	if len(vals) != 1 || !strings.HasPrefix(vals[0], "Bearer ") {
		t.Fatalf("response header authorization = %q, want one \"Bearer <token>\"", vals)
	}
	return strings.TrimPrefix(vals[0], "Bearer ")
}

func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Fatalf("got error %v, want code %v with message containing %q", err, code, msg)
	}
}

func TestAuthenticator_Interceptors(t *testing.T) {
	a, users, tokens := newTestAuthenticator(t)
	addr := startServer(t, a)
	c := dial(t, addr)

	issue := func(tok *Tokens, u User) string {
		s, _, err := tok.Issue(u)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	past := newTestTokens(t, testKey, users, WithTTL(time.Hour), WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }))
	if err := users.Add("gone", "gone-pw", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	goneToken := issue(tokens, User{Name: "gone", Role: RoleAdmin})
	users.Remove("gone")
	bobToken := issue(tokens, User{Name: "bob", Role: RoleReadWrite})

	tests := []struct {
		name      string
		md        []string // key, value pairs
		want      string   // whoami answer
		wantToken bool     // a Bearer header on the response
		wantCode  codes.Code
		wantMsg   string
	}{
		{name: "basic", md: []string{"authorization", basicValue("alice", "alice-pw")}, want: "alice/admin", wantToken: true},
		{name: "basic readonly", md: []string{"authorization", basicValue("carol", "carol-pw")}, want: "carol/readonly", wantToken: true},
		{name: "bearer", md: []string{"authorization", "Bearer " + bobToken}, want: "bob/readwrite"},
		{name: "auth-token-bin", md: []string{"auth-token-bin", bobToken}, want: "bob/readwrite"},
		{name: "no credentials", wantCode: codes.Unauthenticated,
			wantMsg: "authentication required: send Basic or Bearer credentials"},
		{name: "wrong password", md: []string{"authorization", basicValue("alice", "nope")}, wantCode: codes.Unauthenticated,
			wantMsg: `authentication failed for user "alice"`},
		{name: "unknown user", md: []string{"authorization", basicValue("mallory", "alice-pw")}, wantCode: codes.Unauthenticated,
			wantMsg: `authentication failed for user "mallory"`},
		{name: "expired token", md: []string{"authorization", "Bearer " + issue(past, User{Name: "bob", Role: RoleReadWrite})},
			wantCode: codes.Unauthenticated, wantMsg: "token expired: authenticate again"},
		{name: "tampered token", md: []string{"authorization", "Bearer " + bobToken[:len(bobToken)-4] + "AAAA"},
			wantCode: codes.Unauthenticated, wantMsg: "invalid token: authenticate again"},
		{name: "removed user's token", md: []string{"authorization", "Bearer " + goneToken},
			wantCode: codes.Unauthenticated, wantMsg: "invalid token"},
		{name: "malformed", md: []string{"authorization", "Digest abc"}, wantCode: codes.Unauthenticated,
			wantMsg: "malformed authorization header"},
	}
	for callName, do := range calls {
		for _, tt := range tests {
			t.Run(callName+"/"+tt.name, func(t *testing.T) {
				ctx := metadata.AppendToOutgoingContext(testContext(t), tt.md...)
				got, header, err := do(ctx, c)
				if tt.wantCode != codes.OK {
					wantStatus(t, err, tt.wantCode, tt.wantMsg)
					if vals := header.Get("authorization"); len(vals) != 0 {
						t.Errorf("rejected call's response header authorization = %q, want none", vals)
					}
					return
				}
				if err != nil {
					t.Fatalf("got error %v, want nil", err)
				}
				if got != tt.want {
					t.Errorf("whoami = %q, want %q", got, tt.want)
				}
				if !tt.wantToken {
					if vals := header.Get("authorization"); len(vals) != 0 {
						t.Errorf("response header authorization = %q, want none", vals)
					}
					return
				}
				// The token from the header works on its own.
				token := bearerFrom(t, header)
				ctx = metadata.AppendToOutgoingContext(testContext(t), "authorization", "Bearer "+token)
				again, _, err := do(ctx, c)
				if err != nil || again != tt.want {
					t.Errorf("call with the issued token = %q, %v; want %q, nil", again, err, tt.want)
				}
			})
		}
	}
}

func TestAuthenticator_Health(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	addr := startServer(t, a)
	conn := dialConn(t, addr)
	resp, err := healthpb.NewHealthClient(conn).Check(testContext(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("health check without credentials: %v", err)
	}
	if got, want := resp.GetStatus(), healthpb.HealthCheckResponse_SERVING; got != want {
		t.Errorf("health status = %v, want %v", got, want)
	}
}

func TestAuthenticator_Disabled(t *testing.T) {
	for name, users := range map[string]*Store{"nil store": nil, "empty store": NewStore()} {
		t.Run(name, func(t *testing.T) {
			a, err := NewAuthenticator(users, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.Enabled() {
				t.Fatal("Enabled() = true, want false")
			}
			c := dial(t, startServer(t, a))
			for callName, do := range calls {
				t.Run(callName, func(t *testing.T) {
					got, header, err := do(testContext(t), c)
					if want := AnonymousName + "/admin"; err != nil || got != want {
						t.Errorf("whoami without credentials = %q, %v; want %q, nil", got, err, want)
					}
					if vals := header.Get("authorization"); len(vals) != 0 {
						t.Errorf("response header authorization = %q, want none", vals)
					}

					// A client that logs in anyway still gets a token back.
					ctx := metadata.AppendToOutgoingContext(testContext(t), "authorization", basicValue("x", "y"))
					got, header, err = do(ctx, c)
					if want := AnonymousName + "/admin"; err != nil || got != want {
						t.Errorf("whoami with Basic = %q, %v; want %q, nil", got, err, want)
					}
					bearerFrom(t, header)
				})
			}
		})
	}
}

func TestNewAuthenticator(t *testing.T) {
	users := newTestStore(t)
	if _, err := NewAuthenticator(users, nil); err == nil {
		t.Error("NewAuthenticator(users, nil tokens): got nil error, want one")
	}
	a, err := NewAuthenticator(users, newTestTokens(t, testKey, users))
	if err != nil {
		t.Fatal(err)
	}
	if !a.Enabled() {
		t.Error("Enabled() = false, want true")
	}
}

func TestAuthenticator_Reject(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	ctx := context.Background()
	err := a.reject(ctx, "/m", callCreds{}, errors.New("disk on fire"))
	wantStatus(t, err, codes.Internal, "authenticate: disk on fire")
}
