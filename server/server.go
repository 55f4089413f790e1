// Package server assembles a running quiver: the engine, the Flight SQL
// service, the MySQL-protocol endpoint and the HTTP endpoint (/metrics,
// /healthz and the web console), started in order and stopped in reverse.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/backup"
	"github.com/quiverdata/quiver/console"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/internal/version"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/lakesql"
)

// Config is everything quiver serve is told.
type Config struct {
	DB          string // database file or ":memory:"
	FlightAddr  string
	MySQLAddr   string // empty: no MySQL endpoint
	HTTPAddr    string // empty: no HTTP endpoint
	Threads     int
	MemoryLimit string
	BatchRows   int
	// ExternalAccess lets SQL read and write the server's file system.
	ExternalAccess bool
	// Allocator allocates result buffers; nil means the Go allocator.
	// Tests pass a checked allocator to prove nothing leaks.
	Allocator memory.Allocator
	// Demo loads the demo dataset into an empty database.
	Demo   bool
	Logger *slog.Logger
	// Announce receives "quiver: <proto> listening on ADDR" lines; nil
	// means stderr.
	Announce func(proto, addr string)
	// Security holds users, TLS and tokens.
	Security Security
	// Compression is the result compression for clients that ask for
	// none: none (empty), lz4, zstd or auto.
	Compression string
	// Lake, when set, serves an Iceberg lake's tables read-only as
	// lake.<namespace>.<table>.
	Lake *LakeConfig
	// Advertise is the HOST:PORT clients reach this server's Flight port
	// at, and Peers the other replicas'. With peers, a result split over
	// several endpoints lists every replica on each.
	Advertise string
	Peers     []string
	// Limits bound memory, queries, connections and time.
	Limits Limits
	// ExportRoot, when set, is the directory (created when missing) under
	// which readwrite and admin users may write files with COPY … TO
	// (see export.go); every COPY … TO is then checked against it. An
	// s3://bucket/prefix root takes exports on an object store: DuckDB
	// writes each to a private staging directory, and quiver uploads it.
	ExportRoot string
	// ExportS3 reaches an s3:// export root; when it is zero and the lake
	// is on S3, the lake's settings are used.
	ExportS3 lake.S3Config
	// MetricsAddr, when set, serves /metrics on a listener of its own
	// without login, for scrapers on a private interface; the HTTP port's
	// /metrics needs a login whenever the server has users.
	MetricsAddr string
	// Ingest are Kafka pipelines that write into the served database
	// (quiver serve --ingest). They start once the database is open and
	// stop, drained, before it closes; their rows are visible to every
	// endpoint the moment their batch commits.
	Ingest []IngestPipeline
	// Backup takes backups of the database on a schedule.
	Backup BackupSchedule
}

// Server is a running quiver.
type Server struct {
	cfg    Config
	log    *slog.Logger
	DB     *engine.DB
	Flight *flightsql.Server
	// Lake is the attached lake, when Config.Lake is set.
	Lake *lakesql.Catalog
	// Budget is the memory budget's split; Admission (nil with
	// Limits.Off) and Classifier decide when statements run.
	Budget     admit.Budget
	Admission  *admit.Controller
	Classifier *admit.Classifier
	// Holds bounds and counts what clients keep between statements, on
	// every endpoint.
	Holds *admit.Holds
	idle  idleFree

	FlightAddr  string
	MySQLAddr   string
	HTTPAddr    string
	MetricsAddr string

	sec    *security
	stops  []namedStop
	backer *backup.Backer

	pipeMu    sync.Mutex
	pipelines []*runningPipeline
	errc      chan error
}

type namedStop struct {
	name string
	stop func(context.Context)
}

// Start opens the database and starts every listener. On error, what was
// started is stopped again.
func Start(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Announce == nil {
		cfg.Announce = func(proto, addr string) {
			fmt.Fprintf(os.Stderr, "quiver: %s listening on %s\n", proto, addr)
		}
	}
	s := &Server{cfg: cfg, log: cfg.Logger, errc: make(chan error, 4)}
	defer func() {
		if err != nil {
			s.Shutdown(context.Background())
		}
	}()
	// The directory first: the token key file lives next to the database.
	if cfg.DB != ":memory:" && cfg.DB != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.DB), 0o755); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
	}
	sec, err := s.setupSecurity(cfg)
	if err != nil {
		return nil, err
	}
	s.sec = sec

	var lk *lake.Lake
	var allowed []string
	if cfg.Lake != nil {
		if lk, allowed, err = s.openLake(ctx); err != nil {
			return nil, err
		}
	}
	if allowed, err = s.allowExports(ctx, allowed); err != nil {
		return nil, err
	}
	if err := s.admission(); err != nil {
		return nil, err
	}
	staging, err := s.backupStaging()
	if err != nil {
		return nil, err
	}
	allowed = append(allowed, staging)
	start := time.Now()
	s.DB, err = engine.Open(ctx, engine.Options{
		Path: cfg.DB, Threads: cfg.Threads, MemoryLimit: s.cfg.MemoryLimit, BatchRows: cfg.BatchRows,
		ExternalAccess: cfg.ExternalAccess, AllowedDirs: allowed, Logger: cfg.Logger, Allocator: cfg.Allocator,
		Shape: cfg.Limits.Shape,
	})
	if err != nil {
		return nil, err
	}
	s.stops = append(s.stops, namedStop{"database", func(context.Context) { s.DB.Close() }})
	s.Classifier.Parse = s.syntaxTree
	s.log.Info("database open", "path", cfg.DB, "took", time.Since(start).Round(time.Millisecond))
	if err := s.setupBackup(staging); err != nil {
		return nil, err
	}
	if lk != nil {
		if err := s.attachLake(ctx, lk); err != nil {
			return nil, err
		}
	}
	if cfg.Demo {
		if err := LoadDemo(ctx, s.DB, s.log); err != nil {
			return nil, err
		}
	}
	// After the lake's: the early checks run first, then the lake's hook.
	s.DB.SetPrepareHook(sec.prepareHook(s.DB.PrepareHook()))

	// After the database and its hooks, before the listeners: a pipeline
	// stops, drained, after the endpoints stopped taking queries and
	// before the database closes.
	if err := s.startIngest(ctx); err != nil {
		return nil, err
	}

	if err := s.startFlight(sec); err != nil {
		return nil, err
	}
	if cfg.MySQLAddr != "" {
		if err := s.startMySQL(ctx, sec); err != nil {
			return nil, err
		}
	}
	if cfg.HTTPAddr != "" {
		if err := s.startHTTP(); err != nil {
			return nil, err
		}
	}
	if cfg.MetricsAddr != "" {
		if err := s.startMetrics(); err != nil {
			return nil, err
		}
	}
	// Last, so that it stops first, before the database closes.
	if err := s.startBackups(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) startFlight(sec *security) error {
	ln, err := listen(s.cfg.FlightAddr, sec)
	if err != nil {
		return fmt.Errorf("listen flight on %s: %w", s.cfg.FlightAddr, err)
	}
	s.FlightAddr = ln.Addr().String()
	lim := s.cfg.Limits
	cl := newConnListener(ln, lim, s.log)
	ln = cl
	s.Flight, err = flightsql.New(s.DB, flightsql.Options{
		Admission:          s.Admission,
		Classifier:         s.Classifier,
		Holds:              s.Holds,
		QueryTimeout:       lim.QueryTimeout,
		IdleTimeout:        lim.IdleTimeout,
		TxnIdleTimeout:     lim.TxnIdleTimeout,
		Logger:             s.log,
		ServerOptions:      sec.grpcOptions(),
		UnaryInterceptors:  append(append([]grpc.UnaryServerInterceptor{cl.enterUnary}, sec.unary...), cl.unary),
		StreamInterceptors: append(append([]grpc.StreamServerInterceptor{cl.enterStream}, sec.stream...), cl.stream),
		Authorize:          sec.authorize,
		WrapService:        sec.wrap,
		Compression:        s.cfg.Compression,
		Planner:            s.planners(),
		Locations:          s.locations(sec.tls != nil),
		TicketKey:          sec.ticketKey,
		Actions:            s.actions(),
	})
	if err != nil {
		ln.Close()
		return err
	}
	go func() { s.errc <- s.Flight.Serve(ln) }()
	s.stops = append(s.stops, namedStop{"flight", s.Flight.Shutdown})
	s.cfg.Announce("flight", s.FlightAddr)
	return nil
}

func (s *Server) startHTTP() error {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen http on %s: %w", s.cfg.HTTPAddr, err)
	}
	con, err := console.New(console.Options{Kind: console.KindServe, DB: s.DB, Users: s.sec.users, Tokens: s.sec.tokens,
		Authorize: func(u auth.User, st *engine.Stmt) error { return s.sec.authorizeUser(u, st, "http") },
		Admission: s.Admission, Classifier: s.Classifier, QueryTimeout: s.cfg.Limits.QueryTimeout, Logger: s.log,
		SecureCookies: s.sec.tls != nil, Pipelines: s.ingestLive()})
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", con)
	mux.Handle("/metrics", con.Protect(promhttp.Handler()))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		c, err := s.DB.Conn(r.Context())
		if err != nil {
			http.Error(w, "database unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer c.Release()
		if _, err := c.Exec(r.Context(), "SELECT 1"); err != nil {
			http.Error(w, "database unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(health{Status: "ok", Info: version.Get()})
	})
	hs := &http.Server{Handler: RecoverHTTP(s.log, mux), ReadHeaderTimeout: 10 * time.Second}
	s.HTTPAddr = ln.Addr().String()
	go func() {
		if err := s.sec.serveHTTP(hs, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errc <- fmt.Errorf("serve http: %w", err)
		}
	}()
	s.stops = append(s.stops, namedStop{"http", func(ctx context.Context) { hs.Shutdown(ctx) }})
	s.cfg.Announce("http", s.HTTPAddr)
	return nil
}

// ReloadUsers reads the users file again (quiver serve does on SIGHUP):
// sessions go on, with the roles the file now gives; deleted users, and
// users whose password changed, must log in again. A file that cannot be
// read, or has no users, changes nothing.
func (s *Server) ReloadUsers() error {
	if s.sec == nil || s.sec.file == nil {
		return errors.New("reload users: the server has no --users-file")
	}
	return s.sec.file.Reload()
}

// Err receives the first error a listener stops with.
func (s *Server) Err() <-chan error { return s.errc }

// Shutdown stops every component in reverse order of start, letting
// running streams finish until ctx ends, and logs how long each took.
func (s *Server) Shutdown(ctx context.Context) {
	for i := len(s.stops) - 1; i >= 0; i-- {
		st := s.stops[i]
		start := time.Now()
		st.stop(ctx)
		s.log.Info("stopped", "component", st.name, "took", time.Since(start).Round(time.Millisecond))
	}
	s.stops = nil
}

// health is /healthz's answer: "ok", and which quiver is serving.
type health struct {
	Status string `json:"status"`
	version.Info
}
