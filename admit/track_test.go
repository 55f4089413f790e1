package admit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTrack lists tracked statements through their states, leaves
// untracked ones out, and cancels queued and running ones with a cause
// that names who did.
func TestTrack(t *testing.T) {
	c := New(Config{Running: 2, Reserved: 1, Timeout: 5 * time.Second})
	ctx, done := Track(context.Background(), "flight", "bob")
	defer done()
	s, err := c.AdmitSQL(ctx, nil, Key{SQL: "SELECT 1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	untracked, err := c.Admit(context.Background(), Small)
	if err != nil {
		t.Fatal(err)
	}
	qs := c.Queries()
	if len(qs) != 1 || qs[0].User != "bob" || qs[0].Endpoint != "flight" || qs[0].SQL != "SELECT 1" || qs[0].State != Running || qs[0].ID != s.ID() {
		t.Fatalf("queries: %+v", qs)
	}
	s.Pause()
	if q, _ := c.Lookup(s.ID()); q.State != Sending {
		t.Fatalf("paused: %v, want sending", q.State)
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}

	// Both run slots are taken (bulk may use only one, small the other):
	// a third statement queues, and is listed as queued until canceled.
	qctx, qdone := Track(context.Background(), "mysql", "eve")
	defer qdone()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Admit(qctx, Bulk)
		errc <- err
	}()
	var queued Query
	for deadline := time.Now().Add(5 * time.Second); queued.ID == 0; {
		for _, q := range c.Queries() {
			if q.User == "eve" && q.State == Queued {
				queued = q
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued statement is not listed: %+v", c.Queries())
		}
		time.Sleep(time.Millisecond)
	}
	if !c.Cancel(queued.ID, "admin ada") {
		t.Fatal("cancel of a queued statement found nothing")
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued statement after cancel: %v", err)
	}
	var ce *CanceledError
	if !errors.As(context.Cause(qctx), &ce) || ce.By != "admin ada" {
		t.Fatalf("cause: %v", context.Cause(qctx))
	}
	if _, ok := c.Lookup(queued.ID); ok {
		t.Fatal("a canceled queued statement is still listed")
	}

	// Canceling a running one ends its context; done unlists it.
	if !c.Cancel(s.ID(), "admin ada") || ctx.Err() == nil {
		t.Fatal("cancel of a running statement")
	}
	s.Done()
	untracked.Done()
	if qs := c.Queries(); len(qs) != 0 {
		t.Fatalf("after done: %+v", qs)
	}
	if c.Cancel(s.ID(), "x") {
		t.Fatal("cancel of a finished statement reported success")
	}
	var nilc *Controller
	if nilc.Queries() != nil || nilc.Cancel(1, "x") {
		t.Fatal("a nil controller tracks nothing")
	}
}

// TestBound ends a statement's context at its time limit with a cause
// that names the limit's source, is tracked like Track's, and leaves a
// statement without a limit, or one canceled otherwise, not timed out.
func TestBound(t *testing.T) {
	c := New(Config{Running: 2, Reserved: 1, Timeout: 5 * time.Second})
	ctx, done := Bound(context.Background(), "mysql", "ann", 20*time.Millisecond, "max_execution_time")
	defer done()
	s, err := c.AdmitSQL(ctx, nil, Key{SQL: "SELECT 2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if qs := c.Queries(); len(qs) != 1 || qs[0].User != "ann" || qs[0].Endpoint != "mysql" {
		t.Fatalf("a bound statement is not tracked: %+v", qs)
	}
	if _, ok := TimedOut(ctx); ok {
		t.Fatal("timed out before its limit")
	}
	<-ctx.Done()
	s.Done()
	te, ok := TimedOut(ctx)
	if !ok || te.D != 20*time.Millisecond || te.Source != "max_execution_time" {
		t.Fatalf("TimedOut: %+v, %v", te, ok)
	}
	if msg := te.Error(); msg != "the statement ran longer than its timeout of 20ms (max_execution_time) and was canceled" {
		t.Errorf("message: %s", msg)
	}

	ctx, done = Bound(context.Background(), "flight", "bob", 0, "unused")
	if _, ok := ctx.Deadline(); ok {
		t.Error("no limit set a deadline")
	}
	done()
	if _, ok := TimedOut(ctx); ctx.Err() == nil || ok {
		t.Errorf("a statement ended by its cancel: err %v, timed out %v", ctx.Err(), ok)
	}
}
