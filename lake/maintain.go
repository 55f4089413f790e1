package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"github.com/google/uuid"
)

// DefaultCompactTargetBytes is the size of the files [Table.Compact]
// writes, and below which it counts a file as small, when
// [CompactOptions.TargetFileBytes] is zero.
const DefaultCompactTargetBytes = 128 << 20

// CompactOptions tune [Table.Compact].
type CompactOptions struct {
	// TargetFileBytes is the size of the files written. Data files smaller
	// than this are rewritten; larger ones are left alone. Zero means
	// 128 MiB.
	TargetFileBytes int64
	// MinInputFiles is the fewest small files of one partition worth
	// rewriting; a partition with fewer is left alone. Zero means 2.
	MinInputFiles int
	// ReadConcurrency is how many input files are read at once. Each
	// reader may hold the decoded rows of one input file, so this bounds
	// memory together with TargetFileBytes. Zero means 2, capped at the
	// number of CPUs.
	ReadConcurrency int
	// Allocator allocates the Arrow memory of reading and writing; nil
	// means Go's allocator.
	Allocator memory.Allocator
	// Written, when set, is called each time the new files are written
	// and their commit is about to be attempted: crash tests stop the
	// process there, between the files and the snapshot naming them.
	Written func()
}

// CompactResult describes a compaction.
type CompactResult struct {
	// SnapshotID is the replace snapshot the compaction committed, or 0 if
	// there was nothing to compact.
	SnapshotID int64
	// FilesBefore and BytesBefore are the table's data files and their
	// total size just before the compaction's snapshot; FilesAfter and
	// BytesAfter just after. They include files that were not rewritten.
	FilesBefore, FilesAfter int64
	BytesBefore, BytesAfter int64
	// Groups is how many groups of files were rewritten; a group holds the
	// small files of one partition, up to TargetFileBytes of them.
	Groups int
	// RewrittenFiles and RewrittenBytes are the small files replaced;
	// AddedFiles and AddedBytes the files that replaced them.
	RewrittenFiles, AddedFiles int
	RewrittenBytes, AddedBytes int64
	// Rows is the number of rows rewritten.
	Rows int64
	// Attempts is how many times the commit was sent to the catalog.
	Attempts int
}

// maxCompactRounds bounds how often a compaction is planned and written
// again because another writer replaced or deleted files under it.
const maxCompactRounds = 3

// Compact rewrites the table's small data files into files of about
// TargetFileBytes, partition by partition, and commits them in one
// snapshot of operation replace. The table's rows are unchanged: the same
// rows, once each, with the deletes of any delete files applied. Planning,
// reading, writing (zstd, per the table's properties) and the snapshot are
// iceberg-go's compaction support; files are read and written one group
// at a time, so memory holds a few input files, not the table.
//
// The snapshot carries over the Kafka offsets of the snapshot it
// replaces, so [Table.CommittedOffsets] reads the same before and after.
//
// Concurrent writers: the commit pins the main branch like
// [Table.CommitFiles]. When another writer commits first, the table is
// reloaded; if everything committed since the compaction read the table
// was an append, the files already written are committed on top of it
// (the appended files stay, and are not compacted this time), with the
// offsets of the new head. If anything else was committed (a delete, an
// overwrite, another compaction) the written files are deleted and the
// compaction starts again from the fresh table, up to 3 times. A
// commit's outcome that stays unknown is reported as an error and the
// written files are kept for [Table.Orphans] to find if it did not land.
func (t *Table) Compact(ctx context.Context, opts CompactOptions) (res CompactResult, err error) {
	target := opts.TargetFileBytes
	if target == 0 {
		target = DefaultCompactTargetBytes
	}
	if target < 0 {
		return CompactResult{}, fmt.Errorf("iceberg: compaction target size %d is negative", target)
	}
	minFiles := opts.MinInputFiles
	if minFiles == 0 {
		minFiles = 2
	}
	if minFiles < 1 {
		return CompactResult{}, fmt.Errorf("iceberg: compaction minimum of %d input files is below 1", minFiles)
	}
	conc := opts.ReadConcurrency
	if conc <= 0 {
		conc = min(2, runtime.NumCPU())
	}
	if opts.Allocator != nil {
		ctx = compute.WithAllocator(ctx, opts.Allocator)
	}
	name := strings.Join(t.ident, ".")
	cfg := compaction.Config{
		TargetFileSizeBytes: target,
		// Every file below the target is small and rewritten; larger
		// files are left alone unless delete files shadow many of their
		// rows (iceberg-go's default thresholds below).
		MinFileSizeBytes:     target,
		MaxFileSizeBytes:     target * 9 / 5,
		MinInputFiles:        uint(minFiles),
		DeleteFileThreshold:  5,
		DeleteRatioThreshold: compaction.DefaultDeleteRatioThreshold,
		PackingLookback:      compaction.DefaultPackingLookback,
	}
	if cfg.MaxFileSizeBytes <= cfg.MinFileSizeBytes {
		cfg.MaxFileSizeBytes = cfg.MinFileSizeBytes + 1
	}
	groupOpts := []table.CompactionGroupOption{
		table.WithCompactionTargetFileSize(target),
		table.WithCompactionScanConcurrency(conc),
	}

	commitID := uuid.NewString()
	attempts := 0
rounds:
	for round := 0; round < maxCompactRounds; round++ {
		tbl, err := t.refresh(ctx)
		if err != nil {
			return CompactResult{}, err
		}
		base := tbl.CurrentSnapshot()
		if base == nil {
			return CompactResult{}, nil // an empty table
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return CompactResult{}, fmt.Errorf("iceberg: table %s: plan the compaction: %w", name, err)
		}
		plan, err := cfg.PlanCompaction(tasks)
		if err != nil {
			return CompactResult{}, fmt.Errorf("iceberg: table %s: plan the compaction: %w", name, err)
		}
		if len(plan.Groups) == 0 {
			files, bytes := dataTotals(base)
			return CompactResult{FilesBefore: files, FilesAfter: files, BytesBefore: bytes, BytesAfter: bytes}, nil
		}

		// Write the new files, one group (one partition) at a time.
		res = CompactResult{Attempts: attempts}
		var written []table.CompactionGroupResult
		discard := func() {
			discardOutputs(context.WithoutCancel(ctx), tbl, written)
		}
		for _, g := range plan.Groups {
			gr, err := table.ExecuteCompactionGroup(ctx, tbl, table.CompactionTaskGroup{
				PartitionKey:   g.PartitionKey,
				Tasks:          g.Tasks,
				TotalSizeBytes: g.TotalSizeBytes,
			}, groupOpts...)
			written = append(written, gr) // the files of a failed group too
			if err != nil {
				discard()
				return CompactResult{}, fmt.Errorf("iceberg: table %s: compact: %w", name, err)
			}
			if len(gr.OldDataFiles) == 0 {
				continue
			}
			res.Groups++
			res.RewrittenFiles += len(gr.OldDataFiles)
			res.AddedFiles += len(gr.NewDataFiles)
			res.RewrittenBytes += gr.BytesBefore
			res.AddedBytes += gr.BytesAfter
			for _, df := range gr.OldDataFiles {
				res.Rows += df.Count()
			}
		}
		if res.Groups == 0 {
			discard()
			files, bytes := dataTotals(base)
			return CompactResult{FilesBefore: files, FilesAfter: files, BytesBefore: bytes, BytesAfter: bytes}, nil
		}

		for attempt := 0; attempt < maxCommitAttempts; attempt++ {
			if attempt > 0 {
				if err := sleepBackoff(ctx, attempt-1); err != nil {
					discard()
					return CompactResult{}, err
				}
				if tbl, err = t.refresh(ctx); err != nil {
					discard()
					return CompactResult{}, err
				}
				if s := findCommit(tbl, commitID); s != nil {
					return compactDone(tbl, s, res), nil
				}
				if !onlyAppendsSince(tbl, base.SnapshotID) {
					// The files read may be gone or have new deletes:
					// what was written is stale.
					discard()
					continue rounds
				}
			}

			props, err := latestOffsets(tbl)
			if err != nil {
				discard()
				return CompactResult{}, err
			}
			props[CommitIDKey] = commitID

			txn := tbl.NewTransaction()
			// Pin the main branch: the offsets carried over are those of
			// the head read above, so no snapshot may slip in between.
			if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
				discard()
				return CompactResult{}, fmt.Errorf("iceberg: table %s: %w", name, err)
			}
			rw := txn.NewRewrite(props)
			for _, gr := range written {
				if len(gr.OldDataFiles) > 0 {
					rw.ApplyResult(gr)
				}
			}
			if err := rw.Commit(ctx); err != nil {
				discard()
				return CompactResult{}, fmt.Errorf("iceberg: table %s: stage the compaction: %w", name, err)
			}

			attempts++
			res.Attempts = attempts
			if opts.Written != nil {
				opts.Written()
			}
			next, err := txn.Commit(ctx)
			if err == nil {
				t.setCurrent(next)
				return compactDone(next, next.CurrentSnapshot(), res), nil
			}
			if isConflict(err) {
				continue
			}
			// Unknown outcome: look for the commit id before giving up.
			commitErr := err
			if tbl, rerr := t.refresh(context.WithoutCancel(ctx)); rerr == nil {
				if s := findCommit(tbl, commitID); s != nil {
					return compactDone(tbl, s, res), nil
				}
			}
			return CompactResult{}, fmt.Errorf("iceberg: table %s: commit the compaction: %w", name, commitErr)
		}
		discard()
		return CompactResult{}, fmt.Errorf("%w: table %s, compaction, %d attempts", ErrTooManyConflicts, name, attempts)
	}
	return CompactResult{}, fmt.Errorf("%w: table %s: other writers kept replacing or deleting files during the compaction (%d rounds)", ErrTooManyConflicts, name, maxCompactRounds)
}

// compactDone completes res from the compaction's snapshot s of tbl.
func compactDone(tbl *table.Table, s *table.Snapshot, res CompactResult) CompactResult {
	if s == nil {
		return res
	}
	res.SnapshotID = s.SnapshotID
	res.FilesAfter, res.BytesAfter = dataTotals(s)
	if s.ParentSnapshotID != nil {
		if p := tbl.Metadata().SnapshotByID(*s.ParentSnapshotID); p != nil {
			res.FilesBefore, res.BytesBefore = dataTotals(p)
		}
	}
	return res
}

// dataTotals returns the data files and bytes a snapshot's summary counts.
func dataTotals(s *table.Snapshot) (files, bytes int64) {
	if s == nil || s.Summary == nil {
		return 0, 0
	}
	files, _ = strconv.ParseInt(s.Summary.Properties["total-data-files"], 10, 64)
	bytes, _ = strconv.ParseInt(s.Summary.Properties["total-files-size"], 10, 64)
	return files, bytes
}

// onlyAppendsSince reports whether every snapshot of the main branch after
// base is an append, so that every file live at base is still live, with no
// new deletes against it.
func onlyAppendsSince(tbl *table.Table, base int64) bool {
	meta := tbl.Metadata()
	seen := map[int64]bool{}
	for s := meta.CurrentSnapshot(); s != nil && !seen[s.SnapshotID]; {
		if s.SnapshotID == base {
			return true
		}
		seen[s.SnapshotID] = true
		if s.Summary == nil || s.Summary.Operation != table.OpAppend {
			return false
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return false // base is no longer an ancestor of the head
}

// discardOutputs deletes the files a compaction wrote but did not commit,
// best effort: what cannot be deleted is left for [Table.Orphans].
func discardOutputs(ctx context.Context, tbl *table.Table, groups []table.CompactionGroupResult) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return
	}
	for _, gr := range groups {
		for _, df := range gr.NewDataFiles {
			_ = fsys.Remove(df.FilePath())
		}
	}
}

// ExpireResult describes a snapshot expiry.
type ExpireResult struct {
	// Expired are the ids of the snapshots removed from the table's
	// metadata, oldest first.
	Expired []int64
	// Retained is how many snapshots the table has left.
	Retained int
	// RetainedLast is how many of the newest snapshots of the main branch
	// were kept whatever their age: retainLast, or more when older ones
	// hold the newest Kafka offsets of some group and topic.
	RetainedLast int
	// DeletedFiles are the files iceberg-go deleted after the commit
	// because only expired snapshots referenced them: manifest lists,
	// manifests and data files.
	DeletedFiles []string
}

// ExpireSnapshots removes from the table's metadata the snapshots older
// than olderThan, except the retainLast newest of the main branch, through
// iceberg-go's snapshot expiry, and lets iceberg-go delete the manifest
// lists, manifests and data files that only expired snapshots referenced.
// Time travel to an expired snapshot is no longer possible.
//
// The current snapshot is always kept (retainLast below 1 counts as 1),
// as are snapshots that branches and tags point at. Kafka offsets stay
// readable: snapshots made by other tools carry no offsets, so when the
// newest snapshots lack them, the snapshots back to the newest one that
// has each group's and topic's offsets are kept too, and
// [Table.CommittedOffsets] reads the same before and after.
//
// The commit pins the main branch; when another writer commits first the
// expiry is planned again on the fresh table, with backoff, up to 12
// attempts.
func (t *Table) ExpireSnapshots(ctx context.Context, olderThan time.Duration, retainLast int) (ExpireResult, error) {
	if olderThan < 0 {
		return ExpireResult{}, fmt.Errorf("iceberg: snapshot age %v is negative", olderThan)
	}
	retainLast = max(retainLast, 1)
	name := strings.Join(t.ident, ".")
	for attempt := 0; attempt < maxCommitAttempts; attempt++ {
		if attempt > 0 {
			if err := sleepBackoff(ctx, attempt-1); err != nil {
				return ExpireResult{}, err
			}
		}
		tbl, err := t.refresh(ctx)
		if err != nil {
			return ExpireResult{}, err
		}
		keep := max(retainLast, offsetsDepth(tbl))
		txn := tbl.NewTransaction()
		if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
			return ExpireResult{}, fmt.Errorf("iceberg: table %s: %w", name, err)
		}
		if err := txn.ExpireSnapshots(table.WithOlderThan(olderThan), table.WithRetainLast(keep)); err != nil {
			return ExpireResult{}, fmt.Errorf("iceberg: table %s: expire snapshots: %w", name, err)
		}
		staged, err := txn.StagedTable()
		if err != nil {
			return ExpireResult{}, fmt.Errorf("iceberg: table %s: expire snapshots: %w", name, err)
		}
		res := ExpireResult{RetainedLast: keep, Retained: len(staged.Metadata().Snapshots())}
		left := map[int64]bool{}
		for _, s := range staged.Metadata().Snapshots() {
			left[s.SnapshotID] = true
		}
		snaps := tbl.Metadata().Snapshots()
		slices.SortFunc(snaps, func(a, b table.Snapshot) int { return int(a.SequenceNumber - b.SequenceNumber) })
		for _, s := range snaps {
			if !left[s.SnapshotID] {
				res.Expired = append(res.Expired, s.SnapshotID)
			}
		}
		if len(res.Expired) == 0 {
			return res, nil
		}
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return ExpireResult{}, err
		}
		candidates, err := expiredFiles(tbl, staged.Table, fsys, res.Expired)
		if err != nil {
			return ExpireResult{}, fmt.Errorf("iceberg: table %s: list the files of expired snapshots: %w", name, err)
		}

		next, err := txn.Commit(ctx)
		if next != nil {
			// The commit landed; an error is from deleting files. A file
			// already gone is no failure: iceberg-go also deletes the
			// files that expired manifests list as removed, which an
			// earlier expiry may have deleted already.
			t.setCurrent(next)
			res.DeletedFiles = deletedOf(fsys, candidates)
			if err != nil && !allNotExist(err) {
				return res, fmt.Errorf("iceberg: table %s: snapshots expired, but deleting their files failed (the data files among them are left for orphan clean-up): %w", name, err)
			}
			return res, nil
		}
		if isConflict(err) {
			continue
		}
		return ExpireResult{}, fmt.Errorf("iceberg: table %s: commit the snapshot expiry: %w", name, err)
	}
	return ExpireResult{}, fmt.Errorf("%w: table %s, snapshot expiry, %d attempts", ErrTooManyConflicts, name, maxCommitAttempts)
}

// offsetsDepth returns how many of the newest snapshots of the main branch
// latestOffsets walks to find every offsets key, so that keeping that many
// keeps the offsets readable.
func offsetsDepth(tbl *table.Table) int {
	meta := tbl.Metadata()
	found := map[string]bool{}
	seen := map[int64]bool{}
	depth := 0
	for i, s := 0, meta.CurrentSnapshot(); s != nil && !seen[s.SnapshotID]; i++ {
		seen[s.SnapshotID] = true
		if s.Summary != nil {
			for k := range s.Summary.Properties {
				if strings.HasPrefix(k, OffsetsKeyPrefix) && !found[k] {
					found[k] = true
					depth = i + 1
				}
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return depth
}

// expiredFiles lists the files that only the expired snapshots of pre
// reference once post is the table: the ones iceberg-go deletes after
// the commit.
func expiredFiles(pre, post *table.Table, fsys iceio.IO, expired []int64) ([]string, error) {
	retainedManifests := map[string]bool{}
	var retained []iceberg.ManifestFile
	for _, s := range post.Metadata().Snapshots() {
		mans, err := s.Manifests(fsys)
		if err != nil {
			return nil, err
		}
		for _, m := range mans {
			if !retainedManifests[m.FilePath()] {
				retainedManifests[m.FilePath()] = true
				retained = append(retained, m)
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, id := range expired {
		s := pre.Metadata().SnapshotByID(id)
		if s == nil {
			continue
		}
		add(s.ManifestList)
		mans, err := s.Manifests(fsys)
		if err != nil {
			return nil, err
		}
		for _, m := range mans {
			if retainedManifests[m.FilePath()] || seen[m.FilePath()] {
				continue
			}
			add(m.FilePath())
			// Entries marked deleted name files whose own expiry
			// deleted them, now or before.
			for e, err := range m.Entries(fsys, true) {
				if err != nil {
					return nil, err
				}
				add(e.DataFile().FilePath())
			}
		}
	}
	live := map[string]bool{}
	for _, m := range retained {
		for e, err := range m.Entries(fsys, false) {
			if err != nil {
				return nil, err
			}
			if e.Status() != iceberg.EntryStatusDELETED {
				live[e.DataFile().FilePath()] = true
			}
		}
	}
	return slices.DeleteFunc(out, func(p string) bool { return live[p] }), nil
}

// deletedOf returns the paths that no longer exist.
func deletedOf(fsys iceio.IO, paths []string) []string {
	var out []string
	for _, p := range paths {
		f, err := fsys.Open(p)
		if err == nil {
			_ = f.Close()
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// allNotExist reports whether err, and every error joined in it, says
// that a file does not exist.
func allNotExist(err error) bool {
	if err == nil {
		return true
	}
	if errs, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range errs.Unwrap() {
			if !allNotExist(e) {
				return false
			}
		}
		return len(errs.Unwrap()) > 0
	}
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if u := errors.Unwrap(err); u != nil {
		return allNotExist(u)
	}
	return false
}
