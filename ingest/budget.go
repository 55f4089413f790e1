package ingest

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// budget counts what was accepted but not yet decoded (messages, or their
// bytes) and makes Deliver wait while the count is at its cap: the
// backpressure that keeps memory bounded whatever the backlog.
type budget struct {
	mu    sync.Mutex
	cap   int64
	used  int64
	gauge prometheus.Gauge
	wake  chan struct{} // closed and replaced whenever used falls
}

func newBudget(capacity int64, gauge prometheus.Gauge) *budget {
	return &budget{cap: capacity, gauge: gauge, wake: make(chan struct{})}
}

// acquire takes n units, waiting for room. A request larger than the cap
// is granted when nothing else is held, so one oversized poll cannot wedge
// the pipeline.
func (b *budget) acquire(ctx, stop context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.cap {
			b.used += n
			b.gauge.Set(float64(b.used))
			b.mu.Unlock()
			return nil
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-stop.Done():
			return context.Cause(stop)
		}
	}
}

// inUse returns the units held.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// release returns n units.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.gauge.Set(float64(b.used))
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}
