package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// window is what a window's clients share: when the server last
// restarted.
type window struct {
	// gone is when the old process of the last restart had exited (Unix
	// ns; 0 if none): whatever succeeds after it, the new process served.
	gone atomic.Int64
	// from is when the measured window starts, after the warm-up:
	// operations that end before it are not counted (errors and
	// acknowledged writes are, whenever they happen).
	from time.Time
}

// measured reports whether an operation that ended at t counts in the
// window's figures.
func (w *window) measured(t time.Time) bool { return !t.Before(w.from) }

// oldGone is when the last restart's old process had exited, or zero.
func (w *window) oldGone() time.Time {
	if ns := w.gone.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// restartSpan is one server restart: SIGTERM sent, and the new process
// ready.
type restartSpan struct{ term, ready time.Time }

// windowResult is what one window measured.
type windowResult struct {
	clients, flight, mysql int
	ramp, dur              time.Duration
	// The server's VmRSS once every client had logged in, and its peak
	// from the first login to the last connection closed.
	rssConnected, peakRSS int64

	ops       [numOps]int64
	fetchRows int64
	fetchB    int64
	small     []time.Duration // sorted
	p50, p99  time.Duration
	// sched50 and sched99 are how long the bench process's goroutines
	// waited to run over the measured window (schedMetric).
	sched50, sched99 time.Duration
	// byProto are the small latencies of each protocol's clients, and
	// fetchByProto their fetch times (fetchCut of them cut short).
	byProto      map[string]*latencies
	fetchByProto map[string]*latencies
	fetchCut     int
	// probe is what the probe process measured over the window, if one
	// ran.
	probe *probeResult
	// cpu is where the machine's cores went over the window (cpuOK false
	// where the counters could not be read).
	cpu   cpuShare
	cpuOK bool
	// cutShort of the small latencies are of queries the window's end
	// cut short, counted with the time they had taken.
	cutShort int
	// Errors: rejected are the documented overload refusals, other the
	// rest; errors from a restart until a client's first success after it
	// are duringRestart, apart from both.
	rejected, other, duringRestart int
	classes                        map[string]int // other and rejected, by class
	examples                       map[string]string
	kills                          int
	restarts                       []restartSpan
	// notReconnected are the clients with no success after the last
	// restart; who says which, with their last error.
	notReconnected    int
	notReconnectedWho []string
	// stuck describes the operations that had run for more than
	// stuckAfter when the window ended (stuckOps), or is "".
	stuck string
	// restartClasses are the errors during restarts, by class.
	restartClasses map[string]int
	acked          []int64
	// perClient is what each client completed, for tests.
	perClient []clientSummary
}

// clientSummary is one client's completed operations.
type clientSummary struct {
	proto  string
	writer bool
	// ops are the operations completed, warm-up included; errOps those
	// that failed.
	ops    [numOps]int64
	errOps [numOps]int64
	// cut is what the window's end interrupted, cutAt how long it had run.
	cut   opKind
	cutAt time.Duration
}

// String says what the client did: its operations completed and failed,
// and the one the window's end cut short.
func (s clientSummary) String() string {
	var b strings.Builder
	b.WriteString(s.proto)
	if s.writer {
		b.WriteString(" writer")
	}
	for k := range numOps {
		if s.ops[k]+s.errOps[k] > 0 {
			fmt.Fprintf(&b, ", %s %d ok", opNames[k], s.ops[k])
			if s.errOps[k] > 0 {
				fmt.Fprintf(&b, " %d failed", s.errOps[k])
			}
		}
	}
	if s.cutAt > 0 {
		fmt.Fprintf(&b, "; the window ended %.2fs into a %s", s.cutAt.Seconds(), opNames[s.cut])
	}
	return b.String()
}

// rate is n per second of the window.
func (w *windowResult) rate(n int64) float64 {
	if w.dur <= 0 {
		return 0
	}
	return float64(n) / w.dur.Seconds()
}

// window logs clients in (LoginParallel at a time), then runs them all
// for d and gathers what they did. In loaded windows the chaos step runs
// alongside.
func (l *suite) window(ctx context.Context, clients []*user, d time.Duration, loaded bool) (*windowResult, error) {
	res := &windowResult{clients: len(clients), classes: map[string]int{}, examples: map[string]string{}, restartClasses: map[string]int{}}
	for _, c := range clients {
		if c.proto == protoMySQL {
			res.mysql++
		} else {
			res.flight++
		}
	}
	defer func() {
		for _, c := range clients {
			c.drop()
		}
	}()

	// The peak covers the whole level: logins, window and teardown.
	sampler := l.srv.sampleRSS(100 * time.Millisecond)
	defer sampler.end()

	// Ramp up: log every client in before the window starts, so that the
	// window measures queries and not a login storm. In client processes
	// (ClientProcs), each logs its own share in.
	start := time.Now()
	var procs []*clientProc
	if loaded && l.cfg.ClientProcs > 1 {
		var err error
		if procs, err = l.startClientProcs(ctx, clients, l.cfg.ClientProcs); err != nil {
			return nil, err
		}
		defer func() {
			for _, p := range procs {
				p.kill()
			}
		}()
	} else if err := loginAll(ctx, clients, l.cfg.LoginParallel); err != nil {
		return nil, err
	}
	res.ramp = time.Since(start)
	res.rssConnected, _ = l.srv.memory()

	var warm time.Duration
	if loaded {
		warm = l.cfg.Warmup
	}
	w := &window{from: time.Now().Add(warm)}
	// The window ends by cancellation, not a deadline: a deadline would
	// travel to the server as grpc-timeout, and the server's expiry of it
	// could reach a client before its own, as an error.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Before it ends the window, it notes any operation that has run
	// for far too long, while it still runs.
	var stuck atomic.Pointer[string]
	end := time.AfterFunc(warm+d, func() {
		_, my := l.srv.addrs()
		if s := stuckOps(clients, my, stuckAfter); s != "" {
			stuck.Store(&s)
		}
		cancel()
	})
	defer end.Stop()
	var wg sync.WaitGroup
	for _, p := range procs {
		if err := p.window(w.from, w.from.Add(d)); err != nil {
			return nil, fmt.Errorf("client process: %w", err)
		}
	}
	if procs == nil {
		startClients(wctx, clients, w, warm, &wg)
	}
	if !sleepCtx(wctx, time.Until(w.from)) {
		wg.Wait()
		return nil, ctx.Err()
	}
	// The window is measured from w.from, where the clients start
	// counting, not from when this goroutine woke up after it: a busy
	// machine wakes it late, and a window measured from then came out
	// shorter than the clients' (7.9988 s of 8 s in a CI run).
	var probe *probeProc
	if loaded && l.cfg.Probe {
		var err error
		if probe, err = l.startProbe(ctx, w.from.Add(d)); err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
	}
	var chaos chaosRun
	if loaded {
		chaos.start(wctx, l, w, clients)
	}
	sched, cpu0 := readSched(), takeCPU(l.srv.pid())
	var cpu1 cpuSnap
	if procs != nil {
		if err := l.waitClientProcs(procs, w.from, sched, &cpu1, res); err != nil {
			return nil, err
		}
	} else {
		wg.Wait()
		res.dur = time.Since(w.from)
		cpu1 = takeCPU(l.srv.pid())
		now := readSched()
		res.sched50, res.sched99 = now.since(sched, 0.5), now.since(sched, 0.99)
	}
	if p := stuck.Load(); p != nil {
		res.stuck = *p + res.stuck
	}
	if err := chaos.wait(); err != nil {
		return nil, err
	}
	if probe != nil {
		var err error
		if res.probe, err = probe.wait(); err != nil {
			return nil, err
		}
	}
	res.cpu, res.cpuOK = cpu1.share(cpu0, res.probe)
	for _, c := range clients {
		c.drop()
	}
	res.peakRSS = sampler.end()
	res.kills, res.restarts = chaos.kills, chaos.restarts
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.gather(clients)
	return res, nil
}

// kinds are the operations of the client's loop.
func (c *user) kinds() []opKind {
	switch {
	case c.idle:
		return []opKind{opPoint, opAgg}
	case c.writer:
		// A write after each read, so that writes are in flight whenever
		// the server is stopped.
		return []opKind{opPoint, opWrite, opAgg, opWrite, opFetch, opWrite}
	}
	return []opKind{opPoint, opAgg, opFetch}
}

// gather sums the clients' stats into res.
func (res *windowResult) gather(clients []*user) {
	var last restartSpan
	if n := len(res.restarts); n > 0 {
		last = res.restarts[n-1]
	}
	for _, c := range clients {
		st := &c.st
		for k := range st.ops {
			res.ops[k] += st.ops[k]
		}
		res.fetchRows += st.fetchRows
		res.fetchB += st.fetchB
		res.small = append(res.small, st.small...)
		res.cutShort += st.cutShort
		res.acked = append(res.acked, st.acked...)
		sum := clientSummary{proto: c.proto, writer: c.writer,
			ops: st.done, errOps: st.errOps, cut: st.cut, cutAt: st.cutAt}
		res.perClient = append(res.perClient, sum)
		if !last.ready.IsZero() && st.okAfterRestart.IsZero() {
			res.notReconnected++
			who := fmt.Sprintf("client %d (%s", c.id, c.proto)
			if c.slowRate > 0 {
				who += ", slow"
			}
			who += ")"
			if n := len(st.errs); n > 0 {
				e := st.errs[n-1]
				who += fmt.Sprintf(": last error %s at ready%+.1fs: %s", e.class, e.at.Sub(last.ready).Seconds(), st.examples[e.class])
			}
			who += "; in all: " + sum.String()
			res.notReconnectedWho = append(res.notReconnectedWho, who)
		}
		for _, e := range st.errs {
			if res.inRestart(e.at, st.okAfterRestart) {
				res.duringRestart++
				res.restartClasses[e.class]++
				continue
			}
			if e.rejected {
				res.rejected++
			} else {
				res.other++
			}
			res.classes[e.class]++
			if _, ok := res.examples[e.class]; !ok {
				res.examples[e.class] = st.examples[e.class]
			}
		}
	}
	slices.Sort(res.small)
	res.p50, res.p99 = percentile(res.small, 0.50), percentile(res.small, 0.99)
	res.byProto = map[string]*latencies{}
	for _, c := range clients {
		res.proto(c.proto).add(c.st.small)
		res.fetchProto(c.proto).add(c.st.fetches)
		res.fetchCut += c.st.fetchCut
	}
	res.sortLatencies()
}

// sortLatencies sorts the latencies by protocol and takes their
// percentiles.
func (res *windowResult) sortLatencies() {
	for _, l := range res.byProto {
		l.sort()
	}
	for _, l := range res.fetchByProto {
		l.sort()
	}
}

// latencies are sorted durations (small queries' or fetches') and their
// percentiles.
type latencies struct {
	d        []time.Duration
	p50, p99 time.Duration
}

func (l *latencies) add(d []time.Duration) { l.d = append(l.d, d...) }

func (l *latencies) sort() {
	slices.Sort(l.d)
	l.p50, l.p99 = percentile(l.d, 0.50), percentile(l.d, 0.99)
}

// fetchProto is the fetch times of proto's clients, created empty.
func (res *windowResult) fetchProto(p string) *latencies { return latenciesOf(&res.fetchByProto, p) }

// proto is the small latencies of proto's clients, created empty.
func (res *windowResult) proto(p string) *latencies { return latenciesOf(&res.byProto, p) }

// latenciesOf returns (*m)[p], created empty, with *m, when missing.
func latenciesOf(m *map[string]*latencies, p string) *latencies {
	if *m == nil {
		*m = map[string]*latencies{}
	}
	l := (*m)[p]
	if l == nil {
		l = &latencies{}
		(*m)[p] = l
	}
	return l
}

// inRestart reports whether an error at t came from a restart: after its
// SIGTERM and before the client's first success once the server was back
// (ok; zero if it never succeeded again).
func (res *windowResult) inRestart(t, ok time.Time) bool {
	for _, r := range res.restarts {
		if t.Before(r.term) {
			continue
		}
		if !t.After(r.ready) || ok.IsZero() || t.Before(ok) {
			return true
		}
	}
	return false
}

// percentile is the nearest-rank q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// mergeWindows combines windows run one after another (the idle
// window's protocols) into one result.
func mergeWindows(ws []*windowResult) *windowResult {
	out := &windowResult{classes: map[string]int{}, examples: map[string]string{}}
	for _, w := range ws {
		out.clients += w.clients
		out.flight += w.flight
		out.mysql += w.mysql
		out.dur += w.dur
		out.ramp += w.ramp
		for k := range w.ops {
			out.ops[k] += w.ops[k]
		}
		out.small = append(out.small, w.small...)
		for p, l := range w.byProto {
			out.proto(p).add(l.d)
		}
		for p, l := range w.fetchByProto {
			out.fetchProto(p).add(l.d)
		}
		out.fetchCut += w.fetchCut
		out.cutShort += w.cutShort
		out.rejected += w.rejected
		out.other += w.other
		for k, v := range w.classes {
			out.classes[k] += v
		}
		for k, v := range w.examples {
			out.examples[k] = v
		}
		out.peakRSS = max(out.peakRSS, w.peakRSS)
		out.perClient = append(out.perClient, w.perClient...)
	}
	slices.Sort(out.small)
	out.p50, out.p99 = percentile(out.small, 0.50), percentile(out.small, 0.99)
	out.sortLatencies()
	return out
}

// chaosRun is the chaos step of one window: it kills clients mid-fetch
// and restarts the server.
type chaosRun struct {
	wg       sync.WaitGroup
	mu       sync.Mutex
	err      error
	kills    int
	restarts []restartSpan
}

func (ch *chaosRun) start(ctx context.Context, l *suite, w *window, clients []*user) {
	cfg := l.cfg.Chaos
	if cfg.KillEvery > 0 {
		ch.wg.Add(1)
		go func() {
			defer ch.wg.Done()
			r := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
			t := time.NewTicker(cfg.KillEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				// A few tries to find a client that is mid-fetch.
				for try := 0; try < 20; try++ {
					if c := clients[r.IntN(len(clients))]; c.slowRate == 0 && c.kill() {
						ch.mu.Lock()
						ch.kills++
						ch.mu.Unlock()
						break
					}
				}
			}
		}()
	}
	if cfg.RestartAt > 0 {
		ch.wg.Add(1)
		go func() {
			defer ch.wg.Done()
			sleepCtx(ctx, cfg.RestartAt)
			if ctx.Err() != nil {
				return
			}
			l.log.Info("load: restarting the server", "drain", cfg.Drain)
			// The restart outlives the window if need be: the server
			// must be back for what follows.
			term, ready, err := l.srv.restart(context.WithoutCancel(ctx), cfg.Drain+time.Minute,
				func(t time.Time) { w.gone.Store(t.UnixNano()) })
			ch.mu.Lock()
			defer ch.mu.Unlock()
			if err != nil {
				ch.err = err
				return
			}
			ch.restarts = append(ch.restarts, restartSpan{term, ready})
			l.log.Info("load: server back", "down", ready.Sub(term).Round(time.Millisecond))
		}()
	}
}

// wait waits for the chaos goroutines and returns a failed restart's
// error.
func (ch *chaosRun) wait() error {
	ch.wg.Wait()
	if ch.err != nil {
		return fmt.Errorf("chaos: %w", ch.err)
	}
	return nil
}
