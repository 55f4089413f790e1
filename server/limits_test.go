package server

import (
	"net"
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

func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &limitListener{Listener: inner, max: 1}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := dial()
	defer first.Close()
	c1 := <-accepted
	// The second connection is closed by the server at once.
	second := dial()
	second.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := second.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection past the limit was served")
	}
	second.Close()
	// Once the first is closed, another is accepted.
	c1.Close()
	third := dial()
	defer third.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted after one closed")
	}
	if n := l.open.Load(); n > 1 {
		t.Errorf("%d connections counted open, limit 1", n)
	}
}
