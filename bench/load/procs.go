package load

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/mempool"
)

// A loaded window's clients can run in processes of their own
// (Config.ClientProcs), each holding a share of them: `quiver-bench
// load-clients`, which RunClients runs. Clients on machines of their own
// share no Go scheduler; a thousand in one process do, and a small query's
// reply there waits to run behind every other client's decoding (README,
// "Where the bench clients' time goes").
//
// The parent writes each process a spec file (the password goes by
// QUIVER_PASSWORD) and talks to it over its stdin and stdout, one line
// each way:
//
//	worker: "ready"              every client has logged in (or failed to)
//	parent: "<from> <end>"       Unix ns: the measured window; the warm-up
//	                             is the Warm before from
//	worker: "done"               the window ended and its clients stopped;
//	                             the results file is written, and it exits

// ClientsSpec is what one client process runs.
type ClientsSpec struct {
	Flight, MySQL, User      string
	Rows, AggRows, FetchRows int64
	LoginParallel            int
	Warm                     time.Duration
	Clients                  []ClientSpec
}

// ClientSpec is one client of a ClientsSpec.
type ClientSpec struct {
	ID       int
	Proto    string
	SlowRate int64
}

// clientsResult is what one client process measured.
type clientsResult struct {
	Clients []clientJSON
	// Sched are the counts of the process's run-wait histogram over the
	// measured window (schedMetric; its buckets are the runtime's, the
	// same in the parent), CPU its CPU time over it, Ended when its
	// clients had all stopped, MaxRSS its peak RSS and Stuck what
	// stuckOps said at the window's end.
	Sched  []uint64
	CPU    time.Duration
	Ended  time.Time
	MaxRSS int64
	Stuck  string
}

// clientJSON is a clientStats, for the parent.
type clientJSON struct {
	ID                int
	Ops, Done, ErrOps [numOps]int64
	FetchRows, FetchB int64
	Small, Fetches    []time.Duration
	FetchCut          int
	CutShort          int
	Errs              []errJSON
	Examples          map[string]string
	Cut               opKind
	CutAt             time.Duration
}

type errJSON struct {
	At       time.Time
	Class    string
	Rejected bool
}

func toJSON(id int, st *clientStats) clientJSON {
	j := clientJSON{ID: id, Ops: st.ops, Done: st.done, ErrOps: st.errOps, FetchRows: st.fetchRows, FetchB: st.fetchB,
		Small: st.small, Fetches: st.fetches, FetchCut: st.fetchCut, CutShort: st.cutShort,
		Examples: st.examples, Cut: st.cut, CutAt: st.cutAt}
	for _, e := range st.errs {
		j.Errs = append(j.Errs, errJSON{At: e.at, Class: e.class, Rejected: e.rejected})
	}
	return j
}

func (j clientJSON) stats() clientStats {
	st := clientStats{ops: j.Ops, done: j.Done, errOps: j.ErrOps, fetchRows: j.FetchRows, fetchB: j.FetchB,
		small: j.Small, fetches: j.Fetches, fetchCut: j.FetchCut, cutShort: j.CutShort,
		examples: j.Examples, cut: j.Cut, cutAt: j.CutAt}
	if st.examples == nil {
		st.examples = map[string]string{}
	}
	for _, e := range j.Errs {
		st.errs = append(st.errs, opErr{at: e.At, class: e.Class, rejected: e.Rejected})
	}
	return st
}

// RunClients runs the clients of spec as one of bench load's client
// processes, talking to it over in and out (see above), and writes what
// they did to the file outPath.
func RunClients(ctx context.Context, spec ClientsSpec, password string, in io.Reader, out io.Writer, outPath string) error {
	t := target{flight: spec.Flight, mysql: spec.MySQL, user: spec.User, password: password, mem: mempool.New()}
	q := queries{rows: spec.Rows, aggRows: spec.AggRows, fetchRows: spec.FetchRows}
	clients := make([]*user, len(spec.Clients))
	ids := &idSource{} // unused: client processes run no writers
	for i, cs := range spec.Clients {
		if cs.Proto != protoFlight && cs.Proto != protoMySQL {
			return fmt.Errorf("client %d: unknown protocol %q", cs.ID, cs.Proto)
		}
		clients[i] = newUser(cs.ID, cs.Proto, t, q, ids)
		clients[i].slowRate = cs.SlowRate
	}
	defer func() {
		for _, c := range clients {
			c.drop()
		}
	}()
	if err := loginAll(ctx, clients, max(spec.LoginParallel, 1)); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		return err
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read the window from the bench: %w", err)
	}
	var fromNS, endNS int64
	if _, err := fmt.Sscan(line, &fromNS, &endNS); err != nil || endNS < fromNS {
		return fmt.Errorf("bad window %q from the bench: want two Unix ns times, from and end", strings.TrimSpace(line))
	}
	from, end := time.Unix(0, fromNS), time.Unix(0, endNS)
	w := &window{from: from}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var res clientsResult
	timer := time.AfterFunc(time.Until(end), func() {
		res.Stuck = stuckOps(clients, spec.MySQL, stuckAfter)
		cancel()
	})
	defer timer.Stop()
	var wg sync.WaitGroup
	startClients(wctx, clients, w, spec.Warm, &wg)
	sleepCtx(wctx, time.Until(from))
	sched0, cpu0 := readSched(), osfacts.SelfCPU()
	wg.Wait()
	res.Ended = time.Now()
	res.CPU = osfacts.SelfCPU() - cpu0
	res.Sched = readSched().delta(sched0).counts
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, c := range clients {
		c.drop()
		res.Clients = append(res.Clients, toJSON(c.id, &c.st))
	}
	res.MaxRSS = osfacts.SelfPeakRSS()
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(outPath, b, 0o600); err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, "done")
	return err
}

// loginAll logs clients in, parallel at a time; a client that fails
// records the error and dials again in its loop.
func loginAll(ctx context.Context, clients []*user, parallel int) error {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := c.connect(ctx); err != nil && ctx.Err() == nil {
				c.failed(err)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// startClients starts each client's loop at a random moment of the
// warm-up, the warm before w.from, to run until ctx ends; wg counts them.
func startClients(ctx context.Context, clients []*user, w *window, warm time.Duration, wg *sync.WaitGroup) {
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := w.from.Add(-warm)
			if warm > 0 {
				at = at.Add(time.Duration(c.rnd.Int64N(int64(warm))))
			}
			if !sleepCtx(ctx, time.Until(at)) {
				return
			}
			c.run(ctx, w, c.kinds())
		}()
	}
}

// clientProc is one running client process, from the parent's side.
type clientProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   *bufio.Reader
	out     string
	logs    syncbuf.Buffer // its stderr
	clients []*user
}

// startClientProcs splits clients over procs processes (round robin, so
// each gets its share of every protocol) and waits until each has logged
// its clients in.
func (l *suite) startClientProcs(ctx context.Context, clients []*user, procs int) ([]*clientProc, error) {
	procs = min(procs, len(clients))
	shares := make([][]*user, procs)
	for i, c := range clients {
		shares[i%procs] = append(shares[i%procs], c)
	}
	var ps []*clientProc
	fail := func(err error) ([]*clientProc, error) {
		for _, p := range ps {
			p.kill()
		}
		return nil, err
	}
	for i, share := range shares {
		spec := ClientsSpec{Flight: l.target.flight, MySQL: l.target.mysql, User: l.target.user,
			Rows: l.q.rows, AggRows: l.q.aggRows, FetchRows: l.q.fetchRows,
			LoginParallel: max(l.cfg.LoginParallel/procs, 1), Warm: l.cfg.Warmup}
		for _, c := range share {
			spec.Clients = append(spec.Clients, ClientSpec{ID: c.id, Proto: c.proto, SlowRate: c.slowRate})
		}
		p, err := l.startClientProc(ctx, i, spec, share)
		if err != nil {
			return fail(err)
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		if err := p.expect("ready"); err != nil {
			return fail(err)
		}
	}
	return ps, nil
}

func (l *suite) startClientProc(ctx context.Context, i int, spec ClientsSpec, share []*user) (*clientProc, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	specPath := filepath.Join(l.dir, fmt.Sprintf("clients-%d.json", i))
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		return nil, err
	}
	p := &clientProc{out: filepath.Join(l.dir, fmt.Sprintf("clients-%d-out.json", i)), clients: share}
	os.Remove(p.out)
	p.cmd = exec.CommandContext(ctx, l.cfg.BenchBin, "load-clients", "--spec", specPath, "--out", p.out)
	// The password goes by the environment, never the command line.
	p.cmd.Env = append(os.Environ(), "QUIVER_PASSWORD="+l.target.password)
	p.cmd.Stderr = &p.logs
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.lines = bufio.NewReader(stdout)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start client process %d: %w", i, err)
	}
	return p, nil
}

// expect reads the process's next line and checks it is want.
func (p *clientProc) expect(want string) error {
	line, err := p.lines.ReadString('\n')
	if got := strings.TrimSpace(line); got != want {
		p.kill()
		return fmt.Errorf("client process %d: want %q, got %q (%v): %s", p.cmd.Process.Pid, want, got, err, strings.TrimSpace(p.logs.String()))
	}
	return nil
}

// window tells the process the measured window: from, with its warm-up
// before it, to end.
func (p *clientProc) window(from, end time.Time) error {
	_, err := fmt.Fprintf(p.stdin, "%d %d\n", from.UnixNano(), end.UnixNano())
	return err
}

// results waits for the process, once it said "done", to exit, and reads
// its results into its clients' stats; it returns the rest.
func (p *clientProc) results() (*clientsResult, error) {
	p.stdin.Close()
	io.Copy(io.Discard, p.lines) // its report, which the bench does not need
	if err := p.cmd.Wait(); err != nil {
		return nil, fmt.Errorf("client process: %w: %s", err, p.logs.String())
	}
	b, err := os.ReadFile(p.out)
	if err != nil {
		return nil, fmt.Errorf("client process results: %w", err)
	}
	os.Remove(p.out)
	return p.apply(b)
}

// apply reads a client process's results file and gives each of its
// clients its stats. Every client must be there, and no other.
func (p *clientProc) apply(b []byte) (*clientsResult, error) {
	var res clientsResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("client process results: %w", err)
	}
	byID := map[int]*user{}
	for _, c := range p.clients {
		byID[c.id] = c
	}
	for _, j := range res.Clients {
		c := byID[j.ID]
		if c == nil {
			return nil, fmt.Errorf("client process results: unknown client %d", j.ID)
		}
		c.st = j.stats()
		delete(byID, j.ID)
	}
	if len(byID) > 0 {
		return nil, fmt.Errorf("client process results: %d of its clients missing", len(byID))
	}
	return &res, nil
}

// waitClientProcs waits for a window's client processes to finish, reads
// their clients' stats, and sets the window's duration (from from), its
// run wait (the processes' histograms summed), its stuck operations, and
// cpu1, the CPU counters at its end with the processes' CPU time over the
// window counted as the bench's.
func (l *suite) waitClientProcs(procs []*clientProc, from time.Time, sched0 schedHist, cpu1 *cpuSnap, res *windowResult) error {
	for _, p := range procs {
		if err := p.expect("done"); err != nil {
			return err
		}
	}
	*cpu1 = takeCPU(l.srv.pid())
	hist := sched0.delta(sched0) // the runtime's buckets, no counts
	histOK := len(hist.counts) > 0
	var ended time.Time
	var cpu time.Duration
	for _, p := range procs {
		r, err := p.results()
		if err != nil {
			return err
		}
		cpu += r.CPU
		if r.Ended.After(ended) {
			ended = r.Ended
		}
		histOK = histOK && hist.add(r.Sched)
		l.clientRSS = max(l.clientRSS, r.MaxRSS)
		res.stuck += r.Stuck
	}
	cpu1.self += cpu
	res.dur = ended.Sub(from)
	if histOK {
		res.sched50, res.sched99 = hist.quantile(0.5), hist.quantile(0.99)
	}
	return nil
}

// kill ends the process if it has not exited yet.
func (p *clientProc) kill() {
	if p.cmd.Process != nil && p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}
