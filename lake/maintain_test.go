package lake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/quiverdata/quiver/internal/testmem"
)

// twoDayRows returns n rows from id start, alternating between day and the
// day after, so that one commit writes a file in each day partition.
func twoDayRows(start, n int, day time.Time) []row {
	out := make([]row, n)
	for i := range out {
		id := int64(start + i)
		name := []string{"a", "b", "", "c"}[id%4]
		ts := day.Add(time.Duration(id%97) * time.Minute)
		if id%2 == 1 {
			ts = ts.Add(24 * time.Hour)
		}
		out[i] = row{id: id, name: name, ts: ts}
	}
	return out
}

// smallCommits commits n batches of per rows to tb, partition 0 of group
// g, topic t, continuing from offset from.
func smallCommits(t *testing.T, tb *Table, mem memory.Allocator, day time.Time, from, n, per int) {
	t.Helper()
	for i := 0; i < n; i++ {
		start := from + i*per
		r := Range{Start: int64(start), End: int64(start + per), First: start == 0}
		if _, err := tb.Commit(context.Background(), reader(t, mem, twoDayRows(start, per, day)), offs("g", "t", map[int32]Range{0: r})); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
}

// liveFiles returns the table's data files per partition.
func liveFiles(t *testing.T, tb *Table) map[string][]string {
	t.Helper()
	tbl, err := tb.Iceberg(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, task := range tasks {
		key := fmt.Sprint(task.File.Partition()) // fmt sorts map keys
		out[key] = append(out[key], task.File.FilePath())
	}
	return out
}

func countFiles(files map[string][]string) int {
	n := 0
	for _, fs := range files {
		n += len(fs)
	}
	return n
}

func TestCompactSmallCommitsPerPartition(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	day := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatal(err)
	}
	const commits, per = 20, 10
	smallCommits(t, tb, mem, day, 0, commits, per)

	before := readAll(t, tb)
	files := liveFiles(t, tb)
	if len(files) != 2 {
		t.Fatalf("partitions before compaction: %v, want 2", files)
	}
	if nBefore := countFiles(files); nBefore != 2*commits {
		t.Fatalf("before compaction: %d files, want %d", countFiles(files), 2*commits)
	}
	offsetsBefore, err := tb.CommittedOffsets(ctx, "g", "t")
	if err != nil {
		t.Fatal(err)
	}

	res, err := tb.Compact(ctx, CompactOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	t.Logf("compaction: %+v", res)
	if res.SnapshotID == 0 || res.Groups != 2 || res.RewrittenFiles != 2*commits || res.AddedFiles != 2 ||
		res.FilesBefore != 2*commits || res.FilesAfter != 2 || res.Rows != commits*per || res.Attempts != 1 {
		t.Fatalf("result %+v: want 2 groups, %d files rewritten into 2, %d rows, one attempt", res, 2*commits, commits*per)
	}

	after := liveFiles(t, tb)
	if len(after) != 2 {
		t.Fatalf("partitions after: %v, want 2", after)
	}
	for p, fs := range after {
		if len(fs) != 1 {
			t.Errorf("partition %s has %d files after compaction, want 1", p, len(fs))
		}
		checkZstd(t, fs[0])
	}
	if got := readAll(t, tb); !maps.Equal(got, before) {
		t.Fatalf("rows changed: %d before, %d after", len(before), len(got))
	}
	offsetsAfter, err := tb.CommittedOffsets(ctx, "g", "t")
	if err != nil || !mapsEqual(offsetsAfter, offsetsBefore) {
		t.Fatalf("offsets after compaction = %v, %v; want %v", offsetsAfter, err, offsetsBefore)
	}
	tbl, _ := tb.Iceberg(ctx)
	cur := tbl.CurrentSnapshot()
	if cur.SnapshotID != res.SnapshotID || cur.Summary.Operation != table.OpReplace {
		t.Fatalf("current snapshot %d %s, want the compaction's %d replace", cur.SnapshotID, cur.Summary.Operation, res.SnapshotID)
	}
	if v := cur.Summary.Properties[OffsetsKey("g", "t")]; v != `{"0":200}` {
		t.Errorf("compaction snapshot offsets = %q, want them carried over", v)
	}

	// Nothing is left to do, and an ingest commit continues as before.
	again, err := tb.Compact(ctx, CompactOptions{Allocator: mem})
	if err != nil || again.SnapshotID != 0 || again.FilesBefore != 2 || again.FilesAfter != 2 {
		t.Fatalf("second Compact = %+v, %v; want nothing done", again, err)
	}
	smallCommits(t, tb, mem, day, commits*per, 1, per)
	if got := len(readAll(t, tb)); got != (commits+1)*per {
		t.Fatalf("rows after a later commit = %d, want %d", got, (commits+1)*per)
	}
	// A larger minimum leaves the partitions alone: each has one new file
	// beside the compacted one.
	if res, err := tb.Compact(ctx, CompactOptions{MinInputFiles: 3}); err != nil || res.SnapshotID != 0 {
		t.Fatalf("Compact with 3 minimum input files = %+v, %v; want nothing done", res, err)
	}
	if res, err := tb.Compact(ctx, CompactOptions{}); err != nil || res.FilesBefore != 4 || res.FilesAfter != 2 {
		t.Fatalf("Compact = %+v, %v; want 4 files into 2", res, err)
	}
	time.Sleep(10 * time.Millisecond)
	if o, err := tb.Orphans(ctx, 0); err != nil || len(o.Files) != 0 {
		t.Fatalf("compaction left orphans: %+v, %v", o, err)
	}
}

func TestCompactTargetSize(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	day := time.Date(2026, 10, 2, 0, 0, 0, 0, time.UTC)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	smallCommits(t, tb, mem, day, 0, 6, 50)
	// Every file is larger than a 1-byte target: none is small.
	if res, err := tb.Compact(ctx, CompactOptions{TargetFileBytes: 1}); err != nil || res.SnapshotID != 0 || res.FilesAfter != 6 {
		t.Fatalf("Compact with a 1-byte target = %+v, %v; want nothing done", res, err)
	}
	if _, err := tb.Compact(ctx, CompactOptions{TargetFileBytes: -1}); err == nil {
		t.Fatal("a negative target was accepted")
	}
	res, err := tb.Compact(ctx, CompactOptions{})
	if err != nil || res.FilesAfter != 1 || res.Rows != 300 {
		t.Fatalf("Compact = %+v, %v; want 6 files into 1", res, err)
	}
}

// hookCatalog runs a function once, just before the next commit it
// forwards, as if another writer committed first.
type hookCatalog struct {
	catalog.Catalog
	mu     sync.Mutex
	before func()
}

func (c *hookCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *hookCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	c.mu.Lock()
	f := c.before
	c.before = nil
	c.mu.Unlock()
	if f != nil {
		f()
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

func TestCompactAppendCommittedFirst(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	day := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	l, other := openLake(t, dir), openLake(t, dir)
	hook := &hookCatalog{Catalog: l.cat}
	l.cat = hook
	tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatal(err)
	}
	smallCommits(t, tb, mem, day, 0, 8, 10)
	ingest, err := other.Table(ctx, "ns", "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	hook.before = func() { smallCommits(t, ingest, mem, day, 80, 1, 10) }

	res, err := tb.Compact(ctx, CompactOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	t.Logf("compaction: %+v", res)
	if res.Attempts != 2 || res.RewrittenFiles != 16 || res.FilesBefore != 18 || res.FilesAfter != 4 {
		t.Fatalf("result %+v: want a second attempt committing the 16 files read into 2, beside the 2 appended", res)
	}
	if got := readAll(t, tb); len(got) != 90 {
		t.Fatalf("table has %d rows, want 90", len(got))
	}
	if got, err := tb.CommittedOffsets(ctx, "g", "t"); err != nil || !mapsEqual(got, map[int32]int64{0: 90}) {
		t.Fatalf("offsets = %v, %v; want those of the append that came first", got, err)
	}
	time.Sleep(10 * time.Millisecond)
	if o, err := tb.Orphans(ctx, 0); err != nil || len(o.Files) != 0 {
		t.Fatalf("orphans: %+v, %v", o, err)
	}
}

func TestCompactReplacedUnderneathStartsAgain(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	day := time.Date(2026, 10, 4, 0, 0, 0, 0, time.UTC)
	l, other := openLake(t, dir), openLake(t, dir)
	hook := &hookCatalog{Catalog: l.cat}
	l.cat = hook
	tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatal(err)
	}
	smallCommits(t, tb, mem, day, 0, 6, 10)
	rival, err := other.Table(ctx, "ns", "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rivalRes CompactResult
	var rivalErr error
	hook.before = func() { rivalRes, rivalErr = rival.Compact(ctx, CompactOptions{Allocator: mem}) }

	res, err := tb.Compact(ctx, CompactOptions{Allocator: mem})
	if rivalErr != nil || rivalRes.FilesAfter != 2 {
		t.Fatalf("rival compaction: %+v, %v", rivalRes, rivalErr)
	}
	// The files read were replaced: what was written is discarded and the
	// fresh plan has nothing left to do.
	if err != nil || res.SnapshotID != 0 || res.FilesAfter != 2 {
		t.Fatalf("Compact = %+v, %v; want nothing done after the rival's compaction", res, err)
	}
	if got := readAll(t, tb); len(got) != 60 {
		t.Fatalf("table has %d rows, want 60", len(got))
	}
	time.Sleep(10 * time.Millisecond)
	if o, err := tb.Orphans(ctx, 0); err != nil || len(o.Files) != 0 {
		t.Fatalf("the discarded files are left: %+v, %v", o, err)
	}
}

func TestCompactWithLostReplyIsNotRepeated(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	lossy := &lossyCatalog{Catalog: l.cat}
	l.cat = lossy
	tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	smallCommits(t, tb, mem, time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC), 0, 4, 10)
	lossy.fail.Store(true)
	res, err := tb.Compact(ctx, CompactOptions{})
	if err != nil || res.SnapshotID == 0 {
		t.Fatalf("a compaction that landed was reported as %+v, %v", res, err)
	}
	if got := countFiles(liveFiles(t, tb)); got != 1 {
		t.Fatalf("%d files after compaction, want 1", got)
	}
	if got := readAll(t, tb); len(got) != 40 {
		t.Fatalf("table has %d rows, want 40", len(got))
	}
}

// TestCompactDuringIngest runs compactions and expiries while another
// process keeps committing: every committed row is in the table exactly
// once, and the offsets are those of the last commit.
func TestCompactDuringIngest(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	day := time.Date(2026, 10, 6, 0, 0, 0, 0, time.UTC)
	l, other := openLake(t, dir), openLake(t, dir)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatal(err)
	}
	const first, per = 20, 7
	smallCommits(t, tb, mem, day, 0, first, per)
	ingest, err := other.Table(ctx, "ns", "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The ingest commits every few milliseconds, faster than a real one.
	// Compaction and expiry pin the branch and lose every race in which
	// an ingest commit lands between their load and their commit; they
	// must then retry or fail cleanly, never lose or repeat rows.
	const maxMore = 60
	var wg sync.WaitGroup
	var more atomic.Int64
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 0; i < maxMore; i++ {
			start := (first + i) * per
			r := Range{Start: int64(start), End: int64(start + per)}
			if _, err := ingest.Commit(ctx, reader(t, mem, twoDayRows(start, per, day)), offs("g", "t", map[int32]Range{0: r})); err != nil {
				t.Errorf("ingest commit %d: %v", i, err)
				return
			}
			more.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// Expiry runs beside them, as a third process.
	expirer, err := openLake(t, dir).Table(ctx, "ns", "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var expired, expiries atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			exp, err := expirer.ExpireSnapshots(ctx, 0, 3)
			if err != nil && !errors.Is(err, ErrTooManyConflicts) {
				t.Errorf("ExpireSnapshots: %v", err)
				return
			}
			if err == nil {
				expiries.Add(1)
				expired.Add(int64(len(exp.Expired)))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	compacted := 0
	for round := 0; ; round++ {
		res, err := tb.Compact(ctx, CompactOptions{Allocator: mem})
		if err != nil && !errors.Is(err, ErrTooManyConflicts) {
			t.Fatalf("Compact: %v", err)
		}
		if res.SnapshotID != 0 {
			compacted++
		}
		t.Logf("round %d: compaction of %d files into %d: %d attempts, %v; %d ingest commits so far",
			round, res.RewrittenFiles, res.AddedFiles, res.Attempts, err, more.Load())
		finished := false
		select {
		case <-done:
			finished = true
		default:
		}
		if finished && round >= 1 {
			break
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d expiries committed during the ingest, expiring %d snapshots", expiries.Load(), expired.Load())
	t.Logf("%d of the compactions committed", compacted)

	total := (first + int(more.Load())) * per
	got := readAll(t, tb) // fails on a duplicate id
	if len(got) != total {
		t.Fatalf("table has %d rows, want %d", len(got), total)
	}
	for id := int64(0); id < int64(total); id++ {
		if _, ok := got[id]; !ok {
			t.Fatalf("row %d lost", id)
		}
	}
	if o, err := tb.CommittedOffsets(ctx, "g", "t"); err != nil || !mapsEqual(o, map[int32]int64{0: int64(total)}) {
		t.Fatalf("offsets = %v, %v; want %d", o, err, total)
	}
}

func checkZstd(t *testing.T, uri string) {
	t.Helper()
	pf, err := file.OpenParquetFile(strings.TrimPrefix(uri, "file://"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	for g := 0; g < pf.NumRowGroups(); g++ {
		rg := pf.MetaData().RowGroup(g)
		for i := 0; i < rg.NumColumns(); i++ {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Compression() != compress.Codecs.Zstd {
				t.Errorf("%s column %d compressed with %v, want zstd", uri, i, cc.Compression())
			}
		}
	}
}

func TestExpireSnapshots(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	day := time.Date(2026, 10, 7, 0, 0, 0, 0, time.UTC)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatal(err)
	}
	smallCommits(t, tb, mem, day, 0, 12, 10)
	tbl, _ := tb.Iceberg(ctx)
	oldest := tbl.Metadata().Snapshots()[0].SnapshotID
	offsetsBefore, _ := tb.CommittedOffsets(ctx, "g", "t")

	// Nothing is a day old yet.
	res, err := tb.ExpireSnapshots(ctx, 24*time.Hour, 3)
	if err != nil || len(res.Expired) != 0 || res.Retained != 12 {
		t.Fatalf("ExpireSnapshots(24h, 3) = %+v, %v; want nothing expired", res, err)
	}

	res, err = tb.ExpireSnapshots(ctx, 0, 3)
	if err != nil {
		t.Fatalf("ExpireSnapshots: %v", err)
	}
	t.Logf("expired %d snapshots, deleted %d files", len(res.Expired), len(res.DeletedFiles))
	if len(res.Expired) != 9 || res.Retained != 3 || res.Expired[0] != oldest {
		t.Fatalf("result %+v: want the 9 oldest snapshots expired and 3 kept", res)
	}
	tbl, _ = tb.Iceberg(ctx)
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) != 3 || tbl.CurrentSnapshot() == nil {
		t.Fatalf("%d snapshots left, want 3 with the current one", len(snaps))
	}
	if got, err := tb.CommittedOffsets(ctx, "g", "t"); err != nil || !mapsEqual(got, offsetsBefore) {
		t.Fatalf("offsets after expiry = %v, %v; want %v", got, err, offsetsBefore)
	}
	if _, err := tbl.Scan(table.WithSnapshotID(oldest)).ToArrowTable(ctx); err == nil {
		t.Fatal("time travel to an expired snapshot still works")
	}
	// Appends only: every data file is still live, so only the expired
	// snapshots' manifest lists and manifests were deleted.
	if got := len(readAll(t, tb)); got != 120 {
		t.Fatalf("table has %d rows, want 120", got)
	}
	lists := 0
	for _, p := range res.DeletedFiles {
		if strings.HasSuffix(p, ".parquet") {
			t.Errorf("deleted data file %s of an append-only table", p)
		}
		if strings.Contains(p, "snap-") {
			lists++
		}
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); !os.IsNotExist(err) {
			t.Errorf("reported deleted, but %s is there (%v)", p, err)
		}
	}
	if lists != 9 {
		t.Errorf("%d manifest lists deleted, want 9: %v", lists, res.DeletedFiles)
	}

	// After a compaction, expiring all but the current snapshot deletes
	// the small files it replaced.
	small := liveFiles(t, tb)
	cres, err := tb.Compact(ctx, CompactOptions{Allocator: mem})
	if err != nil || cres.FilesAfter != 2 {
		t.Fatalf("Compact = %+v, %v", cres, err)
	}
	res, err = tb.ExpireSnapshots(ctx, 0, 0)
	if err != nil || len(res.Expired) != 3 || res.Retained != 1 {
		t.Fatalf("ExpireSnapshots(0, 0) = %+v, %v; want all but the current snapshot expired", res, err)
	}
	deleted := map[string]bool{}
	for _, p := range res.DeletedFiles {
		deleted[p] = true
	}
	for _, fs := range small {
		for _, p := range fs {
			if !deleted[p] {
				t.Errorf("replaced small file %s not deleted", p)
			}
			if _, err := os.Stat(strings.TrimPrefix(p, "file://")); !os.IsNotExist(err) {
				t.Errorf("replaced small file %s is still there (%v)", p, err)
			}
		}
	}
	if got := len(readAll(t, tb)); got != 120 {
		t.Fatalf("table has %d rows after compaction and expiry, want 120", got)
	}
	if got, err := tb.CommittedOffsets(ctx, "g", "t"); err != nil || !mapsEqual(got, offsetsBefore) {
		t.Fatalf("offsets after compaction and expiry = %v, %v; want %v", got, err, offsetsBefore)
	}
	if _, err := tb.ExpireSnapshots(ctx, -time.Second, 1); err == nil {
		t.Fatal("a negative age was accepted")
	}
}

// TestExpireKeepsOffsetsBehindForeignSnapshots: when the newest snapshots
// were made by another tool and carry no offsets, expiry keeps the chain
// back to the snapshot that has them.
func TestExpireKeepsOffsetsBehindForeignSnapshots(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	l := openLake(t, t.TempDir())
	day := time.Date(2026, 10, 8, 0, 0, 0, 0, time.UTC)
	tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	smallCommits(t, tb, mem, day, 0, 3, 5)
	for i := 0; i < 3; i++ {
		tbl, err := tb.Iceberg(ctx)
		if err != nil {
			t.Fatal(err)
		}
		txn := tbl.NewTransaction()
		if err := txn.Append(ctx, reader(t, mem, twoDayRows(100+i*3, 3, day)), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tb.ExpireSnapshots(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.RetainedLast != 4 || res.Retained != 4 || len(res.Expired) != 2 {
		t.Fatalf("result %+v: want the 3 foreign snapshots and the last with offsets kept", res)
	}
	if got, err := tb.CommittedOffsets(ctx, "g", "t"); err != nil || !mapsEqual(got, map[int32]int64{0: 15}) {
		t.Fatalf("offsets after expiry = %v, %v; want partition 0 at 15", got, err)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, twoDayRows(15, 5, day)), offs("g", "t", map[int32]Range{0: {Start: 0, End: 5, First: true}})); !errors.Is(err, ErrFenced) {
		t.Fatalf("replay after expiry = %v, want ErrFenced", err)
	}
	if got := len(readAll(t, tb)); got != 24 {
		t.Fatalf("table has %d rows, want 24", got)
	}
}
