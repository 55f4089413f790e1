package admit

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"testing/synctest"
)

func mustAdmit(t *testing.T, c *Controller, l Lane) *Slot {
	t.Helper()
	return mustAdmitCtx(t, context.Background(), c, l)
}

// mustAdmitCtx is mustAdmit under ctx (a Track'ed one gives its class).
func mustAdmitCtx(t *testing.T, ctx context.Context, c *Controller, l Lane) *Slot {
	t.Helper()
	s, err := c.Admit(ctx, l)
	if err != nil {
		t.Fatalf("Admit(%v): %v", l, err)
	}
	return s
}

// admitAsync starts an Admit and returns a channel that gets its result.
func admitAsync(ctx context.Context, c *Controller, l Lane) chan admitResult {
	ch := make(chan admitResult, 1)
	go func() {
		s, err := c.Admit(ctx, l)
		ch <- admitResult{s, err}
	}()
	return ch
}

type admitResult struct {
	s   *Slot
	err error
}

func waitQueued(t *testing.T, c *Controller, n int) {
	t.Helper()
	waitCount(t, c, "queued", n, func() int { return c.queued })
}

// waitCount waits until count, read under c.mu, is n.
func waitCount(t *testing.T, c *Controller, what string, n int, count func() int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		q := count()
		c.mu.Unlock()
		if q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d, want %d", what, q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// settledPending is pendingNow once every goroutine of the test's bubble
// is blocked: in a synctest bubble, whether a waiter started is then
// settled, with no wait on a real clock.
func settledPending(ch chan admitResult) bool {
	synctest.Wait()
	return pendingNow(ch)
}

func pending(ch chan admitResult) bool {
	select {
	case r := <-ch:
		ch <- r
		return false
	case <-time.After(20 * time.Millisecond):
		return true
	}
}

func TestController_BulkLeavesReservedSlotsToSmall(t *testing.T) {
	c := New(Config{Running: 4, Reserved: 2, Open: 100, Timeout: time.Minute})
	b1, b2 := mustAdmit(t, c, Bulk), mustAdmit(t, c, Bulk)
	b3 := admitAsync(context.Background(), c, Bulk)
	waitQueued(t, c, 1)
	if !pending(b3) {
		t.Fatal("a third bulk query started with 2 of 4 slots reserved for small ones")
	}
	s1, s2 := mustAdmit(t, c, Small), mustAdmit(t, c, Small)
	s3 := admitAsync(context.Background(), c, Small)
	waitQueued(t, c, 2)
	// A finished bulk query's slot goes to the waiting small query first.
	b1.Done()
	if r := <-s3; r.err != nil {
		t.Fatalf("small query after a bulk one finished: %v", r.err)
	}
	if !pending(b3) {
		t.Fatal("the bulk query started before the small one that waited")
	}
	b2.Done()
	if r := <-b3; r.err != nil {
		t.Fatalf("bulk query after a bulk one finished: %v", r.err)
	}
	s1.Done()
	s2.Done()
}

func TestController_QueueTimeoutIsBusyError(t *testing.T) {
	c := New(Config{Running: 2, Reserved: 1, Open: 10, Timeout: 50 * time.Millisecond})
	b := mustAdmit(t, c, Bulk)
	defer b.Done()
	_, err := c.Admit(context.Background(), Bulk)
	var be *BusyError
	if !errors.As(err, &be) || !errors.Is(err, ErrBusy) {
		t.Fatalf("Admit with every bulk slot taken: %v, want a *BusyError", err)
	}
	if be.Waited < 50*time.Millisecond || be.Full {
		t.Errorf("BusyError = %+v, want a wait of at least the timeout", be)
	}
	for _, want := range []string{"server busy", "queue timeout", "--max-running"} {
		if !contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestController_QueueFull(t *testing.T) {
	c := New(Config{Running: 2, Reserved: 1, Open: 10, Queue: 1, Timeout: time.Minute})
	b := mustAdmit(t, c, Bulk)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := admitAsync(ctx, c, Bulk)
	waitQueued(t, c, 1)
	_, err := c.Admit(context.Background(), Bulk)
	var be *BusyError
	if !errors.As(err, &be) || !be.Full {
		t.Fatalf("Admit with a full queue: %v, want a BusyError saying the queue is full", err)
	}
	cancel()
	if r := <-waiting; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("canceled waiter: %v, want context.Canceled", r.err)
	}
	waitQueued(t, c, 0)
	b.Done()
}

func TestController_FirstComeFirstServed(t *testing.T) {
	c := New(Config{Running: 2, Reserved: 1, Open: 10, Timeout: time.Minute})
	b := mustAdmit(t, c, Bulk)
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := mustAdmit(t, c, Bulk)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			s.Done()
		}()
		waitQueued(t, c, i+1)
	}
	b.Done()
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("admitted in order %v, want 0..4", order)
		}
	}
}

func TestSlot_PauseLetsOthersRun(t *testing.T) {
	c := New(Config{Running: 2, Reserved: 1, Open: 10, Timeout: time.Minute})
	slow := mustAdmit(t, c, Bulk)
	next := admitAsync(context.Background(), c, Bulk)
	waitQueued(t, c, 1)
	slow.Pause() // its client is slow to read
	r := <-next
	if r.err != nil {
		t.Fatalf("bulk query while the other paused: %v", r.err)
	}
	// The paused query waits for the slot, ahead of new queries.
	resumed := make(chan error, 1)
	go func() { resumed <- slow.Resume(context.Background()) }()
	third := admitAsync(context.Background(), c, Bulk)
	waitQueued(t, c, 1)
	r.s.Done()
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	if !pending(third) {
		t.Fatal("a new query started before the paused one resumed")
	}
	slow.Done()
	r3 := <-third
	if r3.err != nil {
		t.Fatal(r3.err)
	}
	r3.s.Done()
}

// TestSlot_BulkResumeYieldsProcessor checks that a bulk query resuming
// for its next batch lets a goroutine waiting to run go first. With one
// processor, the goroutine started before Resume runs only if Resume
// yields; Go's scheduler takes its global queue first one time in 61, so
// one of several tries, each past goschedEvery, is enough.
func TestSlot_BulkResumeYieldsProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c := New(Config{Running: 2, Reserved: 1, Open: 10, Timeout: time.Minute})
	s := mustAdmit(t, c, Bulk)
	defer s.Done()
	for range 5 {
		time.Sleep(goschedEvery)
		s.Pause()
		var ran atomic.Bool // a new one each try: an earlier try's goroutine runs in this one's sleep
		go ran.Store(true)
		if err := s.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ran.Load() {
			return
		}
	}
	t.Error("a bulk query's Resume never let a waiting goroutine run first")
}

func TestSlot_OpenBoundsPausedResults(t *testing.T) {
	c := New(Config{Running: 2, Reserved: 1, Open: 4, Timeout: 30 * time.Millisecond})
	var slots []*Slot
	for range 3 { // Open - Open/4 bulk results
		s := mustAdmit(t, c, Bulk)
		s.Pause()
		slots = append(slots, s)
	}
	if _, err := c.Admit(context.Background(), Bulk); !errors.Is(err, ErrBusy) {
		t.Fatalf("a 4th bulk result with 3 paused and Open 4: %v, want busy", err)
	}
	small := mustAdmit(t, c, Small) // the reserved open slot
	small.Done()
	for _, s := range slots {
		s.Done()
	}
}

func TestController_IdleCallback(t *testing.T) {
	c := New(Config{Running: 2, Open: 10})
	idle := make(chan struct{}, 4)
	c.OnIdle(func() { idle <- struct{}{} })
	a, b := mustAdmit(t, c, Small), mustAdmit(t, c, Bulk)
	a.Done()
	select {
	case <-idle:
		t.Fatal("idle with a result still open")
	case <-time.After(20 * time.Millisecond):
	}
	b.Done()
	b.Done() // twice is harmless
	select {
	case <-idle:
	case <-time.After(5 * time.Second):
		t.Fatal("no idle callback after the last result was done")
	}
}

func TestController_NilAdmitsEverything(t *testing.T) {
	var c *Controller
	s, err := c.Admit(context.Background(), Bulk)
	if err != nil || s == nil {
		t.Fatalf("nil controller: %v, %v", s, err)
	}
	s.Pause()
	if err := s.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Done()
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// TestParseLane reads back each lane's String, and nothing else.
func TestParseLane(t *testing.T) {
	for _, l := range []Lane{Small, Bulk} {
		if got, ok := ParseLane(l.String()); !ok || got != l {
			t.Errorf("ParseLane(%q) = %v, %v", l.String(), got, ok)
		}
	}
	for _, s := range []string{"", "Small", "urgent"} {
		if _, ok := ParseLane(s); ok {
			t.Errorf("ParseLane(%q) accepted", s)
		}
	}
}

// twoClasses are contexts of two admission classes: mysqlUser's over
// MySQL and flightUser's over Flight.
func twoClasses(t *testing.T, mysqlUser, flightUser string) (mysql, flight context.Context) {
	mysql, cancelM := Track(context.Background(), "mysql", mysqlUser)
	t.Cleanup(cancelM)
	flight, cancelF := Track(context.Background(), "flight", flightUser)
	t.Cleanup(cancelF)
	return mysql, flight
}

// A new query starts from the class (endpoint and user) that ran least
// lately, ahead of an earlier query of a class that ran more, and each
// class is served in order.
func TestController_FairStartsByRunTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Running: 4, Reserved: 2, Open: 8, Timeout: time.Minute})
		mysql, flight := twoClasses(t, "ann", "ann")
		// MySQL holds both bulk run slots, for a while.
		m1 := mustAdmitCtx(t, mysql, c, Bulk)
		m2 := mustAdmitCtx(t, mysql, c, Bulk)
		// Another MySQL query queues first, then two Flight ones.
		m3 := admitAsync(mysql, c, Bulk)
		waitQueued(t, c, 1)
		f1 := admitAsync(flight, c, Bulk)
		waitQueued(t, c, 2)
		f2 := admitAsync(flight, c, Bulk)
		waitQueued(t, c, 3)
		time.Sleep(20 * time.Millisecond)

		m1.Done() // MySQL ran 20 ms, Flight not at all: Flight's first goes
		r1 := <-f1
		if r1.err != nil {
			t.Fatal(r1.err)
		}
		if !settledPending(m3) || !settledPending(f2) {
			t.Fatal("more than one query started for one free slot")
		}
		m2.Done() // MySQL ran 40 ms, Flight still nothing: Flight's second goes
		r2 := <-f2
		if r2.err != nil {
			t.Fatal(r2.err)
		}
		if !settledPending(m3) {
			t.Fatal("MySQL's waiter started with no slot free")
		}
		r1.s.Done() // only MySQL waits
		r3 := <-m3
		if r3.err != nil {
			t.Fatal(r3.err)
		}
		if st := c.Stats(); st.Running[Bulk] != 2 || st.Queued != 0 {
			t.Fatalf("stats %+v: want 2 bulk running, none queued", st)
		}
		r2.s.Done()
		r3.s.Done()
		c.mu.Lock()
		byOpen := len(c.openBy[Bulk])
		c.mu.Unlock()
		if byOpen != 0 {
			t.Fatalf("%d classes hold open slots, want none", byOpen)
		}
	})
}

// A class of short results does not starve a class of long ones: the old
// rule, start the class holding the fewest open results, never started
// MySQL's second fetch while its first stayed open and Flight's came and
// went.
func TestController_ShortResultsDoNotStarveLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Running: 4, Reserved: 2, Open: 8, Timeout: time.Minute})
		mysql, flight := twoClasses(t, "ann", "ann")
		for range 2 { // open throughout, their clients slow
			long := mustAdmitCtx(t, mysql, c, Bulk)
			long.Pause()
			defer long.Done()
		}
		short := mustAdmitCtx(t, flight, c, Bulk)
		blocker := mustAdmitCtx(t, flight, c, Bulk)
		m2 := admitAsync(mysql, c, Bulk)
		waitQueued(t, c, 1)
		var flights []chan admitResult
		for range 3 {
			flights = append(flights, admitAsync(flight, c, Bulk))
			waitQueued(t, c, len(flights)+1)
		}
		time.Sleep(5 * time.Millisecond)
		short.Done() // Flight ran 5 ms and holds 1 open, MySQL ran ~0 ms and holds 2 of 6
		r := <-m2
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.s.Done()
		blocker.Done()
		for _, f := range flights {
			r := <-f
			if r.err != nil {
				t.Fatal(r.err)
			}
			r.s.Done()
		}
	})
}

// A class that holds half the lane's open results or more starts after
// every other class waiting, however little it ran.
func TestController_StartsCapOpenShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Open 8: the bulk lane may hold 6 open, half is 3.
		c := New(Config{Running: 4, Reserved: 2, Open: 8, Timeout: time.Minute})
		slow, other := twoClasses(t, "ann", "bob")
		var paused []*Slot
		for range 3 {
			s := mustAdmitCtx(t, slow, c, Bulk)
			s.Pause() // clients that read slowly: open, not running
			paused = append(paused, s)
		}
		busy := mustAdmitCtx(t, other, c, Bulk)
		time.Sleep(20 * time.Millisecond) // bob runs 20 ms, ann never ran
		busy2 := mustAdmitCtx(t, other, c, Bulk)
		a := admitAsync(slow, c, Bulk)
		waitQueued(t, c, 1)
		b := admitAsync(other, c, Bulk)
		waitQueued(t, c, 2)
		busy.Done()
		r := <-b
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !settledPending(a) {
			t.Fatal("a class holding half the open results started ahead of another class")
		}
		r.s.Done()
		if r := <-a; r.err != nil {
			t.Fatal(r.err)
		} else {
			r.s.Done()
		}
		busy2.Done()
		for _, s := range paused {
			s.Done()
		}
	})
}

// A run slot that comes free goes to the paused query of the class
// running the fewest, ahead of an earlier one of a class running more.
func TestController_FairResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Running: 4, Reserved: 2, Open: 8, Timeout: time.Minute})
		a, b := twoClasses(t, "ann", "bob")
		a1 := mustAdmitCtx(t, a, c, Bulk)
		a1.Pause()
		a2 := mustAdmitCtx(t, a, c, Bulk)
		a2.Pause()
		b1 := mustAdmitCtx(t, b, c, Bulk)
		b1.Pause()
		// Class a holds both bulk run slots.
		runner := mustAdmitCtx(t, a, c, Bulk)
		runner2 := mustAdmitCtx(t, a, c, Bulk)
		resumed := make(chan *Slot, 3)
		for _, s := range []*Slot{a1, a2} {
			go func() {
				if err := s.Resume(context.Background()); err == nil {
					resumed <- s
				}
			}()
		}
		waitResuming(t, c, 2)
		go func() {
			if err := b1.Resume(context.Background()); err == nil {
				resumed <- b1
			}
		}()
		waitResuming(t, c, 3)
		runner.Done() // a runs 1, b 0: b's resume goes first
		if got := <-resumed; got != b1 {
			t.Fatal("a paused query of the class running more resumed ahead of another class's")
		}
		runner2.Done()
		b1.Done()
		<-resumed
		<-resumed
		for _, s := range []*Slot{a1, a2} {
			s.Done()
		}
		if st := c.Stats(); st.Running != [2]int{} || st.Open != [2]int{} {
			t.Fatalf("stats %+v after every slot is done", st)
		}
	})
}

func waitResuming(t *testing.T, c *Controller, n int) {
	t.Helper()
	waitCount(t, c, "resuming", n, func() int { return c.resuming[Bulk].Len() })
}
