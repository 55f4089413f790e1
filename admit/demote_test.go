package admit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// classCtx is a context whose statements are user's over flight.
func classCtx(t *testing.T, user string) context.Context {
	ctx, cancel := Track(context.Background(), "flight", user)
	t.Cleanup(cancel)
	return ctx
}

// TestController_DemotesSmallHeldTooLong fills every run slot with small
// queries of one user that run on and on (a recursive CTE estimated
// small), and checks that past SmallHold they are demoted to the bulk
// lane, so another user's small query runs; that the user's next small
// query goes in the bulk lane while its demoted ones run; and that the
// counts come back to zero when everything is done.
func TestController_DemotesSmallHeldTooLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hold = 250 * time.Millisecond
		c := New(Config{Running: 4, Reserved: 2, Open: 100, Timeout: time.Minute, SmallHold: hold})
		mallory, victim := classCtx(t, "mallory"), classCtx(t, "victim")
		var hogs []*Slot
		for range 4 {
			hogs = append(hogs, mustAdmitCtx(t, mallory, c, Small))
		}
		v := admitAsync(victim, c, Small)
		synctest.Wait()
		if !pendingNow(v) {
			t.Fatal("the victim's small query started with every slot taken")
		}
		time.Sleep(hold - time.Millisecond)
		synctest.Wait()
		if got := c.Stats(); got.Running != [2]int{4, 0} || got.Demoted != 0 || !pendingNow(v) {
			t.Fatalf("before the hold passed: %+v, victim pending %v; want 4 small running, none demoted, the victim waiting", got, pendingNow(v))
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		r := <-v
		if r.err != nil || r.s.Lane() != Small {
			t.Fatalf("victim after the demotions: %v in %v, want admitted small", r.err, r.s.Lane())
		}
		if got := c.Stats(); got.Running != [2]int{1, 4} || got.Open != [2]int{1, 4} || got.Demoted != 4 {
			t.Errorf("after the demotions: %+v, want 1 small and 4 demoted bulk queries running and open", got)
		}
		for i, h := range hogs {
			if h.Lane() != Bulk {
				t.Errorf("hog %d in %v, want bulk", i, h.Lane())
			}
		}
		r.s.Done()

		// Mallory's next small query goes in the bulk lane, which her
		// demoted queries overfill: it waits.
		next := admitAsync(mallory, c, Small)
		synctest.Wait()
		if !pendingNow(next) {
			t.Fatal("mallory's next small query started while four of hers were demoted")
		}
		// A paused demoted query resumes in the bulk lane.
		hogs[0].Pause()
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := hogs[0].Resume(rctx); err == nil {
			t.Fatal("a demoted query resumed over the bulk lane's share")
		} else if got := c.Stats(); got.Running != [2]int{0, 3} || got.Demoted != 3 {
			t.Errorf("after pausing a demoted query: %+v, want 3 demoted bulk running", got)
		}
		for _, h := range hogs {
			h.Done()
		}
		synctest.Wait()
		nr := <-next
		if nr.err != nil || nr.s.Lane() != Bulk {
			t.Fatalf("mallory's next query: %v in %v, want admitted bulk", nr.err, nr.s.Lane())
		}
		nr.s.Done()
		if got := c.Stats(); got != (Stats{}) {
			t.Errorf("after everything is done: %+v, want zero", got)
		}
	})
}

// TestController_SmallHoldCountsRunTime checks that the hold counts the
// time a small query runs, not the time it is paused for its client.
func TestController_SmallHoldCountsRunTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hold = 250 * time.Millisecond
		c := New(Config{Running: 4, Reserved: 2, Open: 100, Timeout: time.Minute, SmallHold: hold})
		s := mustAdmit(t, c, Small)
		time.Sleep(200 * time.Millisecond)
		s.Pause()
		time.Sleep(time.Second)
		if err := s.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond)
		synctest.Wait()
		if s.Lane() != Small {
			t.Fatalf("demoted after 240ms of run time, want at %v", hold)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if s.Lane() != Bulk {
			t.Fatalf("still small after 260ms of run time, want demoted at %v", hold)
		}
		s.Done()
		if got := c.Stats(); got != (Stats{}) {
			t.Errorf("after it is done: %+v, want zero", got)
		}
	})
}

// pendingNow reports whether an admitAsync has no result yet, without
// waiting (inside a synctest bubble, after synctest.Wait).
func pendingNow(ch chan admitResult) bool {
	select {
	case r := <-ch:
		ch <- r
		return false
	default:
		return true
	}
}
