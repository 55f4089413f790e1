package ingest

import (
	"context"
	"time"
)

// inItem is what the source side puts on the pipeline's input: chunks, or
// a flush request, in one FIFO so that a flush covers every chunk
// delivered before it.
type inItem struct {
	chunks []Chunk
	flush  chan<- uint64 // receives the last batch number cut so far
}

// maxBatchBytes caps the message bytes of one batch. A batch's string
// column holds at most that much data, far below the 2 GiB its 32-bit
// Arrow offsets can address, and a topic of large messages is cut into
// batches of fewer rows instead of ones of several gigabytes.
const maxBatchBytes = 256 << 20

// MinQueueBytes is the smallest Config.QueueBytes: one batch of the
// largest size.
const MinQueueBytes = maxBatchBytes

// batcher cuts delivered chunks into numbered batches of exactly
// BatchRows messages, or fewer when maxBytes of messages are reached,
// FlushInterval passes, a flush is asked for, or the input ends.
type batcher struct {
	size     int
	maxBytes int64 // 0: no cap
	linger   time.Duration
	in       <-chan inItem
	out      chan<- *batchJob
	seq      uint64
	cur      *batchJob
	timer    *time.Timer
	timerC   <-chan time.Time
}

// run cuts batches until the input closes, then cuts the last one and
// closes out.
func (b *batcher) run(ctx context.Context) error {
	defer close(b.out)
	defer b.stopTimer()
	for {
		select {
		case it, ok := <-b.in:
			if !ok {
				return b.cut(ctx)
			}
			if it.flush != nil {
				if err := b.cut(ctx); err != nil {
					return err
				}
				it.flush <- b.seq
				continue
			}
			for _, c := range it.chunks {
				if err := b.add(ctx, c); err != nil {
					return err
				}
			}
		case <-b.timerC:
			b.timerC = nil
			if err := b.cut(ctx); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// add appends a chunk, cutting a batch each time one fills.
func (b *batcher) add(ctx context.Context, c Chunk) error {
	for len(c.Messages) > 0 {
		if b.cur == nil {
			b.cur = &batchJob{offsets: Offsets{}}
			b.startTimer()
		}
		n, room := 0, min(len(c.Messages), b.size-b.cur.msgs)
		for n < room && !b.full() {
			b.cur.bytes += int64(len(c.Messages[n].Value))
			n++
		}
		part := Chunk{Topic: c.Topic, Partition: c.Partition, Messages: c.Messages[:n:n]}
		b.cur.chunks = append(b.cur.chunks, part)
		b.cur.msgs += n
		b.cur.offsets.Advance(c.Topic, c.Partition, part.Messages[n-1].Offset+1)
		c.Messages = c.Messages[n:]
		if b.cur.msgs >= b.size || b.full() {
			if err := b.cut(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// full reports that the open batch holds maxBytes of messages.
func (b *batcher) full() bool { return b.maxBytes > 0 && b.cur.bytes >= b.maxBytes }

// cut numbers the open batch and sends it on; an empty batch is not cut.
func (b *batcher) cut(ctx context.Context) error {
	b.stopTimer()
	if b.cur == nil {
		return nil
	}
	b.seq++
	b.cur.seq = b.seq
	select {
	case b.out <- b.cur:
		b.cur = nil
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (b *batcher) startTimer() {
	if b.timer == nil {
		b.timer = time.NewTimer(b.linger)
	} else {
		b.timer.Reset(b.linger)
	}
	b.timerC = b.timer.C
}

func (b *batcher) stopTimer() {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timerC = nil
}
