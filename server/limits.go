package server

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
)

// Limits bound what the server takes on: memory, queries, connections and
// time. Zero fields take the defaults given.
type Limits struct {
	// Memory is the server's memory budget in bytes (admit.SplitBudget):
	// DuckDB's memory_limit, the Go runtime's soft limit and the number of
	// results open at once come from it. Default: half the machine's (or
	// the cgroup's) memory.
	Memory int64
	// MaxRunning is how many statements run at once, half of them kept
	// for small ones. Default: twice the CPUs, at least 4.
	MaxRunning int
	// QueueTimeout is how long a statement waits for its turn before it
	// is refused (RESOURCE_EXHAUSTED, MySQL error 1040). Default 30 s.
	QueueTimeout time.Duration
	// QueryTimeout bounds each statement, its wait included. A session
	// may lower it, never raise it (Flight's query_timeout option,
	// MySQL's max_execution_time). Default: none.
	QueryTimeout time.Duration
	// MaxConnections bounds the logged-in client connections of each
	// endpoint (conns.go): past it a login is refused, over Flight with
	// RESOURCE_EXHAUSTED, over MySQL with error 1040. Default 4096.
	MaxConnections int
	// AdminReservedConnections of them only admins may take, so that an
	// admin can always log in. Zero: DefaultAdminReserved, at most half
	// of MaxConnections; negative: none.
	AdminReservedConnections int
	// MaxUserConnections bounds one user's connections per endpoint,
	// admins' excepted. Zero: half of what the admins' reserve leaves.
	MaxUserConnections int
	// MaxHandshakes bounds the connections of each endpoint still
	// logging in, which do not count against MaxConnections; past it the
	// oldest is closed. Zero: as many as MaxConnections.
	MaxHandshakes int
	// HandshakeTimeout closes a connection that has not logged in this
	// long after it was accepted. Zero: DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// IdleTimeout closes Flight connections that make no call, and MySQL
	// connections that send no command, for this long; Flight's idle
	// prepared statements go too. Default: 30 minutes for Flight, 8 hours
	// (MySQL's wait_timeout) for MySQL.
	IdleTimeout time.Duration
	// TxnIdleTimeout rolls back a Flight SQL transaction that makes no
	// call for this long (a transaction whose client connection closes
	// goes at once). Default: 60 seconds.
	TxnIdleTimeout time.Duration
	// BulkYield is how long a bulk result waits, before each batch, for
	// the small queries in flight to finish, so that they get the cores
	// (admit.Config.YieldMax). 0, the default: bulk results never wait.
	BulkYield time.Duration
	// SmallHold is the most run time a statement holds a small-lane slot
	// before it is demoted to the bulk lane (admit.Config.SmallHold).
	// Default 250 ms; negative: never.
	SmallHold time.Duration
	// Holds bound what clients keep between statements, per session and
	// per user: prepared statements, open transactions, held results and
	// bound parameters (admit.HoldLimits, whose defaults zero fields
	// take). Its Memory is the budget's Held share, whatever is set.
	Holds admit.HoldLimits
	// Shape bounds every statement's shape, for every role, before
	// DuckDB parses it: nesting, subqueries in expressions, and AND, OR
	// and UNION terms (engine.ShapeLimits, whose defaults zero fields
	// take). DuckDB's parse and binding of some shapes grow much faster
	// than their text and cannot be interrupted.
	Shape engine.ShapeLimits
	// Off turns admission control off: every statement runs at once.
	// What clients hold stays bounded.
	Off bool
}

// DefaultMaxConnections is the default of Limits.MaxConnections.
const DefaultMaxConnections = 4096

// admission sets up the budget and the admission controller from
// cfg.Limits, and DuckDB's memory_limit unless cfg.MemoryLimit sets it.
func (s *Server) admission() error {
	l := &s.cfg.Limits
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	l.connDefaults()
	if l.Memory <= 0 {
		m, err := admit.DefaultBudget()
		if err != nil {
			return fmt.Errorf("memory budget: %w (set one with --memory)", err)
		}
		l.Memory = m
	}
	s.Budget = admit.SplitBudget(l.Memory)
	if s.cfg.MemoryLimit == "" {
		s.cfg.MemoryLimit = admit.FormatBytes(s.Budget.DuckDB)
	}
	s.Classifier = &admit.Classifier{Shape: sqlShape}
	l.Holds.Memory = s.Budget.Held
	s.Holds = admit.NewHolds(l.Holds)
	if l.Off {
		return nil
	}
	s.Admission = admit.New(admit.Config{Running: l.MaxRunning, Open: s.Budget.Open, Timeout: l.QueueTimeout, YieldMax: l.BulkYield, SmallHold: l.SmallHold})
	s.Admission.OnIdle(s.idle.notify)
	s.Holds.OnFreed(s.idle.notify)
	s.idle.isIdle = s.Admission.Idle
	s.idle.start()
	s.stops = append(s.stops, namedStop{"idle memory", func(context.Context) { s.idle.stop() }})
	c := s.Admission.Config()
	s.log.Info("admission control", "budget", s.Budget.String(), "running", c.Running, "small_reserved", c.Reserved,
		"open", c.Open, "small_hold", c.SmallHold, "queue_timeout", c.Timeout, "query_timeout", l.QueryTimeout, "max_connections", l.MaxConnections)
	return nil
}

// idleFree gives memory back to the system once the server has been idle
// (no result open) for a while: the pools of result buffers empty only at
// a garbage collection, and an idle server runs none, so after a burst of
// fetches they would otherwise hold their peak for good.
type idleFree struct {
	wake   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
	quiet  time.Duration // idle this long first
	every  time.Duration // at most this often
	isIdle func() bool
}

func (f *idleFree) notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *idleFree) start() {
	f.wake, f.done = make(chan struct{}, 1), make(chan struct{})
	if f.quiet == 0 {
		f.quiet = 2 * time.Second
	}
	if f.every == 0 {
		f.every = 10 * time.Second
	}
	f.wg.Add(1)
	go f.run()
}

func (f *idleFree) stop() {
	close(f.done)
	f.wg.Wait()
}

func (f *idleFree) run() {
	defer f.wg.Done()
	var last time.Time
	for {
		select {
		case <-f.done:
			return
		case <-f.wake:
		}
		wait := max(f.quiet, f.every-time.Since(last))
		select {
		case <-f.done:
			return
		case <-time.After(wait):
		}
		if f.isIdle != nil && !f.isIdle() {
			continue // busy again; the next idle moment wakes us
		}
		start := time.Now()
		// Two collections: sync.Pool keeps a victim generation.
		runtime.GC()
		debug.FreeOSMemory()
		last = time.Now()
		idleFrees.Inc()
		idleFreeSeconds.Add(last.Sub(start).Seconds())
	}
}

var (
	idleFrees = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_server_idle_frees_total",
		Help: "Times the idle server collected garbage and gave free memory back to the system.",
	})
	idleFreeSeconds = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_server_idle_free_seconds_total",
		Help: "Time spent giving memory back while idle.",
	})
	flightConnsOpen = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_flight_connections_open",
		Help: "Flight client connections open.",
	})
	flightConnsRefused = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_flight_connections_refused_total",
		Help: "Flight calls refused because their connection's login was past a connection limit (--max-connections, --max-user-connections).",
	})
)
