package auth

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/quiverdata/quiver/internal/syncbuf"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTestGuard(t *testing.T, user, addr Limit) (*Guard, *fakeClock, *syncbuf.Buffer) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	log := &syncbuf.Buffer{}
	g, err := NewGuard(WithLimits(user, addr), WithGuardClock(clock.Now),
		WithAuditLog(slog.New(slog.NewTextHandler(log, nil)).With("audit", true)))
	if err != nil {
		t.Fatal(err)
	}
	return g, clock, log
}

func TestGuard_Limits(t *testing.T) {
	t.Run("per user, from any address", func(t *testing.T) {
		g, clock, _ := newTestGuard(t, Limit{Burst: 3, Every: 10 * time.Second}, Limit{Burst: 100, Every: time.Second})
		for i, addr := range []string{"10.0.0.1:1", "10.0.0.2:2", "10.0.0.3:3"} {
			if err := g.Allow("flight", "alice", addr); err != nil {
				t.Fatalf("try %d: %v", i, err)
			}
			g.Failed("flight", "alice", addr, ErrBadPassword)
		}
		err := g.Allow("flight", "alice", "10.0.0.4:4")
		var le *LimitedError
		if !errors.As(err, &le) || !errors.Is(err, ErrRateLimited) || le.Wait != 10*time.Second {
			t.Fatalf("fourth try: got %v, want a LimitedError of 10s", err)
		}
		if err := g.Allow("flight", "bob", "10.0.0.4:4"); err != nil {
			t.Errorf("another user: got %v, want allowed", err)
		}
		clock.Add(4 * time.Second)
		if err := g.Allow("flight", "alice", "10.0.0.4:4"); !errors.As(err, &le) || le.Wait != 6*time.Second {
			t.Errorf("4s later: got %v, want to wait 6s more", err)
		}
		clock.Add(6 * time.Second)
		if err := g.Allow("flight", "alice", "10.0.0.4:4"); err != nil {
			t.Errorf("10s later: got %v, want one more try", err)
		}
	})
	t.Run("per address, over any user", func(t *testing.T) {
		g, _, _ := newTestGuard(t, Limit{Burst: 100, Every: time.Second}, Limit{Burst: 2, Every: time.Minute})
		g.Failed("mysql", "a", "10.0.0.9:1000", ErrUnknownUser)
		g.Failed("mysql", "b", "10.0.0.9:1001", ErrUnknownUser)
		if err := g.Allow("mysql", "c", "10.0.0.9:1002"); !errors.Is(err, ErrRateLimited) {
			t.Errorf("third name from one host: got %v, want %v", err, ErrRateLimited)
		}
		if err := g.Allow("mysql", "c", "10.0.0.8:1002"); err != nil {
			t.Errorf("another host: got %v, want allowed", err)
		}
		if err := g.Allow("mysql", "c", "10.0.0.9"); !errors.Is(err, ErrRateLimited) {
			t.Errorf("the host without a port: got %v, want %v", err, ErrRateLimited)
		}
	})
	t.Run("success does not count", func(t *testing.T) {
		g, _, _ := newTestGuard(t, Limit{Burst: 1, Every: time.Minute}, Limit{Burst: 1, Every: time.Minute})
		for range 5 {
			if err := g.Allow("flight", "alice", "10.0.0.1:1"); err != nil {
				t.Fatal(err)
			}
			g.Succeeded("flight", "alice", "10.0.0.1:1")
		}
	})
	t.Run("bad limits", func(t *testing.T) {
		for _, l := range []Limit{{Burst: 0, Every: time.Second}, {Burst: 1, Every: 0}} {
			if _, err := NewGuard(WithLimits(l, DefaultAddrLimit)); err == nil {
				t.Errorf("limit %+v: got no error", l)
			}
		}
	})
}

func TestGuard_Audit(t *testing.T) {
	g, _, log := newTestGuard(t, Limit{Burst: 1, Every: time.Minute}, DefaultAddrLimit)
	g.Succeeded("flight", "alice", "10.0.0.1:5000")
	g.Failed("mysql", "bob", "10.0.0.2:5001", ErrBadPassword)
	g.Allow("mysql", "bob", "10.0.0.2:5002")
	got := log.String()
	for _, want := range []string{
		`msg=login audit=true proto=flight user=alice peer=10.0.0.1`,
		`msg="login failed" audit=true proto=mysql user=bob peer=10.0.0.2 reason="wrong password"`,
		`msg="login refused: too many failed logins" audit=true proto=mysql user=bob peer=10.0.0.2 retry_after=1m0s`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("audit log lacks %s:\n%s", want, got)
		}
	}
}

// TestGuard_Bounded checks the buckets of many names stay bounded.
func TestGuard_Bounded(t *testing.T) {
	g, clock, _ := newTestGuard(t, Limit{Burst: 2, Every: time.Second}, Limit{Burst: 2, Every: time.Second})
	for i := range maxTracked + 10 {
		g.Failed("flight", strconv.Itoa(i), "10.0.0.1", ErrUnknownUser)
		if i%1000 == 0 {
			clock.Add(time.Millisecond)
		}
	}
	g.mu.Lock()
	n := len(g.users)
	g.mu.Unlock()
	if n > maxTracked {
		t.Errorf("user buckets: got %d, want at most %d", n, maxTracked)
	}
}

// TestAuthenticator_RateLimited checks a Flight login is refused with
// ResourceExhausted, right password or not, once its user has failed too
// often, and allowed again after the wait.
func TestAuthenticator_RateLimited(t *testing.T) {
	g, clock, log := newTestGuard(t, Limit{Burst: 2, Every: time.Minute}, DefaultAddrLimit)
	users := NewStore(WithGuard(g))
	if err := users.Add("alice", "alice-pw", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator(users, newTestTokens(t, testKey, users))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, startServer(t, a))
	login := func(pw string) error {
		ctx := metadata.AppendToOutgoingContext(testContext(t), "authorization", basicValue("alice", pw))
		_, _, err := calls["unary"](ctx, c)
		return err
	}
	if err := login("alice-pw"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		wantStatus(t, login("guess"), codes.Unauthenticated, `authentication failed for user "alice"`)
	}
	wantStatus(t, login("alice-pw"), codes.ResourceExhausted, `too many failed logins for user "alice" or from this address: try again in 1m0s`)
	clock.Add(time.Minute)
	if err := login("alice-pw"); err != nil {
		t.Errorf("after the wait: %v", err)
	}
	// One more failure empties the bucket again.
	wantStatus(t, login("guess"), codes.Unauthenticated, "authentication failed")
	wantStatus(t, login("alice-pw"), codes.ResourceExhausted, "too many failed logins")
	if got := log.String(); strings.Count(got, `msg="login failed"`) != 3 || strings.Count(got, "msg=login ") != 2 {
		t.Errorf("audit log: want 3 failed logins and 2 logins:\n%s", got)
	}
}
