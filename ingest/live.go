package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"
)

// LiveStatus is a snapshot of a running pipeline, for the web console's
// ingest view (the "ingest" object of GET /api/live). Counters count since
// the pipeline started; a reader computes rates from two snapshots.
type LiveStatus struct {
	// Topic is the topic consumed ("" until known); Table the main table.
	Topic string `json:"topic"`
	Table string `json:"table"`
	// Partitions are the topic's partitions this process consumes, in
	// partition order (never null; empty before the first assignment).
	Partitions []LivePartition `json:"partitions"`
	// MessagesTotal counts the messages committed to DuckDB: a main row
	// or a dead letter each.
	MessagesTotal int64 `json:"messages_total"`
	// RowsTotal counts the main and normalized rows committed.
	RowsTotal int64 `json:"rows_total"`
	// BytesTotal counts the message payload bytes committed.
	BytesTotal int64 `json:"bytes_total"`
	// SegmentsSealed counts the live files rotated out (sealed) by this
	// run; SegmentsExported the sealed segments exported to Parquet or
	// committed to the lake, and deleted (those left by an earlier run
	// included); LakeCommits the segments committed to the lake (0
	// without one). BacklogSegments is how many sealed segments wait for
	// export or the lake, the one under way included.
	SegmentsSealed   int64 `json:"segments_sealed"`
	SegmentsExported int64 `json:"segments_exported"`
	LakeCommits      int64 `json:"lake_commits"`
	BacklogSegments  int64 `json:"backlog_segments"`
	// Disk is the disk guard's view.
	Disk LiveDisk `json:"disk"`
	// LastError is the last error the pipeline logged or hit, or nil.
	LastError *LiveError `json:"last_error"`
}

// LivePartition is one partition's position. A value not known yet is
// nil (JSON null): NextOffset before anything of the partition was
// committed, HighWatermark before the source saw one, and Lag when either
// is unknown.
type LivePartition struct {
	Partition int32 `json:"partition"`
	// NextOffset is the next offset to consume, as committed to DuckDB.
	NextOffset *int64 `json:"next_offset"`
	// HighWatermark is the partition's end as the source last saw it: a
	// fetch that returned records, or the source's periodic look-up.
	HighWatermark *int64 `json:"high_watermark"`
	// Lag is HighWatermark less NextOffset (at least 0): messages not yet
	// committed to DuckDB.
	Lag *int64 `json:"lag"`
}

// LiveDisk is the disk guard's state.
type LiveDisk struct {
	// FreeBytes is the free space on the file system holding the live
	// database, measured every two seconds; nil until measured, or where
	// it cannot be.
	FreeBytes *int64 `json:"free_bytes"`
	// Paused is true while consumption is paused: the disk guard, or the
	// lake is behind or failing.
	Paused bool `json:"paused"`
}

// LiveError is an error and when it happened.
type LiveError struct {
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// liveRefs are what Run sets up that Live reads, published once ready.
type liveRefs struct {
	store   *store
	rotator *rotator
	sink    *icebergSink
}

// liveState is what the pipeline tracks only for Live and the lag metrics.
type liveState struct {
	mu         sync.Mutex
	topic      string
	usesAssign bool                      // the source reports assignments: only assigned partitions count
	assigned   map[string]map[int32]bool // by topic
	marks      Offsets                   // high watermarks
	lastErr    *LiveError
}

// Live returns a snapshot of the pipeline. It is safe to call at any time,
// before, during and after Run, from any goroutine, and cheap: it reads
// counters and state the pipeline keeps anyway, and asks neither Kafka nor
// the disk.
func (p *Pipeline) Live() LiveStatus {
	records, norm, dead := p.records.Load(), p.norm.Load(), p.dead.Load()
	st := LiveStatus{
		Table:         p.cfg.Table,
		Partitions:    []LivePartition{},
		MessagesTotal: records + dead,
		RowsTotal:     records + norm,
		BytesTotal:    p.bytes.Load(),
		Disk:          LiveDisk{Paused: p.paused.Load()},
	}
	if free := p.diskFree.Load(); free >= 0 {
		st.Disk.FreeBytes = &free
	}
	refs := p.refs.Load()
	if refs != nil {
		sealed, exported, backlog := refs.rotator.counts()
		st.SegmentsSealed, st.SegmentsExported, st.BacklogSegments = int64(sealed), int64(exported), int64(backlog)
		if refs.sink != nil {
			st.LakeCommits = refs.sink.commits.Load()
		}
	}

	ls := &p.live
	ls.mu.Lock()
	defer ls.mu.Unlock()
	st.Topic = ls.topic
	if ls.lastErr != nil {
		e := *ls.lastErr
		st.LastError = &e
	}
	var parts []int32
	if ls.usesAssign {
		for q := range ls.assigned[st.Topic] {
			parts = append(parts, q)
		}
	} else {
		for q := range ls.marks[st.Topic] {
			parts = append(parts, q)
		}
	}
	slices.Sort(parts)
	for _, q := range parts {
		lp := LivePartition{Partition: q}
		if refs != nil {
			if n, ok := refs.store.stored(st.Topic, q); ok {
				lp.NextOffset = &n
			}
		}
		if hw, ok := ls.marks.Get(st.Topic, q); ok {
			lp.HighWatermark = &hw
			if lp.NextOffset != nil {
				lag := max(0, hw-*lp.NextOffset)
				lp.Lag = &lag
			}
		}
		st.Partitions = append(st.Partitions, lp)
	}
	return st
}

// setTopic names the topic Live reports, unless one is named already.
func (ls *liveState) setTopic(topic string) {
	if ls.topic == "" {
		ls.topic = topic
	}
}

// tracked reports whether Live shows a partition. Call with mu held.
func (ls *liveState) tracked(topic string, part int32) bool {
	if topic != ls.topic {
		return false
	}
	return !ls.usesAssign || ls.assigned[topic][part]
}

// noteAssigned records partitions the source started consuming.
func (p *Pipeline) noteAssigned(topic string, parts []int32) {
	ls := &p.live
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.setTopic(topic)
	ls.usesAssign = true
	if ls.assigned == nil {
		ls.assigned = map[string]map[int32]bool{}
	}
	if ls.assigned[topic] == nil {
		ls.assigned[topic] = map[int32]bool{}
	}
	for _, q := range parts {
		ls.assigned[topic][q] = true
		p.updateLagLocked(topic, q)
	}
}

// noteReleased forgets partitions the source gave up.
func (p *Pipeline) noteReleased(topic string, parts []int32) {
	ls := &p.live
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, q := range parts {
		delete(ls.assigned[topic], q)
		delete(ls.marks[topic], q)
		label := strconv.Itoa(int(q))
		highWatermark.DeleteLabelValues(topic, label)
		consumerLag.DeleteLabelValues(topic, label)
	}
}

// noteWatermarks records high watermarks the source saw. They only rise:
// a look-up answered after a later fetch must not lower them.
func (p *Pipeline) noteWatermarks(topic string, marks map[int32]int64) {
	if len(marks) == 0 {
		return
	}
	ls := &p.live
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.setTopic(topic)
	if ls.marks == nil {
		ls.marks = Offsets{}
	}
	for q, hw := range marks {
		if hw < 0 {
			continue
		}
		ls.marks.Advance(topic, q, hw)
		p.updateLagLocked(topic, q)
	}
}

// noteCommitted updates the offset and lag metrics after a batch committed.
func (p *Pipeline) noteCommitted(offsets Offsets) {
	for t, ps := range offsets {
		for q, n := range ps {
			nextOffset.WithLabelValues(t, strconv.Itoa(int(q))).Set(float64(n))
		}
	}
	ls := &p.live
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for t, ps := range offsets {
		for q := range ps {
			p.updateLagLocked(t, q)
		}
	}
}

// updateLagLocked sets the watermark and lag gauges of a partition Live
// shows, from its high watermark and DuckDB's committed next offset (the
// newest, whichever inserter calls). Call with live.mu held.
func (p *Pipeline) updateLagLocked(topic string, part int32) {
	ls := &p.live
	hw, ok := ls.marks.Get(topic, part)
	if !ok || !ls.tracked(topic, part) {
		return
	}
	label := strconv.Itoa(int(part))
	highWatermark.WithLabelValues(topic, label).Set(float64(hw))
	refs := p.refs.Load()
	if refs == nil {
		return
	}
	if n, ok := refs.store.stored(topic, part); ok {
		consumerLag.WithLabelValues(topic, label).Set(float64(max(0, hw-n)))
	}
}

// noteError records the last error, for Live.
func (p *Pipeline) noteError(msg string, at time.Time) {
	if at.IsZero() {
		at = time.Now()
	}
	errorsTotal.Inc()
	ls := &p.live
	ls.mu.Lock()
	ls.lastErr = &LiveError{Message: msg, Time: at.UTC()}
	ls.mu.Unlock()
}

// setDiskFree records a measurement of the free disk space (<0: unknown).
func (p *Pipeline) setDiskFree(free int64) {
	if free < 0 {
		return
	}
	p.diskFree.Store(free)
	diskFreeBytes.Set(float64(free))
}

// errorTap is a slog handler that passes records on to next and hands
// those at error level to note, so that Live shows the last error the
// pipeline logged, whatever part of it logged it.
type errorTap struct {
	next slog.Handler
	note func(msg string, at time.Time)
}

func (h errorTap) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.next.Enabled(ctx, l)
}

func (h errorTap) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" || a.Key == "error" {
				msg = fmt.Sprintf("%s: %s", msg, a.Value.Resolve())
				return false
			}
			return true
		})
		h.note(msg, r.Time)
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h errorTap) WithAttrs(as []slog.Attr) slog.Handler {
	return errorTap{next: h.next.WithAttrs(as), note: h.note}
}

func (h errorTap) WithGroup(name string) slog.Handler {
	return errorTap{next: h.next.WithGroup(name), note: h.note}
}
