// Package load is the load harness: many Flight SQL and MySQL clients,
// in this process and in client processes of their own, against one
// `quiver serve` with authentication on, level by level, with a probe of
// point lookups beside them, chaos (killed clients, slow readers, a
// restart) and aborted streams. It measures latency, throughput, memory
// and where the machine's CPU went, and checks every acknowledged write.
package load

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/mempool"
)

// Config configures the load suite: many Flight SQL and MySQL clients
// against one `quiver serve` with authentication on, each looping over a
// point lookup, a small aggregate and a large fetch.
type Config struct {
	// Bin is the quiver binary to run as the server.
	Bin string
	// BenchBin is the quiver-bench binary, run as the client processes
	// (quiver-bench load-clients) and the probe (quiver-bench probe).
	BenchBin string
	// Dir holds the server's database and users file; a fresh temporary
	// directory when empty.
	Dir string
	// ServerFlags are passed to quiver serve after the suite's own, so
	// they may override them (e.g. --max-running 8 --queue-timeout 30s).
	ServerFlags []string
	// ServerNice is the nice value quiver serve runs at (through nice(1));
	// 0 runs it at the bench's own. The clients, and the probe, share the
	// machine's cores with the server; at a lower priority than theirs the
	// server yields a core whenever a client has work, as it would to
	// clients on machines of their own, so that the latency the clients
	// measure is the server's and not the time they waited for a core.
	// At 1,000 clients on 2 cores the clients' small-query p99 was
	// 137–305 ms with the server at nice 0 (5 runs) and 53–95 ms at nice
	// 10 (4 runs), fetch throughput the same within the noise.
	ServerNice int

	// Clients are the concurrency levels, each measured for Duration
	// after every client has logged in.
	Clients  []int
	Duration time.Duration
	// Warmup, in loaded windows, comes between the logins and the
	// measured Duration: each client starts its loop at a random moment
	// of it, so that the measured window holds the load's steady state.
	// Without it every client sends its first point lookup in the same
	// millisecond, and the window measures that burst: a thousand of them
	// take the two cores seconds to answer whatever the server does. 0:
	// no warm-up, every client starts with the window.
	Warmup time.Duration
	// Idle is how long the idle small-query latency is measured before
	// each level: one client, point lookups and aggregates only, nothing
	// else running. 0: 10 s.
	Idle time.Duration
	// ClientProcs, above 1, runs each loaded window's clients in that
	// many processes of their own (quiver-bench load-clients), each with
	// its share of every protocol, instead of in the bench's: clients on
	// machines of their own share no Go scheduler, where a small query's
	// reply waits to run behind the other clients' decoding. The chaos
	// step's kills and restarts and the writers need the clients in the
	// bench's process. 0 or 1: the bench's own process.
	ClientProcs int
	// Probe also times point lookups from a process of its own (quiver
	// bench probe) over each idle and loaded window: a client that
	// shares no Go runtime with the load's clients.
	Probe bool
	// Rounds repeats the whole sequence of levels, alternating idle and
	// loaded windows; figures are the medians over the rounds. 0: 1.
	Rounds int
	// MySQLShare is the share of each level's clients that use MySQL;
	// the others use Flight SQL.
	MySQLShare float64
	// FetchRows is the size of the large fetch; the table holds as many
	// rows (at least AggRows and AbortRows). AggRows is the range the small aggregate
	// covers. 0: 10,000.
	FetchRows, AggRows int64
	// LoginParallel is how many clients log in at once while a level
	// ramps up (Argon2id costs the server 19 MiB and tens of ms per
	// Flight login). 0: 8.
	LoginParallel int

	// AbortStreams DoGets of the fetch are opened, read to their first
	// batch and cancelled, AbortParallel at a time, in each of
	// AbortRounds rounds; the server's RSS and goroutines are compared
	// with their baseline after Settle. 0 streams: no abort step.
	AbortStreams, AbortRounds, AbortParallel int
	// AbortRows is the size of the aborted streams' result, which must
	// outgrow the gRPC flow-control windows (16 MiB a stream) for the
	// server to be mid-stream when they are cancelled. 0: FetchRows.
	AbortRows int64
	// Settle is how long the server is left alone before memory is read
	// after aborted streams. 0: 5 s.
	Settle time.Duration
	// AbortLate, when set, adds a last reading this long after the last
	// round, to tell memory held until the next garbage collection (Go
	// forces one every 2 minutes on an idle process) from a leak.
	AbortLate time.Duration

	// WriteShare is the share of clients that also INSERT a row with a
	// fresh id after each of their reads; after the run every
	// acknowledged id must be in the table exactly once.
	WriteShare float64
	// Chaos applies to the loaded windows.
	Chaos Chaos

	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// Chaos is the long test's chaos step.
type Chaos struct {
	// KillEvery, when set, kills a random client that is mid-fetch this
	// often: its stream is cancelled and its connection closed, and it
	// comes back as a new client (logging in again).
	KillEvery time.Duration
	// SlowReaders clients read fetches at SlowRate bytes/s. 0 rate: 1 MB/s.
	SlowReaders int
	SlowRate    int64
	// RestartAt, when set and within the window, restarts the server with
	// SIGTERM, which drains streams for Drain (passed as --drain), and
	// starts it again on the same addresses. Errors from then until each
	// client's first success afterwards are counted apart.
	RestartAt time.Duration
	Drain     time.Duration
}

func (c *Config) defaults() {
	if c.Idle == 0 {
		c.Idle = 10 * time.Second
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
	if c.AggRows == 0 {
		c.AggRows = 10_000
	}
	if c.LoginParallel == 0 {
		c.LoginParallel = 8
	}
	if c.AbortRounds == 0 {
		c.AbortRounds = 3
	}
	if c.AbortParallel == 0 {
		c.AbortParallel = 100
	}
	if c.Settle == 0 {
		c.Settle = 5 * time.Second
	}
	if c.AbortRows == 0 {
		c.AbortRows = c.FetchRows
	}
	if c.Chaos.SlowReaders > 0 && c.Chaos.SlowRate == 0 {
		c.Chaos.SlowRate = 1 << 20
	}
}

func (c *Config) validate() error {
	switch {
	case c.Bin == "":
		return errors.New("load: no quiver binary")
	case c.BenchBin == "" && (c.ClientProcs > 1 || c.Probe):
		return errors.New("load: no quiver-bench binary to run the client processes and the probe")
	case len(c.Clients) == 0:
		return errors.New("load: no client levels")
	case c.Duration <= 0:
		return errors.New("load: duration must be positive")
	case c.MySQLShare < 0 || c.MySQLShare > 1, c.WriteShare < 0 || c.WriteShare > 1:
		return errors.New("load: shares must be between 0 and 1")
	case c.FetchRows <= 0 || c.AggRows <= 0 || c.AbortRows < 0:
		return errors.New("load: fetch and aggregate rows must be positive")
	case c.AbortStreams < 0 || c.AbortRounds < 0 || c.AbortParallel < 0 || c.LoginParallel < 0 || c.ClientProcs < 0:
		return errors.New("load: counts must not be negative")
	case c.ClientProcs > 1 && (c.Chaos.KillEvery > 0 || c.Chaos.RestartAt > 0 || c.WriteShare > 0):
		return errors.New("load: the chaos step's kills and restarts, and writers, run with the clients in the bench's own process: use 1 client process")
	}
	for _, n := range c.Clients {
		if n < 1 {
			return fmt.Errorf("load: client level %d: must be at least 1", n)
		}
	}
	return nil
}

// ParseClients reads a list of client levels like "1,64,300,1000".
func ParseClients(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(part, "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad client count %q: use e.g. 1,64,300,1000", part)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no client counts given")
	}
	return out, nil
}

// Run runs the load suite and returns its report.
func Run(ctx context.Context, cfg Config) (*report.Report, error) {
	rep, _, err := runSuite(ctx, cfg)
	return rep, err
}

// outcome is everything the suite measured, for the report and for
// tests.
type outcome struct {
	// levels holds each round's results, levels[round][i] for Clients[i];
	// idle the idle window before each.
	levels, idle [][]*windowResult
	abort        *abortResult
	writes       *writeCheck
	// hwm is the server's VmHWM at the end: that of the process the
	// levels ran on (the last one, after a restart).
	hwm int64
	// benchRSS is the clients' side's peak RSS: this process's, or the
	// largest client process's (clientRSS) when ClientProcs ran them.
	benchRSS, clientRSS int64
}

// suite is one run of the suite: its server, clients' target and SQL.
type suite struct {
	cfg    Config
	log    *slog.Logger
	srv    *server
	target target
	q      queries
	ids    *idSource
	// baseGoroutines is the server's goroutine count with nothing
	// running, for settling between windows.
	baseGoroutines int
	// dir holds the run's files; clientRSS is the largest peak RSS of
	// the client processes (ClientProcs).
	dir       string
	clientRSS int64
}

func runSuite(ctx context.Context, cfg Config) (*report.Report, *outcome, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "quiver-load-")
		if err != nil {
			return nil, nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	pw := make([]byte, 16)
	rand.Read(pw)
	password := hex.EncodeToString(pw)

	var flags []string
	if cfg.Chaos.RestartAt > 0 && cfg.Chaos.Drain > 0 {
		flags = append(flags, "--drain", cfg.Chaos.Drain.String())
	}
	flags = append(flags, cfg.ServerFlags...)
	srv, err := startServer(ctx, cfg.Bin, cfg.ServerNice, dir, password, flags)
	if err != nil {
		return nil, nil, err
	}
	defer srv.stop(cfg.Chaos.Drain + time.Minute)
	flight, mysql := srv.addrs()
	l := &suite{
		cfg: cfg, log: log, srv: srv, ids: &idSource{}, dir: dir,
		target: target{flight: flight, mysql: mysql, user: adminUser, password: password, mem: mempool.New()},
		q:      queries{rows: max(cfg.FetchRows, cfg.AggRows, cfg.AbortRows), aggRows: cfg.AggRows, fetchRows: cfg.FetchRows},
	}
	log.Info("load: server up", "flight", flight, "mysql", mysql, "flags", strings.Join(flags, " "))
	if err := l.setup(ctx); err != nil {
		return nil, nil, err
	}
	if l.baseGoroutines, err = srv.goroutines(ctx); err != nil {
		return nil, nil, err
	}

	out := &outcome{}
	if cfg.AbortStreams > 0 {
		if out.abort, err = l.abortStep(ctx); err != nil {
			return nil, nil, err
		}
		// The levels get a fresh process, so that what the aborted
		// streams left behind does not count in their memory.
		_, out.abort.hwm = srv.memory()
		if _, _, err := srv.restart(ctx, time.Minute, nil); err != nil {
			return nil, nil, err
		}
		if err := l.warmUp(ctx); err != nil {
			return nil, nil, err
		}
		if l.baseGoroutines, err = srv.goroutines(ctx); err != nil {
			return nil, nil, err
		}
	}
	for r := 0; r < cfg.Rounds; r++ {
		var levels, idles []*windowResult
		for _, n := range cfg.Clients {
			l.settle(ctx)
			idle, err := l.idleWindow(ctx)
			if err != nil {
				return nil, nil, err
			}
			idles = append(idles, idle)
			log.Info("load: idle", "round", r+1, "small_p50", idle.p50, "small_p99", idle.p99)
			lv, err := l.window(ctx, l.levelClients(n), cfg.Duration, true)
			if err != nil {
				return nil, nil, err
			}
			levels = append(levels, lv)
			log.Info("load: level", "round", r+1, "clients", n, "ramp", lv.ramp.Round(time.Millisecond),
				"fetch_rows_per_s", int64(lv.rate(lv.fetchRows)), "small_p99", lv.p99, "peak_rss_mb", lv.peakRSS>>20,
				"rejected", lv.rejected, "errors", lv.other)
		}
		out.levels = append(out.levels, levels)
		out.idle = append(out.idle, idles)
	}
	if cfg.WriteShare > 0 {
		if out.writes, err = l.checkWrites(ctx, out.levels); err != nil {
			return nil, nil, err
		}
	}
	_, out.hwm = srv.memory()
	out.benchRSS, out.clientRSS = max(osfacts.SelfPeakRSS(), l.clientRSS), l.clientRSS
	return suiteReport(cfg, flags, out), out, nil
}

// setup creates the tables and warms the server up.
func (l *suite) setup(ctx context.Context) error {
	start := time.Now()
	admin, err := l.target.dial(ctx, protoFlight, nil)
	if err != nil {
		return fmt.Errorf("connect as %s: %w", adminUser, err)
	}
	defer admin.close()
	if err := admin.exec(ctx, l.q.createTable()); err != nil {
		return fmt.Errorf("generate %s: %w", loadTable, err)
	}
	if err := admin.exec(ctx, l.q.createWrites()); err != nil {
		return fmt.Errorf("create %s: %w", loadWrites, err)
	}
	if err := l.warmUp(ctx); err != nil {
		return err
	}
	l.log.Info("load: table ready", "rows", l.q.rows, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// warmUp runs every query once over each protocol, so the table is in
// the server's memory before a baseline is read or a window starts.
func (l *suite) warmUp(ctx context.Context) error {
	for _, proto := range []string{protoFlight, protoMySQL} {
		c := newUser(-1, proto, l.target, l.q, l.ids)
		if err := c.connect(ctx); err != nil {
			return fmt.Errorf("warm up over %s: %w", proto, err)
		}
		w := &window{}
		for _, k := range []opKind{opPoint, opAgg, opFetch} {
			if !c.do(ctx, w, k) {
				c.drop()
				return fmt.Errorf("warm up over %s: %s: %s", proto, opNames[k], firstExample(c.st.examples))
			}
		}
		if c.st.fetchRows != l.q.fetchRows {
			c.drop()
			return fmt.Errorf("warm up over %s: fetched %d rows, want %d", proto, c.st.fetchRows, l.q.fetchRows)
		}
		c.drop()
	}
	return nil
}

func firstExample(m map[string]string) string {
	for k, v := range m {
		return k + ": " + v
	}
	return "unknown error"
}

// levelClients are n clients: MySQLShare of them over MySQL, WriteShare
// of them writers, SlowReaders of them slow, each spread evenly.
func (l *suite) levelClients(n int) []*user {
	cs := make([]*user, n)
	slowEvery := 0
	if s := l.cfg.Chaos.SlowReaders; s > 0 {
		slowEvery = max(n/s, 1)
	}
	slow := 0
	for i := range cs {
		proto := protoFlight
		if picked(i, l.cfg.MySQLShare) {
			proto = protoMySQL
		}
		c := newUser(i, proto, l.target, l.q, l.ids)
		c.writer = picked(i, l.cfg.WriteShare)
		if slowEvery > 0 && i%slowEvery == slowEvery/2 && slow < l.cfg.Chaos.SlowReaders {
			c.slowRate = l.cfg.Chaos.SlowRate
			slow++
		}
		cs[i] = c
	}
	return cs
}

// picked reports whether the i-th of a run of clients is in a share of
// them: floor((i+1)·share) > floor(i·share), which spreads them evenly
// and picks floor(n·share) of n.
func picked(i int, share float64) bool {
	return int(float64(i+1)*share+1e-9) > int(float64(i)*share+1e-9)
}

// idleWindow measures small queries with one client and nothing else
// running: a Flight client for (1-MySQLShare) of Idle, then a MySQL one
// for the rest, so the idle figures mix the protocols as the load does.
func (l *suite) idleWindow(ctx context.Context) (*windowResult, error) {
	cpu0 := takeCPU(l.srv.pid())
	var probe *probeProc
	if l.cfg.Probe {
		var err error
		if probe, err = l.startProbe(ctx, time.Now().Add(l.cfg.Idle)); err != nil {
			return nil, err
		}
	}
	var parts []*windowResult
	for _, p := range []struct {
		proto string
		share float64
	}{{protoFlight, 1 - l.cfg.MySQLShare}, {protoMySQL, l.cfg.MySQLShare}} {
		d := time.Duration(float64(l.cfg.Idle) * p.share)
		if d <= 0 {
			continue
		}
		c := newUser(0, p.proto, l.target, l.q, l.ids)
		c.idle = true
		w, err := l.window(ctx, []*user{c}, d, false)
		if err != nil {
			return nil, err
		}
		parts = append(parts, w)
	}
	idle := mergeWindows(parts)
	cpu1 := takeCPU(l.srv.pid())
	if probe != nil {
		var err error
		if idle.probe, err = probe.wait(); err != nil {
			return nil, err
		}
	}
	idle.cpu, idle.cpuOK = cpu1.share(cpu0, idle.probe)
	return idle, nil
}

// settle waits, up to Settle, until the server's goroutines are back near
// their count with nothing running, so a window starts on a quiet server.
func (l *suite) settle(ctx context.Context) {
	deadline := time.Now().Add(l.cfg.Settle)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		g, err := l.srv.goroutines(ctx)
		if err == nil && within(g, l.baseGoroutines, 0.10, 10) {
			return
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// within reports whether got is at most base plus frac of it, or plus
// slack, whichever is larger.
func within(got, base int, frac float64, slack int) bool {
	return got <= base+max(int(float64(base)*frac), slack)
}

// sleepCtx waits for d, or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
