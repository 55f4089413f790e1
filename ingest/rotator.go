package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
)

// exportRetryMin and exportRetryMax bound the wait before a failed export
// is tried again; it doubles after each failure in a row.
const (
	exportRetryMin = time.Second
	exportRetryMax = 30 * time.Second
)

// rotator decides when the live file rotates, rotates it, and exports the
// sealed files in its own goroutine. Rotation waits while an export runs,
// so the exporter's connection never outlives the database it came from;
// the live file simply grows a little past its threshold meanwhile.
type rotator struct {
	policy   segment.Policy
	store    *store
	exporter segmentSink // nil: rotation disabled
	// exportDB, when set, is a database of its own that exports attach
	// sealed files to, so that the live file may rotate while an export
	// runs; without it rotation waits for the export.
	exportDB *engine.DB
	log      *slog.Logger
	// fatal fails the pipeline; an export error wrapping errZombie calls
	// it instead of retrying.
	fatal func(error)

	// exportMu is held while a segment is exported, so that a caller of
	// exportAll has the queue to itself; rotMu is held while the live
	// file rotates.
	exportMu sync.Mutex
	rotMu    sync.Mutex

	mu      sync.Mutex
	lastErr error             // of the last failed export; nil once one succeeds
	hold    bool              // the background exporter waits (lake: until the first assignment)
	queue   []segment.Segment // sealed segments waiting for export
	busy    bool              // the exporter owns queue[0] and a connection
	wake    chan struct{}

	files    int // sealed
	bytes    int64
	lifetime time.Duration
	exported int // segments exported (or committed to the lake) and deleted
}

// segmentSink takes sealed segments: a Parquet exporter, or the Iceberg
// lake. Export deletes the segment once its rows are safe elsewhere, and
// may be called again for the same segment after a failure or a crash.
type segmentSink interface {
	Export(ctx context.Context, conn *engine.Conn, seg segment.Segment) (segment.ExportStats, error)
}

func newRotator(s *store, ex segmentSink, policy segment.Policy, log *slog.Logger) *rotator {
	return &rotator{policy: policy, store: s, exporter: ex, log: log.With("component", "ingest.rotator"), wake: make(chan struct{}, 1),
		fatal: func(error) {}}
}

// enqueue hands sealed segments to the exporter.
func (r *rotator) enqueue(segs ...segment.Segment) {
	if len(segs) == 0 {
		return
	}
	r.mu.Lock()
	r.queue = append(r.queue, segs...)
	r.busy = true
	lakeBacklog.Set(float64(len(r.queue)))
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
	if r.exporter == nil || !r.policy.Enabled() || r.store.rows.Load() == 0 || (r.exportDB == nil && !r.idle()) {
		return false
	}
	return r.policy.Due(r.store.size(), r.store.age())
}

// rotate seals the live file and queues it for export. The caller
// guarantees that no inserter holds a connection.
func (r *rotator) rotate(ctx context.Context) error {
	r.rotMu.Lock()
	defer r.rotMu.Unlock()
	return r.rotateLocked(ctx)
}

func (r *rotator) rotateLocked(ctx context.Context) error {
	err := r.rotateOnce(ctx)
	if errors.Is(err, errRotationSkipped) {
		r.log.Warn("rotation skipped; the live file stays in use", "err", err)
		return nil
	}
	return err
}

// Retries of a rotation that exportAll must make: a skipped one (a
// connection wrote after the checkpoint, so the file had a write-ahead log
// when it closed) is tried again, a little later each time.
const (
	rotateRetries    = 10
	rotateRetryFirst = 50 * time.Millisecond
)

// rotateSure rotates, retrying a skipped rotation, and fails when it
// stays skipped: the rows of the live file must go out with this export
// (a clean stop, or partitions given up), or the caller must know they
// did not.
func (r *rotator) rotateSure(ctx context.Context) error {
	wait := rotateRetryFirst
	for i := 0; ; i++ {
		err := r.rotateOnce(ctx)
		if !errors.Is(err, errRotationSkipped) || i == rotateRetries {
			return err
		}
		r.log.Warn("rotation skipped; trying again", "err", err, "attempt", i+1, "wait", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%w (and then: %w)", err, ctx.Err())
		}
		wait = min(2*wait, time.Second)
	}
}

// rotateOnce seals the live file and queues it for export.
func (r *rotator) rotateOnce(ctx context.Context) error {
	size := r.store.size()
	if r.store.stream != nil {
		if err := r.store.sealStream(ctx); err != nil {
			return fmt.Errorf("rotate: %w", err)
		}
	}
	seg, lived, err := r.store.rotate(ctx)
	if r.store.stream != nil && (err == nil || errors.Is(err, errRotationSkipped)) {
		if serr := r.store.openStream(ctx); serr != nil {
			return fmt.Errorf("rotate: %w", serr)
		}
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
	segmentsSealed.Inc()
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
	wait := exportRetryMin
	for {
		done, err := r.exportNext(ctx)
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
		if err == nil {
			wait = exportRetryMin
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case errors.Is(err, errZombie):
			r.log.Error("lake commit refused: another writer holds a partition of this process", "err", err)
			r.fatal(err)
			return
		case err != nil:
			lakeCommitErrors.Inc()
			r.log.Error("export failed; will retry", "in", wait, "err", err)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			wait = min(2*wait, exportRetryMax)
		case done:
			select {
			case <-r.wake:
			case <-ctx.Done():
				return
			}
		}
	}
}

// exportNext exports the first queued segment; done reports that the
// queue was empty (and the rotator idle).
func (r *rotator) exportNext(ctx context.Context) (done bool, err error) {
	r.exportMu.Lock()
	defer r.exportMu.Unlock()
	r.mu.Lock()
	if r.hold || len(r.queue) == 0 {
		r.busy = len(r.queue) > 0
		r.mu.Unlock()
		return true, nil
	}
	seg := r.queue[0]
	r.mu.Unlock()
	if err := r.export(ctx, seg, r.exporter.Export); err != nil {
		return false, err
	}
	r.pop()
	return false, nil
}

// backlog returns how many sealed files wait, and the last export error.
func (r *rotator) backlog() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue), r.lastErr
}

// unhold lets the background exporter run.
func (r *rotator) unhold() {
	r.mu.Lock()
	r.hold = false
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// pop removes the exported queue head.
func (r *rotator) pop() {
	r.mu.Lock()
	r.queue = r.queue[1:]
	r.exported++
	lakeBacklog.Set(float64(len(r.queue)))
	r.mu.Unlock()
	segmentsExported.Inc()
}

// counts returns the segments sealed and exported so far, and how many
// wait for export.
func (r *rotator) counts() (sealed, exported, backlog int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.files, r.exported, len(r.queue)
}

// exportFunc exports one sealed segment on conn.
type exportFunc func(ctx context.Context, conn *engine.Conn, seg segment.Segment) (segment.ExportStats, error)

// export exports one segment with fn on a connection of its own.
func (r *rotator) export(ctx context.Context, seg segment.Segment, fn exportFunc) error {
	var conn *engine.Conn
	var err error
	if r.exportDB != nil {
		conn, err = r.exportDB.Conn(ctx)
	} else {
		conn, err = r.store.conn(ctx)
	}
	if err != nil {
		return err
	}
	defer conn.Release()
	st, err := fn(ctx, conn, seg)
	if err != nil {
		return err
	}
	r.log.Info("exported segment", "segment", seg.ID, "rows", st.Rows, "files", st.Files,
		"MB", st.Bytes>>20, "took", st.Duration.Round(time.Millisecond))
	return nil
}

// exportAll rotates the live file if it holds rows, then exports every
// queued segment with fn in the caller's goroutine, while neither the
// background exporter nor a rotation can run. The caller guarantees that
// no batch is in flight. It stops at the first error; the segments not
// exported stay queued.
func (r *rotator) exportAll(ctx context.Context, fn exportFunc) error {
	r.exportMu.Lock()
	defer r.exportMu.Unlock()
	r.rotMu.Lock()
	defer r.rotMu.Unlock()
	if r.store.rows.Load() > 0 {
		if err := r.rotateSure(ctx); err != nil {
			return err
		}
	}
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.mu.Unlock()
			return nil
		}
		seg := r.queue[0]
		r.mu.Unlock()
		if err := r.export(ctx, seg, fn); err != nil {
			return err
		}
		r.pop()
	}
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
