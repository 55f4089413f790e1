package ingest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/quiverdata/quiver/lake"
)

// Maintenance configures the compactor a lake pipeline runs beside its
// commits. Frequent commits (Config.CommitInterval) make fresh data and
// small files; the compactor makes the large files readers want of them,
// and keeps the table's history and storage bounded.
type Maintenance struct {
	// Interval is the time between rounds; 0 runs no compactor. A round
	// compacts each table, then expires its old snapshots, then deletes
	// its orphan files.
	Interval time.Duration
	// TargetFileBytes is the size compaction writes and below which it
	// counts a file as small (lake.DefaultCompactTargetBytes).
	TargetFileBytes int64
	// SnapshotRetention expires snapshots older than this (1 hour). A
	// query planned on a snapshot reads its files for at most this long.
	SnapshotRetention time.Duration
	// OrphanAge deletes unreferenced data files last written longer ago
	// than this (1 hour): files of commits that failed, were fenced, or
	// were cut short by a crash. It must exceed the longest commit.
	OrphanAge time.Duration
}

// DefaultCompactInterval is how often quiver ingest --lake compacts by
// default. With commits every 10 s a partition gains six small files a
// minute, so a round a minute keeps it well under 20 of them.
const DefaultCompactInterval = time.Minute

func (m Maintenance) withDefaults() Maintenance {
	if m.TargetFileBytes <= 0 {
		m.TargetFileBytes = lake.DefaultCompactTargetBytes
	}
	if m.SnapshotRetention <= 0 {
		m.SnapshotRetention = time.Hour
	}
	if m.OrphanAge <= 0 {
		m.OrphanAge = time.Hour
	}
	return m
}

// maintainLoop runs the compactor until ctx is done. Only the process that
// consumes partition 0 of the topic compacts, so several processes of one
// group do not rewrite the same files against each other; the role moves
// with the partition.
//
// Compaction never breaks the offset fence: its replace snapshot carries
// the offsets of the snapshot it replaces, and a commit that lands first
// makes it commit on top of that commit (when only appends came between)
// or start over; a commit that finds a compaction landed first is checked
// against the fence again and retried (package lake/iceberg). Readers see
// one snapshot or the next, never a part of one.
func (p *Pipeline) maintainLoop(ctx context.Context, tables func() []sinkTable, owns0 func() bool) {
	m := p.cfg.Lake.Maintain.withDefaults()
	t := time.NewTicker(p.cfg.Lake.Maintain.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		if !owns0() {
			continue
		}
		for _, st := range tables() {
			if err := p.maintain(ctx, st.ice, m); err != nil && ctx.Err() == nil {
				lakeMaintainErrors.Inc()
				p.log.Error("lake maintenance failed; trying again at the next round", "table", strings.Join(st.ice.Identifier(), "."), "err", err)
			}
		}
	}
}

// maintain compacts one table, expires its snapshots and deletes its
// orphans.
func (p *Pipeline) maintain(ctx context.Context, t *lake.Table, m Maintenance) error {
	name := strings.Join(t.Identifier(), ".")
	start := time.Now()
	res, err := t.Compact(ctx, lake.CompactOptions{TargetFileBytes: m.TargetFileBytes,
		Written: func() { crashPoint("compact-after-write") }})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if res.SnapshotID != 0 {
		crashPoint("compact-after-commit")
		lakeCompactions.Inc()
		lakeCompactedFiles.Add(float64(res.RewrittenFiles))
		p.log.Info("compacted lake table", "table", name, "rewritten_files", res.RewrittenFiles, "added_files", res.AddedFiles,
			"files_after", res.FilesAfter, "MB_after", res.BytesAfter>>20, "attempts", res.Attempts, "took", time.Since(start).Round(time.Millisecond))
	}
	if res.FilesAfter > 0 {
		lakeDataFiles.WithLabelValues(name).Set(float64(res.FilesAfter))
		lakeDataBytes.WithLabelValues(name).Set(float64(res.BytesAfter))
	}
	exp, err := t.ExpireSnapshots(ctx, m.SnapshotRetention, 1)
	if err != nil {
		return fmt.Errorf("expire snapshots: %w", err)
	}
	if len(exp.Expired) > 0 {
		p.log.Debug("expired lake snapshots", "table", name, "expired", len(exp.Expired), "left", exp.Retained, "deleted_files", len(exp.DeletedFiles))
	}
	orphans, err := t.Orphans(ctx, m.OrphanAge)
	if err != nil {
		return fmt.Errorf("list orphans: %w", err)
	}
	if len(orphans.Files) > 0 {
		deleted, err := orphans.Delete(ctx)
		if err != nil {
			return fmt.Errorf("delete orphans: %w", err)
		}
		p.log.Info("deleted orphan lake files", "table", name, "files", len(deleted), "MB", orphans.TotalBytes>>20)
	}
	return nil
}
