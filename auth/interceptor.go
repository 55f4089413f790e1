package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

const (
	// healthPrefix is the gRPC health service, which load balancers and
	// orchestrators call without credentials.
	healthPrefix = "/grpc.health.v1.Health/"
	// handshakeMethod is Flight's Handshake, which may carry credentials
	// in its payload instead of its metadata.
	handshakeMethod = "/arrow.flight.protocol.FlightService/Handshake"
	// anonymousToken is the bearer token handed to clients that send Basic
	// credentials while authentication is disabled. It is never checked.
	anonymousToken = "anonymous"
)

// Messages clients see. They say what to do next.
const (
	msgAuthRequired = "authentication required: send Basic or Bearer credentials"
	msgTokenExpired = "token expired: authenticate again"
	msgBadToken     = "invalid token: authenticate again"
)

// Log attribute keys.
const (
	logKeyUser   = "user"
	logKeyMethod = "method"
	logKeyPeer   = "peer"
	logKeyErr    = "err"
)

// Authenticator authenticates gRPC calls: it verifies Basic credentials
// against a Store and answers them with a bearer token, verifies bearer
// tokens, and puts the caller's User in the call's context. It is safe for
// concurrent use.
//
// With no users configured it runs disabled: every call gets an anonymous
// RoleAdmin user. A server must then listen only on loopback (see
// RequireLoopback).
type Authenticator struct {
	users    *Store
	tokens   *Tokens
	log      *slog.Logger
	disabled bool

	handshakeTimeout time.Duration
}

// Option configures an Authenticator.
type Option func(*config)

type config struct {
	logger *slog.Logger
}

// WithLogger sets the logger for logins and rejected calls. The default
// discards them.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// NewAuthenticator returns an Authenticator over users and tokens. If users
// is nil or empty when it is called, authentication is disabled for the
// Authenticator's life (add users first) and tokens may be nil.
func NewAuthenticator(users *Store, tokens *Tokens, opts ...Option) (*Authenticator, error) {
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	a := &Authenticator{users: users, tokens: tokens, log: cfg.logger, handshakeTimeout: handshakeTimeout}
	if users == nil || users.Len() == 0 {
		a.disabled = true
		a.log.Warn("authentication disabled: no users configured; every call runs as an admin")
		return a, nil
	}
	if tokens == nil {
		return nil, errors.New("new authenticator: users configured but no token issuer")
	}
	return a, nil
}

// Enabled reports whether calls must authenticate.
func (a *Authenticator) Enabled() bool { return !a.disabled }

// ServerOptions returns the gRPC server options that install the
// interceptors. Pass them to grpc.NewServer, or use Middleware with
// flight.NewServerWithMiddleware.
func (a *Authenticator) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(a.UnaryInterceptor()),
		grpc.ChainStreamInterceptor(a.StreamInterceptor()),
	}
}

// Middleware returns the interceptors as arrow-go Flight server middleware,
// for flight.NewServerWithMiddleware.
func (a *Authenticator) Middleware() flight.ServerMiddleware {
	return flight.ServerMiddleware{Unary: a.UnaryInterceptor(), Stream: a.StreamInterceptor()}
}

// UnaryInterceptor returns the interceptor that authenticates unary calls.
func (a *Authenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, header, err := a.authenticate(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		if header != nil {
			if err := grpc.SetHeader(ctx, header); err != nil {
				a.log.Warn("set authorization header", logKeyMethod, info.FullMethod, logKeyErr, err)
			}
		}
		return handler(ctx, req)
	}
}

// StreamInterceptor returns the interceptor that authenticates streaming
// calls, Handshake included.
func (a *Authenticator) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, header, err := a.authenticate(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		if header != nil {
			if err := ss.SetHeader(header); err != nil {
				a.log.Warn("set authorization header", logKeyMethod, info.FullMethod, logKeyErr, err)
			}
		}
		return handler(srv, &userStream{ServerStream: ss, ctx: ctx})
	}
}

// userStream is a ServerStream whose context carries the caller.
type userStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *userStream) Context() context.Context { return s.ctx }

// authenticate checks a call's credentials. It returns the context for the
// handler and, after a Basic login, the response header with the token.
func (a *Authenticator) authenticate(ctx context.Context, method string) (context.Context, metadata.MD, error) {
	if strings.HasPrefix(method, healthPrefix) {
		return ctx, nil, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	cred, err := credentialsFromMetadata(md)
	if a.disabled {
		var header metadata.MD
		if err == nil && cred.kind == credBasic {
			// Clients that log in expect a token back; any will do.
			header = bearerHeader(anonymousToken)
		}
		return ContextWithUser(ctx, User{Name: AnonymousName, Role: RoleAdmin}), header, nil
	}
	if err != nil {
		return nil, nil, a.reject(ctx, method, cred, err)
	}

	switch cred.kind {
	case credBasic:
		u, err := a.verify(ctx, cred)
		if err != nil {
			return nil, nil, a.reject(ctx, method, cred, err)
		}
		token, err := a.login(ctx, method, u)
		if err != nil {
			return nil, nil, err
		}
		return ContextWithUser(ctx, u), bearerHeader(token), nil
	case credBearer:
		u, err := a.tokens.Verify(cred.token)
		if err != nil {
			return nil, nil, a.reject(ctx, method, cred, err)
		}
		return ContextWithUser(ctx, u), nil, nil
	}
	if method == handshakeMethod {
		// Credentials may come in the Handshake payload; Handshake checks.
		return ctx, nil, nil
	}
	return nil, nil, a.reject(ctx, method, cred, nil)
}

// guardProto names Flight logins to the Store's Guard.
const guardProto = "flight"

// verify checks Basic credentials against the Store (Store.Login).
func (a *Authenticator) verify(ctx context.Context, cred callCreds) (User, error) {
	return a.users.Login(guardProto, cred.user, cred.password, peerAddr(ctx))
}

// login issues a token for a user who has just proved their password.
func (a *Authenticator) login(ctx context.Context, method string, u User) (string, error) {
	token, _, err := a.tokens.Issue(u)
	if err != nil {
		a.log.Error("issue token", logKeyUser, u.Name, logKeyErr, err)
		return "", status.Errorf(codes.Internal, "issue token for user %q: %v", u.Name, err)
	}
	a.log.Info("user logged in", logKeyUser, u.Name, logKeyMethod, method, logKeyPeer, peerAddr(ctx))
	return token, nil
}

// reject logs a failed authentication and returns the status the client
// sees. It is the one place that maps authentication errors to gRPC codes.
func (a *Authenticator) reject(ctx context.Context, method string, cred callCreds, err error) error {
	attrs := []any{logKeyMethod, method, logKeyPeer, peerAddr(ctx)}
	if cred.kind == credBasic {
		attrs = append(attrs, logKeyUser, cred.user)
	}
	if err != nil {
		attrs = append(attrs, logKeyErr, err)
	}

	switch {
	case err == nil:
		a.log.Debug("call without credentials", attrs...)
		return status.Error(codes.Unauthenticated, msgAuthRequired)
	case errors.Is(err, errMalformed):
		a.log.Warn("malformed credentials", attrs...)
		return status.Errorf(codes.Unauthenticated, "%v: send Basic or Bearer credentials", err)
	case errors.Is(err, ErrUnknownUser), errors.Is(err, ErrBadPassword):
		a.log.Warn("authentication failed", attrs...)
		return status.Errorf(codes.Unauthenticated, "authentication failed for user %q", cred.user)
	case errors.Is(err, ErrRateLimited):
		a.log.Warn("login refused", attrs...)
		var le *LimitedError
		wait := time.Second
		if errors.As(err, &le) {
			wait = max(le.Wait.Round(time.Second), time.Second)
		}
		return status.Errorf(codes.ResourceExhausted, "too many failed logins for user %q or from this address: try again in %v", cred.user, wait)
	case errors.Is(err, ErrTokenExpired):
		a.log.Info("token expired", attrs...)
		return status.Error(codes.Unauthenticated, msgTokenExpired)
	case errors.Is(err, ErrBadToken):
		a.log.Warn("invalid token", attrs...)
		return status.Error(codes.Unauthenticated, msgBadToken)
	}
	a.log.Error("authenticate", attrs...)
	return status.Error(codes.Internal, fmt.Sprintf("authenticate: %v", err))
}

func bearerHeader(token string) metadata.MD {
	return metadata.Pairs(authorizationKey, bearerScheme+" "+token)
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}
