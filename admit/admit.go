package admit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Lane is a class of queries with its own share of the server.
type Lane int

const (
	// Small is for queries estimated to return and scan few rows: point
	// lookups, small aggregates, catalog queries.
	Small Lane = iota
	// Bulk is for everything else: large fetches, scans, unknown queries.
	Bulk
)

func (l Lane) String() string {
	if l == Small {
		return "small"
	}
	return "bulk"
}

// ParseLane reads a lane's String.
func ParseLane(s string) (Lane, bool) {
	switch s {
	case "small":
		return Small, true
	case "bulk":
		return Bulk, true
	}
	return Bulk, false
}

// Config sizes a Controller. Zero fields take the defaults given.
type Config struct {
	// Running is how many queries may execute at once. Default: twice the
	// CPUs Go may use, at least 4.
	Running int
	// Reserved is how many of the Running slots only small queries may
	// take. Default: half of Running.
	Reserved int
	// Open is how many results may be open at once, running or paused.
	// Default, and at most: OpenPerRun times Running (Budget derives a
	// lower bound from a memory budget).
	Open int
	// Queue is how many queries may wait at once; one more is refused at
	// once. Default: 4096.
	Queue int
	// Timeout is how long a query waits to start before it is refused.
	// Default: 30 seconds.
	Timeout time.Duration
	// YieldMax is how long a bulk result waits, before each batch, for
	// the small queries in flight to finish (see Urgent). 0, the
	// default: bulk results never wait.
	YieldMax time.Duration
	// SmallHold is the most run time a query holds a small-lane slot:
	// past it the query is demoted to the bulk lane (it goes on running,
	// counted there), and its small slot is free for small queries
	// again. Default 250 ms, the classifier's SmallTime: a query that
	// runs longer was not small, whatever its estimate said. Negative:
	// never demote.
	SmallHold time.Duration
}

// OpenPerRun bounds the open results per run slot. Results beyond the
// run slots are paused, waiting for their clients to read: a few per slot
// cover slow readers, while many more only interleave streams. In
// quiver-bench load at 1,000 clients, 192 open bulk results (the memory
// budget's bound) moved 1.4M rows/s against 10M at 64 clients.
const OpenPerRun = 8

// withDefaults fills the zero fields and keeps every bound usable.
func (c Config) withDefaults() Config {
	if c.Running <= 0 {
		c.Running = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if c.Reserved <= 0 {
		c.Reserved = c.Running / 2
	}
	c.Reserved = min(c.Reserved, c.Running-1)
	if c.Open <= 0 || c.Open > OpenPerRun*c.Running {
		c.Open = OpenPerRun * c.Running
	}
	c.Open = max(c.Open, c.Running)
	if c.Queue <= 0 {
		c.Queue = 4096
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.SmallHold == 0 {
		c.SmallHold = 250 * time.Millisecond
	}
	return c
}

// Controller admits queries to the two lanes. Its methods are safe for
// concurrent use. A nil *Controller admits everything at once.
type Controller struct {
	cfg Config

	mu      sync.Mutex
	running [2]int
	open    [2]int
	// Per lane and class (see classOf), the slots held, and the run time
	// used lately.
	runningBy, openBy [2]classCounts
	usage             [2]classUsage
	// demotedBy counts, per class, the demoted queries running (see
	// demote).
	demotedBy classCounts
	// Per lane, the paused queries waiting to run again (served first)
	// and the new queries waiting to start, fairly between classes.
	resuming [2]*fairQueue
	starting [2]*fairQueue
	queued   int
	idle     func() // called when the last open result is done
	// active are the tracked statements (see Track), by ID.
	active map[uint64]*entry
	// urgent counts the small work in flight, which bulk results yield
	// to; calm, when not nil, is closed when it drops to zero (under mu).
	urgent atomic.Int64
	calm   chan struct{}
}

// New returns a Controller sized by cfg.
func New(cfg Config) *Controller {
	c := &Controller{cfg: cfg.withDefaults()}
	for l := range 2 {
		c.resuming[l], c.starting[l] = &fairQueue{}, &fairQueue{}
		c.runningBy[l], c.openBy[l], c.usage[l] = classCounts{}, classCounts{}, classUsage{}
	}
	c.demotedBy = classCounts{}
	return c
}

// Config is the controller's configuration, defaults filled in.
func (c *Controller) Config() Config { return c.cfg }

// OnIdle sets a function called, on its own goroutine, each time the last
// open result is done. The server returns idle memory to the system there.
func (c *Controller) OnIdle(fn func()) {
	c.mu.Lock()
	c.idle = fn
	c.mu.Unlock()
}

// Stats are a controller's counts at one moment, indexed by Lane.
type Stats struct {
	Running, Open [2]int
	Queued        int
	// Demoted is how many of the bulk lane's running queries were
	// admitted small and demoted (see Config.SmallHold).
	Demoted int
}

// Stats returns the current counts.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := 0
	for _, n := range c.demotedBy {
		d += n
	}
	return Stats{Running: c.running, Open: c.open, Queued: c.queued, Demoted: d}
}

// Idle reports whether no result is open and no query waits.
func (c *Controller) Idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[Small]+c.open[Bulk] == 0 && c.queued == 0
}

// ErrBusy is wrapped by every *BusyError.
var ErrBusy = errors.New("server busy")

// BusyError says a query was refused because the server was at its
// bounds: it waited the queue timeout, or the queue was full.
type BusyError struct {
	Lane    Lane
	Waited  time.Duration
	Running int // queries running when it was refused
	Open    int // results open
	Queued  int // queries waiting
	Full    bool
	cfg     Config
}

func (e *BusyError) Error() string {
	why := fmt.Sprintf("the query waited %s (the queue timeout) for its turn", e.Waited.Round(time.Millisecond))
	if e.Full {
		why = fmt.Sprintf("%d queries are already waiting (the queue's limit)", e.Queued)
	}
	return fmt.Sprintf("server busy: %s; %d of %d queries running, %d of %d results open, %d waiting. "+
		"Retry later with backoff, or ask the operator to raise --max-running, --memory or --queue-timeout",
		why, e.Running, e.cfg.Running, e.Open, e.cfg.Open, e.Queued)
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// waiter is a query waiting for a slot.
type waiter struct {
	slot  *Slot
	lane  Lane
	class string
	open  bool // it needs an open slot too (a new query)
	ready chan struct{}
	done  bool // granted, under mu
}

// Admit waits until a query of lane may start, and returns its slot,
// running. It returns a *BusyError when the query did not get its turn
// within the queue timeout or the queue was full, and ctx's error when
// ctx ended first. The caller must call the slot's Done.
//
// A small query of a class that has as many demoted queries running as
// the small lane keeps slots (Config.Reserved) goes in the bulk lane: one
// user whose queries look small and are not cannot take the small lane
// again and again.
func (c *Controller) Admit(ctx context.Context, lane Lane) (*Slot, error) {
	s := &Slot{c: c, running: true, start: time.Now()}
	s.lane.Store(int32(lane))
	if c == nil {
		return s, nil
	}
	s.class = classOf(ctx)
	if lane == Small && c.overDemoted(s.class) {
		lane = Bulk
		s.lane.Store(int32(lane))
	}
	c.track(ctx, s)
	c.mu.Lock()
	if c.mayStart(lane) && c.starting[lane].Len() == 0 {
		c.take(s, true)
		c.mu.Unlock()
		s.granted()
		return s, nil
	}
	if c.queued >= c.cfg.Queue {
		err := c.busy(lane, 0, true)
		c.untrack(s)
		c.mu.Unlock()
		noteRefused(lane, "queue_full")
		return nil, err
	}
	w := &waiter{slot: s, lane: lane, class: s.class, open: true, ready: make(chan struct{})}
	e := c.starting[lane].push(w)
	c.queued++
	queuedG[lane].Inc()
	c.mu.Unlock()

	t := time.NewTimer(c.cfg.Timeout)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		s.granted()
		return s, nil
	case <-t.C:
		err = ErrBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.mu.Lock()
	if w.done { // granted as the wait ended: take it
		c.mu.Unlock()
		s.granted()
		return s, nil
	}
	c.untrack(s)
	c.starting[lane].remove(w, e)
	c.queued--
	queuedG[lane].Dec()
	if errors.Is(err, ErrBusy) {
		err = c.busy(lane, time.Since(s.start), false)
		noteRefused(lane, "timeout")
	} else {
		noteRefused(lane, "canceled")
	}
	c.mu.Unlock()
	return nil, err
}

// granted starts a newly admitted slot running.
func (s *Slot) granted() {
	s.runSince = time.Now()
	s.setState(Running)
	noteAdmitted(s.Lane(), s.runSince.Sub(s.start))
	s.setUrgent(true)
}

// setUrgent counts a small query as small work in flight (see Urgent)
// while it runs; paused for its client, or done, it is not, so a client
// that leaves a small result unread cannot hold bulk results back.
// A demoted query stops counting at once (demote).
func (s *Slot) setUrgent(on bool) {
	if on && s.Lane() != Small || s.c == nil || s.c.cfg.YieldMax <= 0 {
		return
	}
	if !s.urgent.CompareAndSwap(!on, on) {
		return
	}
	if on {
		s.c.urgent.Add(1)
	} else {
		s.c.endUrgent()
	}
}

// AdmitSQL is Admit in the lane cls picks for k (see Classifier.Lane;
// explain may be nil). A nil controller admits at once.
func (c *Controller) AdmitSQL(ctx context.Context, cls *Classifier, k Key, explain func() ([]byte, error)) (*Slot, error) {
	if c == nil {
		return nil, nil
	}
	NoteSQL(ctx, k.SQL)
	planned := c.Urgent() // classifying is small work, whatever the lane
	lane := cls.Lane(ctx, k, explain)
	planned()
	return c.Admit(ctx, lane)
}

// busy builds a BusyError from the current counts; c.mu is held.
func (c *Controller) busy(lane Lane, waited time.Duration, full bool) *BusyError {
	return &BusyError{Lane: lane, Waited: waited, Full: full, cfg: c.cfg,
		Running: c.running[Small] + c.running[Bulk], Open: c.open[Small] + c.open[Bulk], Queued: c.queued}
}

// mayRun reports whether a query of lane may take a run slot; c.mu is
// held. The small lane keeps its Reserved slots even when demoted
// queries hold more than the bulk lane's share.
func (c *Controller) mayRun(lane Lane) bool {
	total := c.running[Small] + c.running[Bulk]
	if lane == Small {
		return total < c.cfg.Running || c.running[Small] < c.cfg.Reserved
	}
	return total < c.cfg.Running && c.running[Bulk] < c.cfg.Running-c.cfg.Reserved
}

// mayStart reports whether a new query of lane may take a run slot and an
// open slot; c.mu is held.
func (c *Controller) mayStart(lane Lane) bool {
	if !c.mayRun(lane) {
		return false
	}
	total := c.open[Small] + c.open[Bulk]
	if total >= c.cfg.Open {
		return false
	}
	return lane == Small || c.open[Bulk] < c.openLimit(Bulk)
}

// openLimit is how many results lane may hold open: all of them for the
// small lane, all but the small lane's quarter for the bulk lane.
func (c *Controller) openLimit(lane Lane) int {
	if lane == Bulk {
		return c.cfg.Open - c.cfg.Open/4
	}
	return c.cfg.Open
}

// grant hands free slots to waiters: the small lane first, and in each
// lane paused queries before new ones; c.mu is held.
func (c *Controller) grant() {
	for _, lane := range [2]Lane{Small, Bulk} {
		for c.resuming[lane].Len() > 0 && c.mayRun(lane) {
			w := c.resuming[lane].pop(c.runningBy[lane].rank)
			c.take(w.slot, false)
			w.done = true
			close(w.ready)
		}
		for c.starting[lane].Len() > 0 && c.mayStart(lane) {
			w := c.starting[lane].pop(c.startRank(lane))
			c.take(w.slot, true)
			c.queued--
			queuedG[lane].Dec()
			w.done = true
			close(w.ready)
		}
	}
	for _, l := range [2]Lane{Small, Bulk} {
		runningG[l].Set(float64(c.running[l]))
		openG[l].Set(float64(c.open[l]))
	}
}

// take counts s's run slot, and its open one when open; c.mu is held.
// A small slot's demotion is timed from here (see demote).
func (c *Controller) take(s *Slot, open bool) {
	lane := s.Lane()
	c.running[lane]++
	c.runningBy[lane].add(s.class, 1)
	if open {
		c.open[lane]++
		c.openBy[lane].add(s.class, 1)
	}
	if s.demoted {
		c.demotedBy.add(s.class, 1)
	}
	s.counted, s.countedSince = true, time.Now()
	if lane == Small && c.cfg.SmallHold > 0 {
		// t is set under c.mu, and demote reads it under c.mu.
		var t *time.Timer
		t = time.AfterFunc(max(c.cfg.SmallHold-s.smallRan, 0), func() { c.demote(s, &t) })
		s.demoteTimer = t
	}
}

// stopRunning gives back s's run slot, which it ran for ran; c.mu is
// held.
func (c *Controller) stopRunning(s *Slot, ran time.Duration) {
	lane := s.Lane()
	c.running[lane]--
	c.runningBy[lane].add(s.class, -1)
	c.usage[lane].charge(s.class, ran, time.Now())
	if s.demoted {
		c.demotedBy.add(s.class, -1)
	}
	s.counted = false
	if s.demoteTimer != nil {
		s.demoteTimer.Stop()
		s.demoteTimer = nil
		s.smallRan += time.Since(s.countedSince)
	}
}

// overShare ranks a class after every class with less than half a
// lane's open results: no class runs for a billion seconds.
const overShare = 1e9

// startRank ranks the classes of lane's new queries (see fairQueue.pop):
// by their run time lately, after every class that holds less than half
// the lane's open results; c.mu is held.
func (c *Controller) startRank(lane Lane) func(class string) float64 {
	now, limit := time.Now(), c.openLimit(lane)
	return func(class string) float64 {
		r := c.usage[lane].of(class, now)
		if 2*c.openBy[lane].get(class) >= limit {
			r += overShare
		}
		return r
	}
}

// Slot is one admitted query's hold on the server. It is used by the
// query's own goroutines, one at a time.
type Slot struct {
	c *Controller
	// lane changes once at most, from small to bulk (demote), under
	// c.mu; its owner reads it without.
	lane     atomic.Int32
	class    string // see classOf
	running  bool
	done     bool
	start    time.Time     // admission asked
	runSince time.Time     // the current run began
	ran      time.Duration // time held running, before runSince
	entry    *entry        // nil unless tracked
	urgent   atomic.Bool   // counted in c.urgent (see setUrgent)
	// Under c.mu: whether the slot's run slot is counted, since when,
	// the run time it held in the small lane before, the timer that
	// demotes it, and whether it was demoted.
	counted      bool
	countedSince time.Time
	smallRan     time.Duration
	demoteTimer  *time.Timer
	demoted      bool
	// A bulk slot's last yield: when it ended and how long it waited.
	yieldEnd  time.Time
	yieldWait time.Duration
	// gosched is when a bulk slot last yielded its processor (Resume).
	gosched time.Time
}

// goschedEvery is how often at most a bulk query yields its processor in
// Resume: a Flight result resumes once a batch, every few milliseconds,
// but a MySQL result once every 512 rows, and yielding that often put
// its goroutine at the back of the run queue thousands of times a fetch.
const goschedEvery = 2 * time.Millisecond

// Lane is the slot's lane: the one it was admitted to, or bulk once it
// was demoted.
func (s *Slot) Lane() Lane { return Lane(s.lane.Load()) }

// Pause gives the run slot back while the query waits for its client.
// The open slot is kept. Pausing a paused or done slot does nothing.
func (s *Slot) Pause() {
	if s == nil || !s.running || s.done {
		return
	}
	s.running = false
	run := time.Since(s.runSince)
	s.ran += run
	s.setState(Sending)
	if s.c == nil {
		return
	}
	s.setUrgent(false)
	s.c.mu.Lock()
	s.c.stopRunning(s, run)
	s.c.grant()
	s.c.mu.Unlock()
}

// Resume takes a run slot again after Pause, waiting for one as long as
// ctx allows (a query already running is not refused for being slow: its
// client read, and it must finish). Paused queries are served before new
// ones of their lane. Callers resume before each batch, so a bulk query
// first yields there to small work in flight (see Urgent), running or
// not.
//
// A bulk query also yields its processor there, at most every
// goschedEvery, to the goroutines waiting to run (runtime.Gosched).
// Turning a batch of DuckDB's vectors into Arrow takes milliseconds of
// CPU, and without the yield the producing goroutine went on to the next
// batch at once, keeping its processor for up to Go's 10 ms time slice
// while the goroutines that send results and answer small queries waited
// behind it (README: Many clients).
func (s *Slot) Resume(ctx context.Context) error {
	if s == nil || s.done {
		return nil
	}
	if s.Lane() == Bulk {
		if now := time.Now(); now.Sub(s.gosched) >= goschedEvery {
			runtime.Gosched()
			s.gosched = now
		}
	}
	if err := s.yield(ctx); err != nil {
		return err
	}
	if s.running {
		return nil
	}
	if s.c == nil {
		s.running, s.runSince = true, time.Now()
		return nil
	}
	c := s.c
	c.mu.Lock()
	// A paused slot is not demoted (demote), so its lane holds until it
	// runs again.
	lane := s.Lane()
	if c.resuming[lane].Len() == 0 && c.mayRun(lane) {
		c.take(s, false)
		c.mu.Unlock()
		s.resumed()
		return nil
	}
	w := &waiter{slot: s, lane: lane, class: s.class, ready: make(chan struct{})}
	e := c.resuming[lane].push(w)
	c.mu.Unlock()
	select {
	case <-w.ready:
		s.resumed()
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.done {
		s.resumed()
		return nil
	}
	c.resuming[lane].remove(w, e)
	return ctx.Err()
}

// resumed marks a paused slot running again.
func (s *Slot) resumed() {
	s.running, s.runSince = true, time.Now()
	s.setState(Running)
	s.setUrgent(true)
}

// Ran is how long the query has held a run slot so far.
func (s *Slot) Ran() time.Duration {
	if s == nil {
		return 0
	}
	if s.running && !s.done {
		return s.ran + time.Since(s.runSince)
	}
	return s.ran
}

// Finish gives back the query's slots (Done) and tells cls what k did:
// the rows it returned and the time it ran. A nil slot does nothing.
func (s *Slot) Finish(cls *Classifier, k Key, rows int64) {
	if s == nil {
		return
	}
	s.Done()
	cls.Observe(k, rows, s.Ran())
}

// Done gives back the query's slots. Calling it again does nothing.
func (s *Slot) Done() {
	if s == nil || s.done {
		return
	}
	var run time.Duration
	if s.running {
		run = time.Since(s.runSince)
		s.ran += run
	}
	s.done = true
	c := s.c
	if c == nil {
		return
	}
	s.setUrgent(false)
	c.mu.Lock()
	if s.running {
		c.stopRunning(s, run)
	}
	s.running = false
	lane := s.Lane()
	c.open[lane]--
	c.openBy[lane].add(s.class, -1)
	c.untrack(s)
	c.grant()
	idle := c.idle
	if c.open[Small]+c.open[Bulk] > 0 || c.queued > 0 {
		idle = nil
	}
	c.mu.Unlock()
	if idle != nil {
		go idle()
	}
}
