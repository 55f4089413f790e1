package ingest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/quiverdata/quiver/lake"
)

// exportRetry is how long a failed export waits before it is tried again.
const exportRetry = 10 * time.Second

// rotator decides when the live file rotates, rotates it, and exports the
// sealed files in its own goroutine. Rotation waits while an export runs,
// so the exporter's connection never outlives the database it came from;
// the live file simply grows a little past its threshold meanwhile.
type rotator struct {
	policy   lake.Policy
	store    *store
	exporter *lake.Exporter // nil: rotation disabled
	log      *slog.Logger

	mu    sync.Mutex
	queue []lake.Segment // sealed segments waiting for export
	busy  bool           // the exporter owns queue[0] and a connection
	wake  chan struct{}

	files    int
	bytes    int64
	lifetime time.Duration
}

func newRotator(s *store, ex *lake.Exporter, policy lake.Policy, log *slog.Logger) *rotator {
	return &rotator{policy: policy, store: s, exporter: ex, log: log.With("component", "ingest.rotator"), wake: make(chan struct{}, 1)}
}

// enqueue hands sealed segments to the exporter.
func (r *rotator) enqueue(segs ...lake.Segment) {
	if len(segs) == 0 {
		return
	}
	r.mu.Lock()
	r.queue = append(r.queue, segs...)
	r.busy = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// idle reports whether no export is pending or running.
func (r *rotator) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.busy
}

// due reports whether the live file should rotate now.
func (r *rotator) due() bool {
	if r.exporter == nil || !r.policy.Enabled() || r.store.rows.Load() == 0 || !r.idle() {
		return false
	}
	return r.policy.Due(r.store.size(), r.store.age())
}

// rotate seals the live file and queues it for export. The caller
// guarantees that no inserter holds a connection.
func (r *rotator) rotate(ctx context.Context) error {
	size := r.store.size()
	seg, lived, err := r.store.rotate(ctx)
	if errors.Is(err, errRotationSkipped) {
		r.log.Warn("rotation skipped; the live file stays in use", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.files++
	r.bytes += size
	r.lifetime += lived
	avg := r.lifetime / time.Duration(r.files)
	r.mu.Unlock()
	duckdbFiles.Inc()
	duckdbFileBytes.Add(float64(size))
	fileAvgDuration.Set(avg.Seconds())
	r.log.Info("rotated database file", "segment", seg.ID, "MB", size>>20, "lived", lived.Round(time.Millisecond))
	r.enqueue(seg)
	return nil
}

// stats returns the files rotated out, their size and average lifetime.
func (r *rotator) stats() (int, int64, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == 0 {
		return 0, 0, 0
	}
	return r.files, r.bytes, r.lifetime / time.Duration(r.files)
}

// runExports exports queued segments until ctx is done. A failed export is
// retried; the segment stays on disk until it succeeds.
func (r *rotator) runExports(ctx context.Context) {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.busy = false
			r.mu.Unlock()
			select {
			case <-r.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		seg := r.queue[0]
		r.mu.Unlock()
		if err := r.export(ctx, seg); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.log.Error("export failed; will retry", "segment", seg.ID, "err", err)
			select {
			case <-time.After(exportRetry):
			case <-ctx.Done():
				return
			}
			continue
		}
		r.mu.Lock()
		r.queue = r.queue[1:]
		r.mu.Unlock()
	}
}

// export exports one segment on a connection of its own.
func (r *rotator) export(ctx context.Context, seg lake.Segment) error {
	conn, err := r.store.conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	st, err := r.exporter.Export(ctx, conn, seg)
	if err != nil {
		return err
	}
	r.log.Info("exported segment to parquet", "segment", seg.ID, "rows", st.Rows, "files", st.Files,
		"MB", st.Bytes>>20, "took", st.Duration.Round(time.Millisecond))
	return nil
}

// waitIdle waits until no export is pending or running, or ctx is done.
func (r *rotator) waitIdle(ctx context.Context) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !r.idle() {
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
