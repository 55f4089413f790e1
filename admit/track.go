package admit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"
)

// A statement tracked by a Controller is listed by Queries from the moment
// it asks to be admitted until its slot is done, and Cancel ends it. The
// endpoints mark each statement's context with Track before they admit it.

// State is where a tracked statement is.
type State int32

const (
	// Queued: waiting for its turn to start.
	Queued State = iota
	// Running: holding a run slot.
	Running
	// Sending: its run slot given back while its client reads (Pause).
	Sending
)

func (s State) String() string {
	switch s {
	case Queued:
		return "queued"
	case Running:
		return "running"
	}
	return "sending"
}

// Query is one tracked statement, as Queries lists it.
type Query struct {
	ID       uint64
	Endpoint string // flight, mysql, http
	User     string
	SQL      string
	Lane     Lane
	State    State
	Since    time.Time // when it asked to be admitted
}

// CanceledError is the cause of a context canceled by Controller.Cancel.
type CanceledError struct{ By string }

func (e *CanceledError) Error() string {
	return fmt.Sprintf("the statement was canceled by %s", e.By)
}

// TimeoutError is the cause of a statement's context ended by its time
// limit (Bound). Source names the setting the limit came from.
type TimeoutError struct {
	D      time.Duration
	Source string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the statement ran longer than its timeout of %s (%s) and was canceled", e.D, e.Source)
}

// SessionLimit is the limit a statement runs under when its server's
// limit is server and its session asked for session (0: no limit, or
// none asked). A server's limit is a ceiling: a session may lower it,
// never raise it past the server's. fromSession reports whether the
// session's value is the one that applies.
func SessionLimit(server, session time.Duration) (d time.Duration, fromSession bool) {
	if session > 0 && (server <= 0 || session < server) {
		return session, true
	}
	return server, false
}

// Bound is Track, and when d > 0 it also ends the statement's context
// after d, its cause a *TimeoutError naming source. The returned cancel
// function must be called.
func Bound(ctx context.Context, endpoint, user string, d time.Duration, source string) (context.Context, context.CancelFunc) {
	ctx, untrack := Track(ctx, endpoint, user)
	if d <= 0 {
		return ctx, untrack
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, &TimeoutError{D: d, Source: source})
	return ctx, func() { cancel(); untrack() }
}

// TimedOut returns what ended ctx when it was its time limit (Bound).
func TimedOut(ctx context.Context) (*TimeoutError, bool) {
	var te *TimeoutError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &te) {
		return te, true
	}
	return nil, false
}

type trackKey struct{}

// tracking is what Track puts on a context.
type tracking struct {
	endpoint, user string
	sql            atomic.Pointer[string]
	cancel         context.CancelCauseFunc
}

// Track returns a context for one statement from user on endpoint: a
// Controller admitting under it lists the statement (Queries) and may
// cancel it (Cancel), the context's cause then being a *CanceledError.
// The returned cancel function must be called.
func Track(ctx context.Context, endpoint, user string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := &tracking{endpoint: endpoint, user: user, cancel: cancel}
	return context.WithValue(ctx, trackKey{}, t), func() { cancel(context.Canceled) }
}

func trackingOf(ctx context.Context) *tracking {
	t, _ := ctx.Value(trackKey{}).(*tracking)
	return t
}

// entry is a tracked slot's record, read by Queries under the
// controller's lock; its state changes without it.
type entry struct {
	Query
	state  atomic.Int32
	cancel context.CancelCauseFunc
}

var nextID atomic.Uint64

// track records s, asked for under ctx, when ctx is tracked.
func (c *Controller) track(ctx context.Context, s *Slot) {
	t := trackingOf(ctx)
	if t == nil {
		return
	}
	e := &entry{Query: Query{ID: nextID.Add(1), Endpoint: t.endpoint, User: t.user, Lane: s.Lane(), Since: s.start}, cancel: t.cancel}
	if sql := t.sql.Load(); sql != nil {
		e.SQL = *sql
	}
	s.entry = e
	c.mu.Lock()
	if c.active == nil {
		c.active = make(map[uint64]*entry)
	}
	c.active[e.ID] = e
	c.mu.Unlock()
}

// untrack forgets s; the caller holds c.mu.
func (c *Controller) untrack(s *Slot) {
	if s.entry != nil {
		delete(c.active, s.entry.ID)
	}
}

func (s *Slot) setState(st State) {
	if s != nil && s.entry != nil {
		s.entry.state.Store(int32(st))
	}
}

// ID is the slot's number in Queries, 0 when it is not tracked.
func (s *Slot) ID() uint64 {
	if s == nil || s.entry == nil {
		return 0
	}
	return s.entry.ID
}

// Queries lists the tracked statements, oldest first.
func (c *Controller) Queries() []Query {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	out := make([]Query, 0, len(c.active))
	for _, e := range c.active {
		q := e.Query
		q.State = State(e.state.Load())
		out = append(out, q)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Cancel ends the tracked statement id, queued or running, its context's
// cause naming by. It reports whether there was such a statement.
func (c *Controller) Cancel(id uint64, by string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	e := c.active[id]
	c.mu.Unlock()
	if e == nil {
		return false
	}
	e.cancel(&CanceledError{By: by})
	return true
}

// Lookup returns the tracked statement id.
func (c *Controller) Lookup(id uint64) (Query, bool) {
	if c == nil {
		return Query{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.active[id]
	if e == nil {
		return Query{}, false
	}
	q := e.Query
	q.State = State(e.state.Load())
	return q, true
}

// NoteSQL records sql as the text of the statement ctx is tracked for
// (AdmitSQL does so itself).
func NoteSQL(ctx context.Context, sql string) {
	if t := trackingOf(ctx); t != nil {
		t.sql.Store(&sql)
	}
}
