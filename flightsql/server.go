// Package flightsql is quiver's Arrow Flight SQL service over the engine:
// statements, prepared statements, metadata, bulk ingest, transactions and
// sessions. It owns its DoGet path so results stream from DuckDB with
// bounded memory and the IPC options quiver chooses.
package flightsql

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ipcx"
	"github.com/quiverdata/quiver/mempool"
)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// ServerOptions are extra gRPC server options (TLS credentials, auth
	// interceptors). They are applied after quiver's own sizing options.
	ServerOptions []grpc.ServerOption
	// UnaryInterceptors and StreamInterceptors run before the session
	// middleware, in order (auth goes here), after the server's panic
	// recovery: a panic in one fails only its call.
	UnaryInterceptors  []grpc.UnaryServerInterceptor
	StreamInterceptors []grpc.StreamServerInterceptor
	// IdleTimeout closes prepared statements and held results unused for
	// this long, and connections that make no call. Zero means 30
	// minutes.
	IdleTimeout time.Duration
	// TxnIdleTimeout rolls back a transaction that makes no call for this
	// long; its handle is then refused with FailedPrecondition, saying
	// so. A call of the transaction running, or its result streaming,
	// keeps it, and a result held for its fetch counts as idle. An open
	// transaction that wrote holds back every force checkpoint, so it is
	// kept short. Zero means 60 seconds.
	TxnIdleTimeout time.Duration
	// WrapService, when set, wraps the Flight service before it is
	// registered (auth installs its Handshake here).
	WrapService func(flight.FlightServer) flight.FlightServer
	// Compression is the result compression used when a client asks for
	// none: "none" (the default), "lz4", "zstd" or "auto".
	Compression string
	// Authorize, when set, is asked before a statement runs; it returns a
	// PermissionDenied status error to refuse it.
	Authorize func(ctx context.Context, stmt *engine.Stmt) error
	// Planner, when set, may split a read query's result into several
	// endpoints, each a part that any replica can fetch. Nil: every query
	// has one endpoint. Replicas must configure the same planners.
	Planner Planner
	// Locations are the URIs clients reach the replicas at, this one's
	// first, then its peers' (grpc+tcp://10.0.0.2:31337, grpc+tls://…).
	// Endpoint i of a split result lists them all, rotated by i, so that
	// clients spread the parts over the replicas. A result of one
	// endpoint, and a ticket only this server can run (a transaction's, a
	// held statement's), lists none: the client fetches it over the
	// connection it has. Empty: no endpoint lists a location.
	Locations []string
	// TicketKey signs the statement tickets and prepared statements'
	// handles the server gives out (HMAC-SHA256), each for the user it is
	// given to: a ticket that does not verify, or that another user
	// presents, is refused with PermissionDenied before any of its SQL
	// runs. Replicas given the same key run each other's tickets. It must
	// be at least auth.KeyLen bytes and sign nothing else (derive it with
	// auth.DeriveKey). Nil: a random key, so that tickets run only on this
	// server and only until it stops.
	TicketKey []byte
	// Admission, when set, decides when each statement runs (package
	// admit); Classifier picks its lane. Nil: every statement runs at once.
	Admission  *admit.Controller
	Classifier *admit.Classifier
	// Holds, when set, bounds what each connection and user keeps
	// between calls: prepared statements and their parameters,
	// transactions, held results. A connection's prepared statements and
	// held results go when it closes. Nil: no bounds.
	Holds *admit.Holds
	// QueryTimeout bounds every statement, waiting for its turn included;
	// a session's query_timeout option may lower it, never raise it.
	// Zero: no bound.
	QueryTimeout time.Duration
	// Actions are extra DoAction types the server answers, each with the
	// caller in its context (quiver.user is one). They are listed by
	// ListActions after Flight SQL's own.
	Actions map[string]Action
}

// Action is one DoAction type of the server's own.
type Action struct {
	// Description is what ListActions says of it.
	Description string
	// Do gets the action's body and returns the body of its one result,
	// or a gRPC status error. The caller is in ctx (auth.UserFromContext).
	Do func(ctx context.Context, body []byte) ([]byte, error)
}

// MaxMessageSize is the gRPC message limit on both directions. Result
// batches of 64K rows of wide rows exceed gRPC's 4 MB default.
const MaxMessageSize = ipcx.MaxMessageSize

// GRPCServerOptions are the gRPC settings for bulk Arrow data: large
// message limits, wide flow-control windows, big socket buffers, keepalive,
// and the codec that sends IPC bodies without copying them.
func GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.InitialWindowSize(ipcx.StreamWindow),
		grpc.InitialConnWindowSize(ipcx.ConnWindow),
		grpc.ReadBufferSize(ipcx.ReadBufferSize),
		grpc.WriteBufferSize(ipcx.ServerWriteBufferSize),
		// Each connection borrows its write buffer from a pool for a
		// flush, rather than keeping its own: a thousand idle clients
		// would otherwise hold a gigabyte of them.
		grpc.SharedWriteBuffer(true),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ForceServerCodecV2(ipcx.ServerCodec()),
		experimental.BufferPool(&mempool.GRPC{}),
	}
}

// Server is the Flight SQL service. Create it with New, then Serve.
type Server struct {
	flightsql.BaseServer
	db   *engine.DB
	log  *slog.Logger
	mem  memory.Allocator
	opts Options
	sign signer

	inner  flight.FlightServer // arrow-go's router, for the calls quiver does not own
	grpc   *grpc.Server
	health *health.Server

	mu       sync.Mutex
	txns     map[string]*txn
	ended    map[string]endedTxn // rolled back by the server, by id
	prepared map[string]*prepared
	held     map[string]*heldQuery
	running  map[string]context.CancelFunc
	// opened are prepared statements' handles already opened, by their
	// bytes and the caller they were opened for (handle.go).
	opened map[openedKey]preparedHandle

	stop chan struct{}
	wg   sync.WaitGroup
}

// New builds the service over db.
func New(db *engine.DB, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 30 * time.Minute
	}
	if opts.TxnIdleTimeout <= 0 {
		opts.TxnIdleTimeout = DefaultTxnIdleTimeout
	}
	if err := checkLocations(opts.Locations); err != nil {
		return nil, err
	}
	key := opts.TicketKey
	switch {
	case key == nil:
		var err error
		if key, err = auth.NewKey(); err != nil {
			return nil, fmt.Errorf("new flight sql server: %w", err)
		}
	case len(key) < auth.KeyLen:
		return nil, fmt.Errorf("new flight sql server: ticket key is %d bytes, want at least %d", len(key), auth.KeyLen)
	}
	s := &Server{
		sign:     signer{key: bytes.Clone(key)},
		db:       db,
		log:      opts.Logger.With("component", "flightsql"),
		mem:      db.Allocator(),
		opts:     opts,
		txns:     map[string]*txn{},
		ended:    map[string]endedTxn{},
		prepared: map[string]*prepared{},
		held:     map[string]*heldQuery{},
		running:  map[string]context.CancelFunc{},
		stop:     make(chan struct{}),
	}
	if err := registerSQLInfo(s); err != nil {
		return nil, fmt.Errorf("register sql info: %w", err)
	}
	s.inner = flightsql.NewFlightServerWithAllocator(s, s.mem)

	sessions := flight.CreateServerMiddleware(session.NewServerSessionMiddleware(session.NewStatelessServerSessionManager()))
	// Panics are recovered first of all (recover.go), so that one in
	// authentication or the middleware fails only its call too.
	unary := append(append([]grpc.UnaryServerInterceptor{s.recoverUnary}, opts.UnaryInterceptors...), sessions.Unary, metricsUnary)
	stream := append(append([]grpc.StreamServerInterceptor{s.recoverStream}, opts.StreamInterceptors...), sessions.Stream, metricsStream)
	gopts := append(GRPCServerOptions(),
		// A connection that makes no call for the idle timeout is closed
		// (GOAWAY; clients reconnect when they need to).
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 20 * time.Second, MaxConnectionIdle: opts.IdleTimeout}),
		grpc.StatsHandler(connTracker{holds: opts.Holds}),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...))
	gopts = append(gopts, opts.ServerOptions...)
	s.grpc = grpc.NewServer(gopts...)
	var svc flight.FlightServer = &service{FlightServer: s.inner, s: s}
	if opts.WrapService != nil {
		svc = opts.WrapService(svc)
	}
	flight.RegisterFlightServiceServer(s.grpc, svc)
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)

	s.wg.Add(1)
	go s.reapIdle()
	return s, nil
}

// Serve accepts Flight SQL connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if err := s.grpc.Serve(ln); err != nil && err != grpc.ErrServerStopped {
		return fmt.Errorf("serve flight: %w", err)
	}
	return nil
}

// Shutdown stops accepting calls, lets running streams finish until ctx
// ends (then cancels them), and releases every held connection.
func (s *Server) Shutdown(ctx context.Context) {
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancelAll()
		s.grpc.Stop()
		<-done
	}
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	txns, held, preps := s.txns, s.held, s.prepared
	s.txns, s.held, s.prepared = map[string]*txn{}, map[string]*heldQuery{}, map[string]*prepared{}
	s.mu.Unlock()
	for _, h := range held {
		h.close() // before its transaction, whose lock it may hold
	}
	for _, t := range txns {
		t.release()
		txnsOpen.Dec()
	}
	for _, p := range preps {
		p.close()
	}
}

func (s *Server) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.running {
		cancel()
	}
}

// DefaultTxnIdleTimeout is the default of Options.TxnIdleTimeout.
const DefaultTxnIdleTimeout = 60 * time.Second

// reapIdle rolls back transactions and closes prepared statements and held
// queries that clients abandoned, so their connections and memory come
// back. It looks a quarter of the shorter idle timeout apart, so an
// abandoned transaction goes within 1.25 times its timeout.
func (s *Server) reapIdle() {
	defer s.wg.Done()
	every := min(max(min(s.opts.IdleTimeout, s.opts.TxnIdleTimeout)/4, 10*time.Millisecond), time.Minute)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-tick.C:
			s.reapOnce(now)
		}
	}
}

func (s *Server) reapOnce(now time.Time) {
	cutoff := now.Add(-s.opts.IdleTimeout)
	txnCutoff := now.Add(-s.opts.TxnIdleTimeout)
	var txns []*txn
	var held []*heldQuery
	s.mu.Lock()
	for id, h := range s.held {
		if h.txn == "" && h.created.Before(cutoff) || h.txn != "" && h.created.Before(txnCutoff) {
			delete(s.held, id)
			held = append(held, h)
			// A held result holds its transaction's lock, and its
			// transaction has had no call since: both go.
			if t := s.txns[h.txn]; t != nil {
				s.dropTxnLocked(t, whyIdle, now)
				txns = append(txns, t)
			}
		}
	}
	for _, t := range s.txns {
		if !t.mu.TryLock() {
			continue // a call of it is running, or its result streaming
		}
		idle := t.last.Before(txnCutoff)
		t.mu.Unlock()
		// Once out of the map, no call can take it (useTxn checks).
		if idle {
			s.dropTxnLocked(t, whyIdle, now)
			txns = append(txns, t)
		}
	}
	for id, p := range s.prepared {
		if p.idleSince(cutoff) {
			delete(s.prepared, id)
			preparedOpen.Dec()
			p.close()
		}
	}
	for id, e := range s.ended {
		if e.at.Before(cutoff) {
			delete(s.ended, id)
		}
	}
	s.mu.Unlock()
	s.rollBack(held, txns, whyIdle)
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("read random: %v", err))
	}
	return hex.EncodeToString(b[:])
}
