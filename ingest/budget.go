package ingest

import (
	"context"
	"sync"
)

// budget counts messages accepted but not yet decoded and makes Deliver
// wait while the count is at its cap: the backpressure that keeps memory
// bounded whatever the backlog.
type budget struct {
	mu   sync.Mutex
	cap  int
	used int
	wake chan struct{} // closed and replaced whenever used falls
}

func newBudget(capacity int) *budget {
	return &budget{cap: capacity, wake: make(chan struct{})}
}

// acquire takes n units, waiting for room. A request larger than the cap
// is granted when nothing else is held, so one oversized poll cannot wedge
// the pipeline.
func (b *budget) acquire(ctx, stop context.Context, n int) error {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.cap {
			b.used += n
			queuedMessages.Set(float64(b.used))
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

// release returns n units.
func (b *budget) release(n int) {
	b.mu.Lock()
	b.used -= n
	queuedMessages.Set(float64(b.used))
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}
