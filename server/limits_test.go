package server

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestIdleFree(t *testing.T) {
	var idle atomic.Bool
	f := &idleFree{quiet: 20 * time.Millisecond, every: 50 * time.Millisecond, isIdle: idle.Load}
	f.start()
	defer f.stop()
	before := testutil.ToFloat64(idleFrees)

	// Busy again by the time the quiet period ends: nothing is freed.
	f.notify()
	time.Sleep(100 * time.Millisecond)
	if got := testutil.ToFloat64(idleFrees) - before; got != 0 {
		t.Fatalf("freed %v times while busy", got)
	}
	idle.Store(true)
	f.notify()
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(idleFrees)-before < 1 {
		if time.Now().After(deadline) {
			t.Fatal("idle memory was not given back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Many idle moments in a row free at most once per period.
	start := testutil.ToFloat64(idleFrees)
	for range 20 {
		f.notify()
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(60 * time.Millisecond)
	if got := testutil.ToFloat64(idleFrees) - start; got > 3 {
		t.Errorf("freed %v times in about 160ms, want at most one per 50ms period", got)
	}
}
