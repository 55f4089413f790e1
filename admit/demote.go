package admit

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// A query in the small lane holds its slot for at most Config.SmallHold
// of run time. Whatever put it there (an estimate that could not see its
// cost, a shape that ran small before), past that it is demoted: counted
// in the bulk lane from then on, its small slot free for the next small
// query. It goes on running: a running DuckDB statement cannot be set
// aside, and canceling a query that did nothing wrong but run long is
// the query timeout's job. The small lane keeps its Reserved run slots
// whatever the demoted queries hold (mayRun), so point lookups keep
// their lane; and a class (an endpoint and a user) with as many demoted
// queries running as there are reserved slots gets the bulk lane for its
// small queries until they end (Admit), so one user whose queries look
// small and are not cannot take the small lane again and again.

var demotedTotal = promauto.NewCounter(prometheus.CounterOpts{
	Name: "quiver_admit_demoted_total",
	Help: "Queries moved from the small lane to the bulk lane for holding a small slot past its time (--small-hold).",
})

// demote moves s, running in the small lane, to the bulk lane. It is
// the function of s's demotion timer *t (read under c.mu, where it was
// set); a slot that stopped running, or was done, since that timer was
// set is left as it is.
func (c *Controller) demote(s *Slot, t **time.Timer) {
	c.mu.Lock()
	if !s.counted || s.Lane() != Small || s.demoteTimer != *t {
		c.mu.Unlock()
		return
	}
	s.demoteTimer = nil
	s.smallRan = 0
	c.running[Small]--
	c.runningBy[Small].add(s.class, -1)
	c.open[Small]--
	c.openBy[Small].add(s.class, -1)
	s.lane.Store(int32(Bulk))
	s.demoted = true
	c.running[Bulk]++
	c.runningBy[Bulk].add(s.class, 1)
	c.open[Bulk]++
	c.openBy[Bulk].add(s.class, 1)
	c.demotedBy.add(s.class, 1)
	if s.entry != nil {
		s.entry.Lane = Bulk
	}
	c.grant()
	c.mu.Unlock()
	demotedTotal.Inc()
	if s.urgent.CompareAndSwap(true, false) {
		c.endUrgent()
	}
}

// overDemoted reports whether class has as many demoted queries running
// as the small lane keeps slots.
func (c *Controller) overDemoted(class string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.demotedBy.get(class) >= max(1, c.cfg.Reserved)
}
