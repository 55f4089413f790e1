package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// Security is who may connect and how.
type Security struct {
	Users []UserSpec
	// TLSCert and TLSKey enable TLS on the Flight port; TLSClientCA
	// additionally requires client certificates signed by it (mTLS).
	TLSCert, TLSKey, TLSClientCA string
	// TokenKey is the hex bearer-token signing key. Empty: a key file next
	// to the database, created on first start, so tokens survive restarts.
	TokenKey string
	// TokenKeyFile is a file holding the key as hex, created with a new
	// key when missing: replicas given the same file accept each other's
	// tokens, and the key stays out of the process list.
	TokenKeyFile string
	TokenTTL     time.Duration
}

// UserSpec is one configured user.
type UserSpec struct {
	Name, Password string
	Role           auth.Role
}

type security struct {
	users  *auth.Store
	tokens *auth.Tokens
	authn  *auth.Authenticator
	tls    *tls.Config
	unary  []grpc.UnaryServerInterceptor
	stream []grpc.StreamServerInterceptor
}

func (s *Server) setupSecurity(cfg Config) (*security, error) {
	sec := &security{users: auth.NewStore()}
	for _, u := range cfg.Security.Users {
		if err := sec.users.Add(u.Name, u.Password, u.Role); err != nil {
			return nil, fmt.Errorf("add user %s: %w", u.Name, err)
		}
		s.log.Info("user configured", "user", u.Name, "role", u.Role.String())
	}
	if sec.users.Len() == 0 {
		for _, addr := range []string{cfg.FlightAddr, cfg.MySQLAddr, cfg.HTTPAddr} {
			if addr == "" {
				continue
			}
			if err := auth.RequireLoopback(addr); err != nil {
				return nil, err
			}
		}
	}
	key, err := tokenKey(cfg)
	if err != nil {
		return nil, err
	}
	var topts []auth.TokenOption
	if cfg.Security.TokenTTL > 0 {
		topts = append(topts, auth.WithTTL(cfg.Security.TokenTTL))
	}
	if sec.tokens, err = auth.NewTokens(key, sec.users, topts...); err != nil {
		return nil, fmt.Errorf("set up tokens: %w", err)
	}
	if sec.authn, err = auth.NewAuthenticator(sec.users, sec.tokens, auth.WithLogger(s.log)); err != nil {
		return nil, fmt.Errorf("set up authentication: %w", err)
	}
	sec.unary = []grpc.UnaryServerInterceptor{sec.authn.UnaryInterceptor()}
	sec.stream = []grpc.StreamServerInterceptor{sec.authn.StreamInterceptor()}
	if cfg.Security.TLSCert != "" || cfg.Security.TLSKey != "" {
		if sec.tls, err = auth.ServerTLSConfig(cfg.Security.TLSCert, cfg.Security.TLSKey, cfg.Security.TLSClientCA); err != nil {
			return nil, err
		}
	} else if cfg.Security.TLSClientCA != "" {
		return nil, fmt.Errorf("--tls-client-ca needs --tls-cert and --tls-key")
	}
	return sec, nil
}

func tokenKey(cfg Config) ([]byte, error) {
	switch {
	case cfg.Security.TokenKey != "" && cfg.Security.TokenKeyFile != "":
		return nil, fmt.Errorf("give --token-key or --token-key-file, not both")
	case cfg.Security.TokenKey != "":
		return auth.ParseKey(cfg.Security.TokenKey)
	case cfg.Security.TokenKeyFile != "":
		return auth.LoadOrCreateKey(cfg.Security.TokenKeyFile)
	case cfg.DB == "" || cfg.DB == ":memory:":
		return auth.NewKey()
	}
	return auth.LoadOrCreateKey(auth.KeyFileFor(cfg.DB))
}

func (sec *security) grpcOptions() []grpc.ServerOption {
	if sec.tls == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(sec.tls))}
}

// wrap installs the Handshake that answers Basic credentials with a token.
func (sec *security) wrap(srv flight.FlightServer) flight.FlightServer {
	return sec.authn.WrapFlightServer(srv)
}

// authorize refuses a statement the caller's role does not permit. A call
// without a user is refused: the authentication interceptor puts one on
// every call (the anonymous admin when no users are configured).
func (sec *security) authorize(ctx context.Context, st *engine.Stmt) error {
	u, ok := auth.UserFromContext(ctx)
	if !ok {
		return status.Error(codes.Unauthenticated, "no authenticated user on this call")
	}
	if err := st.Authorize(u); err != nil {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return nil
}

func listen(addr string, _ *security) (net.Listener, error) {
	return net.Listen("tcp", addr)
}
