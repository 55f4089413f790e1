package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/internal/testsvc"
)

// loadServerFlags are extra quiver serve flags for the load tests, from
// QUIVER_LOAD_SERVER_FLAGS (e.g. "--max-running 8 --queue-timeout 30s"),
// so admission control can be switched on without editing the tests.
func loadServerFlags() []string { return strings.Fields(os.Getenv("QUIVER_LOAD_SERVER_FLAGS")) }

// TestLoad_Short runs 60 clients (48 Flight, 12 MySQL, 6 of them
// writers), started over a 3 s warm-up, against a real quiver serve with
// auth on, then 200 aborted streams. It checks what must hold whatever the machine: no errors but
// documented RESOURCE_EXHAUSTED refusals, every client completed each of
// its operations, every acknowledged write is in the table once, and the
// server's goroutines come back after the aborted streams. It asserts
// nothing about timing.
func TestLoad_Short(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bin := testsvc.QuiverBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := Config{
		// The server runs at the test's own priority (ServerNice 0):
		// the other packages' tests run beside it, at that priority too.
		Bin: bin, BenchBin: testsvc.BenchBinary(t), Dir: t.TempDir(), ServerFlags: loadServerFlags(),
		Clients: []int{60}, Warmup: 3 * time.Second, Duration: 12 * time.Second, Idle: 2 * time.Second,
		MySQLShare: 0.2, WriteShare: 0.1, FetchRows: 100_000, AggRows: 5_000, Probe: true,
		// 1M rows (33 MB) outgrow a stream's flow-control window, so the
		// server is mid-stream when each is cancelled.
		AbortStreams: 100, AbortRounds: 2, AbortParallel: 20, AbortRows: 1_000_000, Settle: 2 * time.Second,
	}
	out := runLoadSuite(ctx, t, cfg)
	lv := out.levels[0][0]
	checkLevel(t, out, 48, 12)
	if got := lv.ops[opWrite]; got == 0 {
		t.Errorf("no write completed")
	}
	// The probe process ran over both windows, and its queries worked.
	for _, w := range []*windowResult{lv, out.idle[0][0]} {
		if p := w.probe; p == nil || p.queries == 0 || p.failed != 0 || p.p99 < p.p50 || p.p50 <= 0 {
			t.Errorf("probe %+v: want queries, none failed, 0 < p50 ≤ p99", p)
		}
	}
	// Every small latency is in its protocol's split, idle ones too.
	for _, w := range []*windowResult{lv, out.idle[0][0]} {
		f, m := w.byProto[protoFlight], w.byProto[protoMySQL]
		if f == nil || m == nil || len(f.d) == 0 || len(m.d) == 0 || len(f.d)+len(m.d) != len(w.small) {
			t.Errorf("small latencies by protocol %+v: want both protocols, %d in all", w.byProto, len(w.small))
		}
	}
	// Every fetch completed in the window, or cut short by its end, is
	// in its protocol's fetch times.
	if f, m := lv.fetchByProto[protoFlight], lv.fetchByProto[protoMySQL]; f == nil || m == nil ||
		int64(len(f.d)+len(m.d)) != lv.ops[opFetch]+int64(lv.fetchCut) || f.p50 <= 0 || m.p99 < m.p50 {
		t.Errorf("fetch times by protocol %+v: want both protocols, %d fetches and %d cut short in all", lv.fetchByProto, lv.ops[opFetch], lv.fetchCut)
	}
	// Where the cores went: the machine's CPUs, with the server, the
	// bench's clients and the probe each using some, the shares within
	// what the machine has.
	for _, w := range []*windowResult{lv, out.idle[0][0]} {
		c := w.cpu
		sum := c.server + c.bench + c.probe + c.other + c.steal + c.unused
		if !w.cpuOK || !c.serverKnown || !c.probeMeasured || c.server <= 0 || c.bench <= 0 || c.probe <= 0 ||
			c.cores < float64(runtime.NumCPU())-0.5 || sum > c.cores+0.2 {
			t.Errorf("cores %+v (read %v): want the server, bench and probe each > 0, and no more than the machine's %d CPUs in all", c, w.cpuOK, runtime.NumCPU())
		}
	}
	wc := out.writes
	if wc == nil || wc.acked == 0 || len(wc.lost) != 0 || len(wc.dups) != 0 {
		t.Errorf("writes %+v: want some acknowledged, none lost or duplicated", wc)
	}

	a := out.abort
	if a == nil || len(a.rounds) != cfg.AbortRounds {
		t.Fatalf("abort step %+v: want %d rounds", a, cfg.AbortRounds)
	}
	for _, s := range a.rounds {
		if s.streams != cfg.AbortStreams || s.other != 0 || s.firstBatch+s.rejected != s.streams {
			t.Errorf("%s: %d streams, %d first batches, %d rejected, %d errors (%v); want %d streams, each read or rejected",
				s.step, s.streams, s.firstBatch, s.rejected, s.other, s.examples, cfg.AbortStreams)
		}
		if !within(s.goroutines, a.base.goroutines, 0.10, 10) {
			t.Errorf("%s: server goroutines %d, baseline %d: the aborted streams' goroutines did not end",
				s.step, s.goroutines, a.base.goroutines)
		}
	}
}

// runLoadSuite runs the load suite and logs its report.
func runLoadSuite(ctx context.Context, t *testing.T, cfg Config) *outcome {
	t.Helper()
	rep, out, err := runSuite(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Print(&b)
	t.Logf("\n%s", b.String())
	return out
}

// checkLevel checks the first level of a run without restarts: its
// clients of each protocol, no error but documented refusals, and every
// client through each of its reads at least once.
func checkLevel(t *testing.T, out *outcome, flight, mysql int) {
	t.Helper()
	lv := out.levels[0][0]
	if got, want := [2]int{lv.flight, lv.mysql}, [2]int{flight, mysql}; got != want {
		t.Errorf("Flight and MySQL clients %v, want %v", got, want)
	}
	if lv.other != 0 {
		t.Errorf("%d errors other than RESOURCE_EXHAUSTED: %s", lv.other, errorSummary(out.levels))
	}
	if len(lv.perClient) != flight+mysql {
		t.Errorf("%d clients' summaries, want %d", len(lv.perClient), flight+mysql)
	}
	for i, c := range lv.perClient {
		for k := opPoint; k <= opFetch; k++ {
			if c.ops[k] == 0 {
				t.Errorf("client %d completed no %s: %s", i, opNames[k], c)
			}
		}
	}
}

// TestLoadServer_Nice checks the server runs, every thread of it, at the
// nice value asked for, and again after a restart; 0 leaves it at the
// test's own.
func TestLoadServer_Nice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bin := testsvc.QuiverBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	own, err := niceOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, nice := range []int{0, 7} {
		srv, err := startServer(ctx, bin, nice, t.TempDir(), "nice-test-password", loadServerFlags())
		if err != nil {
			t.Fatal(err)
		}
		want := own + nice
		for round := range 2 {
			got, err := threadNices(srv.pid())
			if err != nil {
				t.Fatal(err)
			}
			for tid, n := range got {
				if n != want {
					t.Errorf("--server-nice %d, start %d: thread %d runs at nice %d, want %d", nice, round, tid, n, want)
				}
			}
			if round == 0 {
				if _, _, err := srv.restart(ctx, 30*time.Second, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := srv.stop(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// niceOf reads a thread's nice value from /proc (field 19 of its stat).
func niceOf(tid int) (int, error) {
	return niceAt(fmt.Sprintf("/proc/%d/stat", tid))
}

func niceAt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 17 {
		return 0, fmt.Errorf("%s: %d fields after the name", path, len(f))
	}
	return strconv.Atoi(f[16])
}

// threadNices reads the nice value of every thread of process pid.
func threadNices(pid int) (map[int]int, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[int]int{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		n, err := niceAt(dir + "/" + e.Name() + "/stat")
		if err != nil {
			continue // the thread has exited
		}
		out[tid] = n
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no threads under %s", dir)
	}
	return out, nil
}

func TestErrClass(t *testing.T) {
	for _, tt := range []struct {
		name, proto string
		err         error
		class       string
		rejected    bool
	}{
		{"flight exhausted", protoFlight, status.Error(codes.ResourceExhausted, "queue timeout"), "flight ResourceExhausted", true},
		{"flight exhausted wrapped", protoFlight, fmt.Errorf("query: %w", status.Error(codes.ResourceExhausted, "x")), "flight ResourceExhausted", true},
		{"flight unavailable", protoFlight, status.Error(codes.Unavailable, "gone"), "flight Unavailable", false},
		{"flight plain", protoFlight, errors.New("boom"), "flight Unknown", false},
		{"mysql 1040", protoMySQL, &mysql.MySQLError{Number: 1040}, "mysql 1040", true},
		{"mysql 1203", protoMySQL, fmt.Errorf("q: %w", &mysql.MySQLError{Number: 1203}), "mysql 1203", true},
		{"mysql 1105", protoMySQL, &mysql.MySQLError{Number: 1105}, "mysql 1105", false},
		{"mysql bad conn", protoMySQL, mysql.ErrInvalidConn, "mysql invalid connection", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			class, rejected := errClass(tt.proto, tt.err)
			if class != tt.class || rejected != tt.rejected {
				t.Errorf("got %q, %v; want %q, %v", class, rejected, tt.class, tt.rejected)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(d, tt.q); got != tt.want {
			t.Errorf("percentile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := percentile(d[:1], 0.99); got != time.Millisecond {
		t.Errorf("one sample: got %v", got)
	}
	if got := percentile(nil, 0.99); got != 0 {
		t.Errorf("no samples: got %v", got)
	}
}

func TestPicked(t *testing.T) {
	for _, tt := range []struct {
		n     int
		share float64
		want  int
	}{{1000, 0.2, 200}, {60, 0.2, 12}, {1, 0.2, 0}, {64, 0.2, 12}, {300, 0.2, 60}, {10, 0, 0}, {10, 1, 10}} {
		got := 0
		for i := 0; i < tt.n; i++ {
			if picked(i, tt.share) {
				got++
			}
		}
		if got != tt.want {
			t.Errorf("picked of %d at %v: got %d, want %d", tt.n, tt.share, got, tt.want)
		}
	}
}

func TestParseClients(t *testing.T) {
	got, err := ParseClients("1, 64,300,1_000")
	if err != nil || fmt.Sprint(got) != "[1 64 300 1000]" {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-1", "a", "1,,x"} {
		if _, err := ParseClients(bad); err == nil {
			t.Errorf("%q: got no error", bad)
		}
	}
}

func TestCompareWrites(t *testing.T) {
	acked := map[int64]bool{1: true, 2: true, 3: true}
	wc := compareWrites(acked, map[int64]int64{1: 1, 3: 2, 4: 1})
	if fmt.Sprint(wc.lost) != "[2]" || fmt.Sprint(wc.dups) != "[3]" || wc.unacked != 1 || wc.present != 3 || wc.acked != 3 {
		t.Errorf("got %+v; want 2 lost, 3 duplicated, 4 unacknowledged", wc)
	}
}

func TestWindowResult_InRestart(t *testing.T) {
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	res := &windowResult{restarts: []restartSpan{{term: at(10), ready: at(20)}}}
	for _, tt := range []struct {
		name string
		err  time.Time
		ok   time.Time
		want bool
	}{
		{"before", at(5), at(25), false},
		{"while down", at(15), at(25), true},
		{"after, before the client's first success", at(22), at(25), true},
		{"after the client's first success", at(30), at(25), false},
		{"client never came back", at(40), time.Time{}, true},
	} {
		if got := res.inRestart(tt.err, tt.ok); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// blockConn is a load connection whose queries run until they are
// cancelled.
type blockConn struct{}

func (blockConn) query(ctx context.Context, _ string, _ func(int64, int64)) error {
	<-ctx.Done()
	return ctx.Err()
}
func (blockConn) exec(ctx context.Context, _ string) error { <-ctx.Done(); return ctx.Err() }
func (blockConn) close()                                   {}

// TestStuckOps checks that the window's end names a client whose
// operation has run too long, with its goroutine's stack, and no other.
func TestStuckOps(t *testing.T) {
	stuck := newUser(7, protoFlight, target{}, queries{rows: 10}, nil)
	stuck.conn = blockConn{}
	idle := newUser(8, protoMySQL, target{}, queries{rows: 10}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		stuck.do(ctx, &window{from: time.Now()}, opAgg)
	}()
	defer func() { cancel(); <-done }()
	for stuck.opStart.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// A MySQL client stuck on a connection the kernel can show.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	my := newUser(9, protoMySQL, target{}, queries{rows: 10}, nil)
	local := conn.LocalAddr().String()
	my.local.Store(&local)
	my.opNow.Store(int32(opFetch))
	my.opStart.Store(time.Now().UnixNano())

	clients := []*user{stuck, idle, my}
	if s := stuckOps(clients, ln.Addr().String(), time.Hour); s != "" {
		t.Fatalf("nothing has run for an hour, yet:\n%s", s)
	}
	s := stuckOps(clients, ln.Addr().String(), 0)
	for _, want := range []string{"client 7 (flight) has been in aggregate for", "load.blockConn.query",
		"client 9 (mysql) has been in fetch for", "from " + local, "LISTEN", "ESTAB"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "client 8") {
		t.Errorf("report names the idle client:\n%s", s)
	}
}

// funcConn is a load connection whose queries call run.
type funcConn struct{ run func() error }

func (f funcConn) query(context.Context, string, func(int64, int64)) error { return f.run() }
func (f funcConn) exec(context.Context, string) error                      { return f.run() }
func (funcConn) close()                                                    {}

// TestOKAfterRestart checks when a client counts as through again after
// a restart: an operation that succeeds once the old process has gone,
// even if it began before (the new process served it), and not one that
// ended before.
func TestOKAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		goneIn  time.Duration // when the old process exits, from the operation's start
		fail    bool
		through bool
	}{
		{"began before the exit, ended after", 0, false, true},
		{"ended before the exit", time.Hour, false, false},
		{"failed after the exit", 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &window{from: time.Now().Add(-time.Minute)}
			c := newUser(1, protoMySQL, target{}, queries{rows: 10}, nil)
			c.conn = funcConn{run: func() error {
				w.gone.Store(time.Now().Add(tc.goneIn).UnixNano())
				time.Sleep(time.Millisecond)
				if tc.fail {
					return errors.New("connection refused")
				}
				return nil
			}}
			if ok := c.do(context.Background(), w, opPoint); ok == tc.fail {
				t.Fatalf("do reported %v", ok)
			}
			if got := !c.st.okAfterRestart.IsZero(); got != tc.through {
				t.Errorf("through again: %v, want %v", got, tc.through)
			}
		})
	}
}
