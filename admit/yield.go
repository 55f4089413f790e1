package admit

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Bulk results yield the CPU to small queries. Reserved run slots keep a
// small query from queueing behind bulk ones, but on a server with few
// cores a slot is not a core: the query's steps (planning, its run, its
// reply) still share the cores with every bulk stream. So while small
// work is in flight, a bulk result waits before producing its next
// batch, for up to Config.YieldMax each time, and then runs at least as
// long as it waited before it yields again: a steady stream of small
// queries slows a bulk result by at most half, however often its
// producer checks (a MySQL result checks every 512 rows). A paused bulk query
// also stops DuckDB's work for it once its streaming buffer is full, and
// its client's decoding once the batches in flight are read.

var yieldSeconds = promauto.NewCounter(prometheus.CounterOpts{
	Name: "quiver_admit_bulk_yield_seconds_total",
	Help: "Time bulk results waited, between batches, for small queries in flight to finish.",
})

// Urgent marks small work in flight outside a small slot, such as
// planning a query, until the returned function is called (calling it
// again does nothing). A nil controller marks nothing.
func (c *Controller) Urgent() (done func()) {
	if c == nil || c.cfg.YieldMax <= 0 {
		return func() {}
	}
	c.urgent.Add(1)
	var ended bool
	return func() {
		if !ended {
			ended = true
			c.endUrgent()
		}
	}
}

// endUrgent ends one piece of small work; the last one wakes the bulk
// results that yielded to it.
func (c *Controller) endUrgent() {
	if c.urgent.Add(-1) != 0 {
		return
	}
	c.mu.Lock()
	if c.urgent.Load() == 0 && c.calm != nil {
		close(c.calm)
		c.calm = nil
	}
	c.mu.Unlock()
}

// yield is Resume's first step for a bulk slot: it waits for small work
// in flight (Controller.yield), unless the slot has not yet run as long
// as it last waited.
func (s *Slot) yield(ctx context.Context) error {
	if s.Lane() != Bulk || s.c == nil || s.c.cfg.YieldMax <= 0 {
		return nil
	}
	if s.yieldWait > 0 && time.Since(s.yieldEnd) < s.yieldWait {
		return nil
	}
	waited, err := s.c.yield(ctx)
	s.yieldEnd, s.yieldWait = time.Now(), waited
	return err
}

// yield waits while small work is in flight, up to the controller's
// YieldMax, and returns how long it waited; it returns ctx's error if ctx
// ends first.
func (c *Controller) yield(ctx context.Context) (time.Duration, error) {
	if c.urgent.Load() == 0 {
		return 0, nil
	}
	c.mu.Lock()
	if c.urgent.Load() == 0 {
		c.mu.Unlock()
		return 0, nil
	}
	if c.calm == nil {
		c.calm = make(chan struct{})
	}
	calm := c.calm
	c.mu.Unlock()
	start := time.Now()
	t := time.NewTimer(c.cfg.YieldMax)
	defer t.Stop()
	var err error
	select {
	case <-calm:
	case <-t.C:
	case <-ctx.Done():
		err = ctx.Err()
	}
	waited := time.Since(start)
	yieldSeconds.Add(waited.Seconds())
	return waited, err
}
