package admit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHolds_Bounds takes handles and binds parameters past each bound,
// and checks each refusal names its flag and changes nothing, and that
// releasing everything brings the accounts back to zero.
func TestHolds_Bounds(t *testing.T) {
	h := NewHolds(HoldLimits{Prepared: 2, UserPrepared: 3, Txns: 1, UserTxns: 1, Held: 1, UserHeld: 2,
		ParamBytes: 100, SessionParamBytes: 150, UserParamBytes: 200, Memory: 1 << 20})
	a, b, other := h.Session("mallory"), h.Session("mallory"), h.Session("victim")
	var leases []*Lease
	take := func(s *HoldSession, k HoldKind) (*Lease, error) {
		l, err := s.Take(k, 10)
		if err == nil {
			leases = append(leases, l)
		}
		return l, err
	}
	wantFlag := func(what string, err error, flag string) {
		t.Helper()
		var le *LimitError
		if !errors.As(err, &le) || le.Flag != flag || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v, want a LimitError naming %s", what, err, flag)
		}
	}
	p1, _ := take(a, HoldPrepared)
	p2, _ := take(a, HoldPrepared)
	_, err := take(a, HoldPrepared)
	wantFlag("a session's third statement", err, "--max-prepared")
	p3, _ := take(b, HoldPrepared)
	_, err = take(b, HoldPrepared)
	wantFlag("the user's fourth statement", err, "--max-user-prepared")
	if _, err := take(other, HoldPrepared); err != nil {
		t.Errorf("another user's statement: %v", err)
	}
	if _, err := take(a, HoldTxn); err != nil {
		t.Fatal(err)
	}
	_, err = take(b, HoldTxn)
	wantFlag("the user's second transaction", err, "--max-user-txns")
	take(a, HoldResult)
	_, err = take(a, HoldResult)
	wantFlag("a session's second held result", err, "--max-held")

	wantFlag("101 bytes on one statement", p1.SetParams(101), "--max-param-bytes")
	if err := p1.SetParams(100); err != nil {
		t.Fatal(err)
	}
	wantFlag("151 bytes in a session", p2.SetParams(51), "--max-session-param-bytes")
	if err := p2.SetParams(50); err != nil {
		t.Fatal(err)
	}
	wantFlag("201 bytes of a user", p3.SetParams(51), "--max-user-param-bytes")
	if err := p1.SetParams(10); err != nil {
		t.Fatalf("a smaller binding: %v", err)
	}
	if err := p3.SetParams(90); err != nil {
		t.Fatalf("after the first statement's binding shrank: %v", err)
	}
	small := NewHolds(HoldLimits{Memory: 20 << 10})
	sl, err := small.Session("u").Take(HoldPrepared, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantFlag("past the server's share", sl.SetParams(20<<10), "--memory, whose share this is")

	for _, l := range leases {
		l.Release()
		l.Release() // again: nothing
	}
	if got := h.Bytes(); got != 0 || len(h.users) != 0 {
		t.Errorf("after every release: %d bytes, %d users, want none", got, len(h.users))
	}
	if _, err := a.Take(HoldPrepared, 0); err != nil {
		t.Errorf("a statement after the releases: %v", err)
	}
}

// TestHolds_Nil checks a nil Holds bounds nothing.
func TestHolds_Nil(t *testing.T) {
	var h *Holds
	l, err := h.Session("u").Take(HoldTxn, 1<<40)
	if err != nil || l.SetParams(1<<40) != nil {
		t.Fatalf("nil Holds refused: %v", err)
	}
	l.Release()
	if h.Bytes() != 0 {
		t.Error("nil Holds holds bytes")
	}
}

// TestHolds_OnFreed checks the function is told of a release that gives
// back a MiB or more, and not of a smaller one.
func TestHolds_OnFreed(t *testing.T) {
	h := NewHolds(HoldLimits{})
	freed := make(chan struct{}, 4)
	h.OnFreed(func() { freed <- struct{}{} })
	l, err := h.Session("u").Take(HoldPrepared, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetParams(4 << 20); err != nil {
		t.Fatal(err)
	}
	if err := l.SetParams(4<<20 - 10); err != nil {
		t.Fatal(err)
	}
	select {
	case <-freed:
		t.Fatal("told of a 10-byte release")
	case <-time.After(50 * time.Millisecond):
	}
	l.Release()
	select {
	case <-freed:
	case <-time.After(5 * time.Second):
		t.Fatal("not told of a 4 MiB release")
	}
}
