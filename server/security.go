package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	duckdb "github.com/duckdb/duckdb-go-bindings"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/flightsql"
)

// Security is who may connect and how.
type Security struct {
	// Users are the users given on the command line (--user). Their
	// passwords are visible in the process list; UsersFile is the way to
	// run a real server.
	Users []UserSpec
	// UsersFile is a users file (auth.ReadUsersFile: Argon2id hashes, mode
	// 0600) to load the users from instead, and to keep in step with:
	// Server.ReloadUsers reads it again, and admins change it through the
	// quiver.user Flight action. It must hold at least one user.
	UsersFile string
	// AuditLog records logins, failed logins, user changes, DDL and
	// statements refused for their role. Nil: the server's logger with
	// the attribute audit=true.
	AuditLog *slog.Logger
	// TLSCert and TLSKey enable TLS on every port: Flight, MySQL (see
	// MySQLAllowPlaintext) and HTTP, which then serves HTTPS only.
	// TLSClientCA additionally requires client certificates signed by it
	// on the Flight port (mTLS); the MySQL and HTTP ports, whose clients
	// log in with a password, check a client certificate only when one is
	// given.
	TLSCert, TLSKey, TLSClientCA string
	// MySQLAllowPlaintext lets MySQL clients log in without TLS on a
	// server with TLS (--mysql-require-tls=false); by default they must
	// switch to it.
	MySQLAllowPlaintext bool
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
	file   *auth.UsersFile // nil unless the users come from a file
	audit  *slog.Logger
	tokens *auth.Tokens
	// ticketKey signs statement tickets and prepared statements' handles;
	// it is derived from the token key, so replicas sharing that key run
	// each other's tickets.
	ticketKey []byte
	// keyFile is the file the token key is kept in; empty when it was
	// given on the command line or made for this run.
	keyFile string
	authn   *auth.Authenticator
	tls     *tls.Config
	// export is the export root; nil without --export-root.
	export *exportRoot
	unary  []grpc.UnaryServerInterceptor
	stream []grpc.StreamServerInterceptor
}

func (s *Server) setupSecurity(cfg Config) (*security, error) {
	audit := cfg.Security.AuditLog
	if audit == nil {
		audit = s.log.With(logKeyAudit, true)
	}
	guard, err := auth.NewGuard(auth.WithAuditLog(audit))
	if err != nil {
		return nil, err
	}
	sec := &security{users: auth.NewStore(auth.WithGuard(guard)), audit: audit}
	if cfg.Security.UsersFile != "" {
		if len(cfg.Security.Users) > 0 {
			return nil, fmt.Errorf("give --users-file or --user, not both")
		}
		if sec.file, err = auth.LoadUsersFile(cfg.Security.UsersFile, sec.users, audit); err != nil {
			return nil, err
		}
		for _, u := range sec.users.Users() {
			s.log.Info("user configured", "user", u.Name, "role", u.Role.String(), "file", cfg.Security.UsersFile)
		}
	}
	for _, u := range cfg.Security.Users {
		if err := sec.users.Add(u.Name, u.Password, u.Role); err != nil {
			return nil, fmt.Errorf("add user %s: %w", u.Name, err)
		}
		s.log.Info("user configured", "user", u.Name, "role", u.Role.String())
	}
	if sec.users.Len() == 0 {
		for _, addr := range []string{cfg.FlightAddr, cfg.MySQLAddr, cfg.HTTPAddr, cfg.MetricsAddr} {
			if addr == "" {
				continue
			}
			if err := auth.RequireLoopback(addr); err != nil {
				return nil, err
			}
		}
	}
	key, keyFile, err := tokenKey(cfg)
	if err != nil {
		return nil, err
	}
	sec.ticketKey = auth.DeriveKey(key, TicketKeyPurpose)
	sec.keyFile = keyFile
	// Logouts are kept next to the key, so replicas given the same key
	// file refuse each other's logged-out tokens.
	revoked, err := auth.OpenRevocations(auth.RevocationsFileFor(keyFile))
	if err != nil {
		return nil, err
	}
	topts := []auth.TokenOption{auth.WithRevocations(revoked)}
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

// tokenKey returns the token signing key and the file it is kept in, if
// any.
func tokenKey(cfg Config) (key []byte, file string, err error) {
	switch {
	case cfg.Security.TokenKey != "" && cfg.Security.TokenKeyFile != "":
		return nil, "", fmt.Errorf("give --token-key or --token-key-file, not both")
	case cfg.Security.TokenKey != "":
		key, err = auth.ParseKey(cfg.Security.TokenKey)
		return key, "", err
	case cfg.Security.TokenKeyFile != "":
		file = cfg.Security.TokenKeyFile
	case cfg.DB == "" || cfg.DB == ":memory:":
		key, err = auth.NewKey()
		return key, "", err
	default:
		file = auth.KeyFileFor(cfg.DB)
	}
	key, err = auth.LoadOrCreateKey(file)
	return key, file, err
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

// TicketKeyPurpose is what the Flight SQL ticket key is derived for from
// the token key (auth.DeriveKey): a program that signs tickets for a
// quiver server, as tests do, derives it the same way.
const TicketKeyPurpose = "flightsql tickets"

// logKeyAudit marks the audit log's records.
const logKeyAudit = "audit"

// authorize refuses a statement the caller's role does not permit. A call
// without a user is refused: the authentication interceptor puts one on
// every call (the anonymous admin when no users are configured). DDL,
// statements that need the admin role, and refusals are audited.
func (sec *security) authorize(ctx context.Context, st *engine.Stmt) error {
	u, ok := auth.UserFromContext(ctx)
	if !ok {
		return status.Error(codes.Unauthenticated, "no authenticated user on this call")
	}
	if err := sec.authorizeStmt(ctx, u, st, "flight"); err != nil {
		var ee *exportError
		if errors.As(err, &ee) {
			return status.Error(ee.code, ee.msg)
		}
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return nil
}

// authorizeUser is authorize for a known user, on either endpoint.
func (sec *security) authorizeUser(u auth.User, st *engine.Stmt, endpoint string) error {
	return sec.authorizeStmt(context.Background(), u, st, endpoint)
}

// authorizeStmt is authorizeUser with a context for what the check runs:
// a COPY goes to authorizeCopy first, which checks exports and rewrites
// them, and an EXPLAIN to authorizeExplain, which refuses one that would
// run a COPY past those checks.
func (sec *security) authorizeStmt(ctx context.Context, u auth.User, st *engine.Stmt, endpoint string) error {
	switch st.Type() {
	case duckdb.StatementTypeCopy:
		if handled, err := sec.authorizeCopy(ctx, u, st, endpoint); handled {
			return err
		}
	case duckdb.StatementTypeExplain:
		if err := sec.authorizeExplain(u, st, endpoint); err != nil {
			return err
		}
	}
	if err := st.Authorize(ctx, u); err != nil {
		need, function := "none", ""
		var denied *auth.DeniedError
		if errors.As(err, &denied) {
			need, function = denied.Need.String(), denied.Function
		}
		attrs := []any{"user", u.Name, "role", u.Role.String(), "statement", st.Kind(), "need", need, "endpoint", endpoint}
		if function != "" {
			attrs = append(attrs, "function", function)
		}
		sec.audit.Warn("statement refused", append(attrs, "err", err.Error())...)
		return err
	}
	if audited(st) {
		sec.audit.Info("statement", "user", u.Name, "statement", st.Kind(), "need", st.Access().String(), "endpoint", endpoint)
	}
	return nil
}

// audited reports whether a statement goes to the audit log: DDL, and
// whatever needs the admin role (settings, files, extensions).
func audited(st *engine.Stmt) bool {
	switch st.Type() {
	case duckdb.StatementTypeCreate, duckdb.StatementTypeCreateFunc, duckdb.StatementTypeDrop, duckdb.StatementTypeAlter:
		return true
	}
	return st.Access() == auth.AccessAdmin
}

// actions are the server's own Flight actions: quiver.user, by which an
// admin manages the users of a server that has a users file.
func (sec *security) actions() map[string]flightsql.Action {
	do := func(ctx context.Context, body []byte) ([]byte, error) {
		if sec.file == nil {
			return nil, status.Error(codes.FailedPrecondition, "this server's users come from --user flags, not a users file; start it with --users-file to manage users while it runs")
		}
		return sec.file.HandleAction(ctx, body)
	}
	return map[string]flightsql.Action{auth.UserActionType: {
		Description: "manage users (admin only): a JSON {op: add|passwd|del|role|list, name, password, role}",
		Do:          do,
	}}
}

func listen(addr string, _ *security) (net.Listener, error) {
	return net.Listen("tcp", addr)
}
