package ingest

import (
	"context"
	"fmt"
	"time"
)

// handler is the pipeline as its Source sees it.
type handler struct{ p *Pipeline }

func (h handler) Ready(ctx context.Context) error {
	for {
		h.p.pauseMu.Lock()
		paused, resumed := h.p.paused.Load(), h.p.resumed
		h.p.pauseMu.Unlock()
		if err := context.Cause(h.p.stop); err != nil {
			return err
		}
		if !paused {
			return ctx.Err()
		}
		select {
		case <-resumed:
		case <-ctx.Done():
			return ctx.Err()
		case <-h.p.stop.Done():
		}
	}
}

func (h handler) Deliver(ctx context.Context, chunks []Chunk) error {
	var n, size int64
	for _, c := range chunks {
		n += int64(len(c.Messages))
		for i := range c.Messages {
			size += int64(len(c.Messages[i].Value))
		}
	}
	if n == 0 {
		return nil
	}
	now := time.Now().UnixNano()
	h.p.lastMsg.Store(now)
	h.p.delivering.Add(1)
	defer h.p.delivering.Add(-1)
	h.p.firstMsg.CompareAndSwap(0, now)
	if err := h.p.budget.acquire(ctx, h.p.stop, n); err != nil {
		return err
	}
	if err := h.p.byteBudget.acquire(ctx, h.p.stop, size); err != nil {
		h.p.budget.release(n)
		return err
	}
	release := func() {
		h.p.budget.release(n)
		h.p.byteBudget.release(size)
	}
	h.p.inMu.RLock()
	defer h.p.inMu.RUnlock()
	if h.p.inClosed {
		release()
		return errStopped
	}
	select {
	case h.p.in <- inItem{chunks: chunks}:
		return nil
	case <-ctx.Done():
		release()
		return ctx.Err()
	case <-h.p.stop.Done():
		release()
		return context.Cause(h.p.stop)
	}
}

func (h handler) Stored(topic string, partition int32) (int64, bool) {
	n, ok := h.p.store.stored(topic, partition)
	if l := h.p.servedLake; l != nil && topic == l.sink.cfg.Topic {
		// The lake's end wins when it is ahead: another writer holds
		// the rows up to it (see "Inside the server").
		if end, has := l.end(partition); has && (!ok || end > n) {
			return end, true
		}
	}
	return n, ok
}

func (h handler) Flush(ctx context.Context) (Offsets, error) {
	reply := make(chan uint64, 1)
	if err := h.send(ctx, inItem{flush: reply}); err != nil {
		return nil, err
	}
	var seq uint64
	select {
	case seq = <-reply:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.p.stop.Done():
		return nil, context.Cause(h.p.stop)
	}
	if err := h.p.seq.wait(ctx, seq); err != nil {
		return nil, err
	}
	return h.p.store.committedOffsets(), nil
}

func (h handler) Committed() Offsets {
	if h.p.sink != nil {
		return h.p.sink.committed()
	}
	return h.p.store.committedOffsets()
}

func (h handler) Assigned(ctx context.Context, topic string, partitions []int32) error {
	defer h.p.handingOver()()
	if h.p.sink != nil && len(partitions) > 0 {
		if err := h.p.lakeAssigned(ctx, topic, partitions); err != nil {
			return err
		}
	}
	if h.p.servedLake != nil && len(partitions) > 0 {
		if _, err := h.p.servedLake.lakeEnds(ctx); err != nil {
			return fmt.Errorf("read the lake's offsets: %w", err)
		}
	}
	h.p.noteAssigned(topic, partitions)
	return nil
}

func (h handler) Release(ctx context.Context, topic string, partitions []int32, commit bool) (Offsets, error) {
	defer h.p.handingOver()()
	defer h.p.noteReleased(topic, partitions)
	if h.p.servedLake != nil {
		// Commit what the served tables hold of every partition still
		// owned before letting them go; what fails stays local (see the
		// package documentation, "Inside the server").
		off, err := h.Flush(ctx)
		if err != nil {
			return off, err
		}
		owned := h.p.servedLake.owned()
		for _, q := range partitions {
			owned[q] = true
		}
		if err := h.p.servedLake.round(ctx, owned); err != nil {
			h.p.log.Error("lake commit before giving partitions up failed", "partitions", partitions, "err", err)
		}
		return off, nil
	}
	if h.p.sink == nil {
		return h.Flush(ctx)
	}
	return h.p.lakeRelease(ctx, topic, partitions, commit)
}

func (h handler) Watermarks(topic string, marks map[int32]int64) { h.p.noteWatermarks(topic, marks) }

func (h handler) ReportError(err error) {
	if err != nil {
		h.p.noteError(err.Error(), time.Now())
	}
}

func (h handler) StoredWins() bool { return h.p.sink != nil || h.p.servedLake != nil }

// send puts a control item on the input.
func (h handler) send(ctx context.Context, it inItem) error {
	h.p.inMu.RLock()
	defer h.p.inMu.RUnlock()
	if h.p.inClosed {
		return errStopped
	}
	select {
	case h.p.in <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-h.p.stop.Done():
		return context.Cause(h.p.stop)
	}
}
