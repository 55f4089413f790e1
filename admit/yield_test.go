package admit

import (
	"context"
	"errors"
	"testing"
	"time"

	"testing/synctest"
)

// resumeAsync calls s.Resume on its own goroutine and returns a channel
// that gets its error.
func resumeAsync(ctx context.Context, s *Slot) chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.Resume(ctx) }()
	return ch
}

// returned reports whether ch has a value within d, and the value. The
// tests run in a synctest bubble, where d passes only once every other
// goroutine of the bubble is blocked: "not within d" means "not at all
// until something changes".
func returned(ch chan error, d time.Duration) (error, bool) {
	select {
	case err := <-ch:
		return err, true
	case <-time.After(d):
		return nil, false
	}
}

func TestResume_BulkYieldsToSmallWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		// start begins the small work and returns what ends it.
		start func(*testing.T, *Controller) func()
	}{
		{"small slot", func(t *testing.T, c *Controller) func() { return mustAdmit(t, c, Small).Done }},
		{"urgent mark", func(_ *testing.T, c *Controller) func() { return c.Urgent() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := New(Config{Running: 4, YieldMax: time.Hour})
				bulk := mustAdmit(t, c, Bulk)
				defer bulk.Done()
				if err, ok := returned(resumeAsync(context.Background(), bulk), 5*time.Second); !ok || err != nil {
					t.Fatalf("bulk Resume with nothing small in flight: returned %v, err %v", ok, err)
				}
				end := tc.start(t, c)
				ch := resumeAsync(context.Background(), bulk)
				if _, ok := returned(ch, 50*time.Millisecond); ok {
					t.Fatal("bulk Resume returned while small work was in flight")
				}
				// A small query itself never waits.
				small := mustAdmit(t, c, Small)
				if err, ok := returned(resumeAsync(context.Background(), small), 5*time.Second); !ok || err != nil {
					t.Fatalf("small Resume: returned %v, err %v", ok, err)
				}
				small.Done()
				if _, ok := returned(ch, 50*time.Millisecond); ok {
					t.Fatal("bulk Resume returned while the first small work was still in flight")
				}
				end()
				end() // a second end does nothing
				if err, ok := returned(ch, 5*time.Second); !ok || err != nil {
					t.Fatalf("bulk Resume after the small work ended: returned %v, err %v", ok, err)
				}
				if n := c.urgent.Load(); n != 0 {
					t.Fatalf("urgent = %d after every small work ended, want 0", n)
				}
			})
		})
	}
}

func TestResume_BulkYieldIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Running: 4, YieldMax: 30 * time.Millisecond})
		bulk := mustAdmit(t, c, Bulk)
		defer bulk.Done()
		end := c.Urgent()
		defer end()
		// Small work that never ends delays each batch by YieldMax, no more.
		for range 3 {
			if err, ok := returned(resumeAsync(context.Background(), bulk), 5*time.Second); !ok || err != nil {
				t.Fatalf("bulk Resume under endless small work: returned %v, err %v", ok, err)
			}
		}
		// A client that goes away ends the wait at once.
		long := New(Config{Running: 4, YieldMax: time.Hour})
		b := mustAdmit(t, long, Bulk)
		defer b.Done()
		defer long.Urgent()()
		ctx, cancel := context.WithCancel(context.Background())
		ch := resumeAsync(ctx, b)
		cancel()
		if err, ok := returned(ch, 5*time.Second); !ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled bulk Resume: returned %v, err %v; want context.Canceled", ok, err)
		}
		// YieldMax 0, the default, turns yielding off.
		off := New(Config{Running: 4})
		ob := mustAdmit(t, off, Bulk)
		defer ob.Done()
		defer mustAdmit(t, off, Small).Done()
		defer off.Urgent()()
		if err, ok := returned(resumeAsync(context.Background(), ob), time.Second); !ok || err != nil {
			t.Fatalf("bulk Resume with yielding off: returned %v, err %v", ok, err)
		}
	})
}

// TestResume_PausedSmallIsNotUrgent checks that a small query paused for
// its client does not hold bulk results back: a client that leaves a
// small result unread would otherwise slow every bulk stream.
func TestResume_PausedSmallIsNotUrgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Config{Running: 4, YieldMax: time.Hour})
		bulk := mustAdmit(t, c, Bulk)
		defer bulk.Done()
		small := mustAdmit(t, c, Small)
		defer small.Done()
		small.Pause()
		if err, ok := returned(resumeAsync(context.Background(), bulk), 5*time.Second); !ok || err != nil {
			t.Fatalf("bulk Resume with the small query paused: returned %v, err %v", ok, err)
		}
		if err := small.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
		ch := resumeAsync(context.Background(), bulk)
		if _, ok := returned(ch, 50*time.Millisecond); ok {
			t.Fatal("bulk Resume returned while the resumed small query ran")
		}
		small.Pause()
		if err, ok := returned(ch, 5*time.Second); !ok || err != nil {
			t.Fatalf("bulk Resume after the small query paused again: returned %v, err %v", ok, err)
		}
		small.Done()
		if n := c.urgent.Load(); n != 0 {
			t.Fatalf("urgent = %d, want 0", n)
		}
	})
}

// TestResume_BulkRunsAsLongAsItWaited checks the bound on how much small
// work slows a bulk result: after waiting, it runs at least as long as
// it waited before it waits again, however often it resumes.
func TestResume_BulkRunsAsLongAsItWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wait = time.Second
		c := New(Config{Running: 4, YieldMax: wait})
		bulk := mustAdmit(t, c, Bulk)
		defer bulk.Done()
		defer c.Urgent()() // small work that never ends
		start := time.Now()
		if err := bulk.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < wait {
			t.Fatalf("first Resume under endless small work returned after %v, want the whole %v", d, wait)
		}
		// Resumes right after it (a MySQL result resumes every 512 rows) go
		// on at once: the bulk result has not yet run as long as it waited.
		for range 3 {
			if err, ok := returned(resumeAsync(context.Background(), bulk), wait/2); !ok || err != nil {
				t.Fatalf("Resume just after a wait: returned %v, err %v; want at once", ok, err)
			}
		}
		// Once it has run that long, it waits again. (The wait it measured
		// may be a little over YieldMax, so sleep well past it.)
		time.Sleep(wait + wait/2)
		ch := resumeAsync(context.Background(), bulk)
		if _, ok := returned(ch, wait/2); ok {
			t.Fatal("Resume after running longer than it waited did not wait again")
		}
		<-ch
	})
}
