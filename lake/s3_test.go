package lake

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testsvc"
)

// These tests run the lake against a real object store and a real REST
// catalog: a SeaweedFS started on 127.0.0.1 for each test, with signed S3
// requests only.

// s3HermeticEnv clears the AWS variables that Open falls back to, so that
// only what a test puts in its Config reaches the object store.
func s3HermeticEnv(t *testing.T) {
	t.Helper()
	testsvc.ClearAWSEnv(t)
}

// seaweedS3 is the S3 part of a Config for sw: its endpoint, path-style
// addressing, its region and its key pair.
func seaweedS3(sw *testsvc.Seaweed) S3Config {
	return S3Config{
		Endpoint:        sw.S3URL,
		Region:          sw.Region,
		PathStyle:       true,
		AccessKeyID:     sw.AccessKey,
		SecretAccessKey: sw.SecretKey,
	}
}

// s3OpenLake opens cfg and closes the lake when the test ends.
func s3OpenLake(t *testing.T, cfg Config) *Lake {
	t.Helper()
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// s3ClosedAddr returns a loopback address on which nothing listens.
func s3ClosedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// s3DayRows returns n rows with ids from start, a minute apart from the
// start of day, so that they all fall in that day's partition.
func s3DayRows(start, n int, day time.Time) []row {
	out := make([]row, n)
	for i := range out {
		out[i] = row{id: int64(start + i), name: "z", ts: day.Add(time.Duration(i) * time.Minute)}
	}
	return out
}

// s3CheckRows fails unless tb holds exactly want.
func s3CheckRows(t *testing.T, tb *Table, want []row) {
	t.Helper()
	got := readAll(t, tb)
	if len(got) != len(want) {
		t.Fatalf("read %d rows, want %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok := got[w.id]
		if !ok || g.name != w.name || !g.ts.Equal(w.ts) {
			t.Fatalf("row %d = %+v (found %v), want %+v", w.id, g, ok, w)
		}
	}
}

// s3CheckDataFiles checks, through the table's own manifests and file IO,
// that every data file of tb is a Parquet object under prefix whose size
// matches the manifest, and returns their paths.
func s3CheckDataFiles(t *testing.T, tb *Table, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if loc := tbl.MetadataLocation(); !strings.HasPrefix(loc, prefix) {
		t.Fatalf("metadata file %s is not under %s", loc, prefix)
	}
	if loc := DataLocation(tbl); !strings.HasPrefix(loc, prefix) {
		t.Fatalf("data location %s is not under %s", loc, prefix)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatalf("plan files: %v", err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasks {
		df := task.File
		path := df.FilePath()
		if !strings.HasPrefix(path, DataLocation(tbl)+"/") || !strings.HasSuffix(path, ".parquet") || df.FileFormat() != iceberg.ParquetFile {
			t.Fatalf("data file %s (%s) is not a Parquet file under %s", path, df.FileFormat(), DataLocation(tbl))
		}
		f, err := fsys.Open(path)
		if err != nil {
			t.Fatalf("open data file %s: %v", path, err)
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			t.Fatalf("stat data file %s: %v", path, err)
		}
		head, tail := make([]byte, 4), make([]byte, 4)
		_, err1 := f.ReadAt(head, 0)
		_, err2 := f.ReadAt(tail, info.Size()-4)
		f.Close()
		if err1 != nil || err2 != nil {
			t.Fatalf("read data file %s: %v, %v", path, err1, err2)
		}
		if info.Size() != df.FileSizeBytes() || string(head) != "PAR1" || string(tail) != "PAR1" {
			t.Fatalf("data file %s: %d bytes, starts %q, ends %q; the manifest says %d bytes of Parquet",
				path, info.Size(), head, tail, df.FileSizeBytes())
		}
		paths = append(paths, path)
	}
	return paths
}

// s3Cycle runs one writer's life against an S3-backed lake: create a
// table, commit two batches with offsets, read them back, be fenced on a
// stale commit, find the files of a writer that died before committing,
// and see it all again from a second lake over the same catalog. Every
// file must be under prefix.
func s3Cycle(t *testing.T, open func(t *testing.T) *Lake, prefix string) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	day := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	spec := []PartitionField{{Column: "ts", Transform: Day}}
	l := open(t)
	tb, err := l.Table(ctx, "kafka.raw", "events", baseSchema, spec)
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	if got, err := tb.CommittedOffsets(ctx, "g", "events"); err != nil || len(got) != 0 {
		t.Fatalf("offsets of a new table = %v, %v; want none", got, err)
	}

	first, second := rowsFrom(0, 40, day), rowsFrom(40, 25, day)
	res, err := tb.Commit(ctx, reader(t, mem, first), offs("g", "events", map[int32]Range{0: {Start: 0, End: 40, First: true}, 3: {Start: 7, End: 7, First: true}}))
	if err != nil {
		t.Fatalf("first Commit: %v", err)
	}
	if res.Rows != 40 || res.Files < 2 || res.SnapshotID == 0 {
		t.Fatalf("first commit = %+v, want 40 rows in at least 2 files (one per day)", res)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, second), offs("g", "events", map[int32]Range{0: {Start: 40, End: 65}})); err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	want := append(slices.Clone(first), second...)
	s3CheckRows(t, tb, want)
	wantOffsets := map[int32]int64{0: 65, 3: 7}
	if got, err := tb.CommittedOffsets(ctx, "g", "events"); err != nil || !mapsEqual(got, wantOffsets) {
		t.Fatalf("offsets = %v, %v; want %v", got, err, wantOffsets)
	}

	// A zombie writer replays the second batch: fenced, nothing changes.
	// Its rows fall in a partition that has committed files, so deleting
	// its files leaves no empty directory behind (see
	// s3OrphansAfterEmptiedPartition for that case).
	before, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tb.Commit(ctx, reader(t, mem, s3DayRows(1000, 25, day)), offs("g", "events", map[int32]Range{0: {Start: 40, End: 65}}))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("stale commit = %v, want ErrFenced", err)
	}
	after, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID || len(after.Metadata().Snapshots()) != 2 ||
		after.MetadataLocation() != before.MetadataLocation() {
		t.Fatalf("fenced commit changed the table: snapshot %d -> %d, %d snapshots, metadata %s -> %s",
			before.CurrentSnapshot().SnapshotID, after.CurrentSnapshot().SnapshotID, len(after.Metadata().Snapshots()),
			before.MetadataLocation(), after.MetadataLocation())
	}
	s3CheckRows(t, tb, want)
	if got, err := tb.CommittedOffsets(ctx, "g", "events"); err != nil || !mapsEqual(got, wantOffsets) {
		t.Fatalf("offsets after a fenced commit = %v, %v; want %v", got, err, wantOffsets)
	}

	committed := s3CheckDataFiles(t, tb, prefix)
	// The first batch spans two days, the second only the later one.
	if len(committed) != 3 {
		t.Fatalf("table has %d data files, want 3 (one per day of each commit): %v", len(committed), committed)
	}

	// A writer uploads its files and dies before the catalog commit. The
	// orphan listing must find exactly those: not the committed files,
	// and not the fenced commit's, which it deleted.
	lost, err := tb.Write(ctx, reader(t, mem, s3DayRows(2000, 10, day.Add(24*time.Hour))))
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	lostPaths := lost.Paths()
	if len(lostPaths) == 0 {
		t.Fatal("Write wrote no files")
	}
	for _, p := range lostPaths {
		if !strings.HasPrefix(p, prefix) || !strings.HasSuffix(p, ".parquet") {
			t.Fatalf("uncommitted file %s is not a Parquet file under %s", p, prefix)
		}
	}
	// Object stores keep modification times to the second.
	time.Sleep(1100 * time.Millisecond)
	if young, err := tb.Orphans(ctx, time.Hour); err != nil || len(young.Files) != 0 {
		t.Fatalf("orphans older than an hour = %+v, %v; want none", young, err)
	}
	orphans, err := tb.Orphans(ctx, 0)
	if err != nil {
		t.Fatalf("Orphans: %v", err)
	}
	var found []string
	for _, o := range orphans.Files {
		found = append(found, o.Path)
		if o.Size <= 0 {
			t.Errorf("orphan %s has size %d", o.Path, o.Size)
		}
	}
	slices.Sort(found)
	slices.Sort(lostPaths)
	if !slices.Equal(found, lostPaths) {
		t.Fatalf("orphans = %v, want exactly the uncommitted files %v", found, lostPaths)
	}
	deleted, err := orphans.Delete(ctx)
	if err != nil || len(deleted) != len(lostPaths) {
		t.Fatalf("Delete = %v, %v; want %d files", deleted, err, len(lostPaths))
	}
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lostPaths {
		if f, err := fsys.Open(p); err == nil {
			f.Close()
			t.Fatalf("orphan %s still exists after Delete", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open deleted orphan %s = %v, want not-exist", p, err)
		}
	}
	if again, err := tb.Orphans(ctx, 0); err != nil || len(again.Files) != 0 {
		t.Fatalf("orphans after Delete = %+v, %v; want none", again, err)
	}
	if got := s3CheckDataFiles(t, tb, prefix); !slices.Equal(got, committed) {
		t.Fatalf("data files after the orphan clean-up = %v, want %v", got, committed)
	}

	// A second lake over the same catalog, as after a restart, sees the
	// same rows and offsets and continues where the first left off.
	l2 := open(t)
	tb2, err := l2.Table(ctx, "kafka.raw", "events", nil, nil)
	if err != nil {
		t.Fatalf("reload Table: %v", err)
	}
	s3CheckRows(t, tb2, want)
	if got, err := tb2.CommittedOffsets(ctx, "g", "events"); err != nil || !mapsEqual(got, wantOffsets) {
		t.Fatalf("offsets from a second lake = %v, %v; want %v", got, err, wantOffsets)
	}
	third := rowsFrom(65, 5, day)
	if _, err := tb2.Commit(ctx, reader(t, mem, third), offs("g", "events", map[int32]Range{0: {Start: 65, End: 70}})); err != nil {
		t.Fatalf("commit from a second lake: %v", err)
	}
	s3CheckRows(t, tb, append(want, third...))
}

func TestLake_S3SQLCatalog(t *testing.T) {
	s3HermeticEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"quiver-lake"}})
	catalogURI := "sqlite:///" + t.TempDir() + "/catalog.db"
	cfg := Config{
		Warehouse:  "s3://quiver-lake/lake",
		CatalogURI: catalogURI,
		S3:         seaweedS3(sw),
	}
	open := func(t *testing.T) *Lake { return s3OpenLake(t, cfg) }
	t.Run("cycle", func(t *testing.T) {
		s3Cycle(t, open, "s3://quiver-lake/lake/")
	})
	t.Run("orphans before any data", func(t *testing.T) {
		s3OrphansBeforeData(t, open)
	})
	t.Run("orphans after an emptied partition", func(t *testing.T) {
		s3OrphansAfterEmptiedPartition(t, open)
	})
}

func TestLake_S3RESTCatalog(t *testing.T) {
	s3HermeticEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{TableBuckets: []string{"quiver-tables"}})
	cfg := Config{
		Warehouse:      "s3://quiver-tables",
		CatalogURI:     sw.CatalogURL,
		RESTCredential: sw.AccessKey + ":" + sw.SecretKey,
		S3:             seaweedS3(sw),
	}
	open := func(t *testing.T) *Lake { return s3OpenLake(t, cfg) }
	t.Run("cycle", func(t *testing.T) {
		s3Cycle(t, open, "s3://quiver-tables/")
	})
	t.Run("concurrent committers", func(t *testing.T) {
		s3ConcurrentCommitters(t, open, "s3://quiver-tables/")
	})
}

// s3ConcurrentCommitters has three lakes, standing for three processes,
// commit to different Kafka partitions of one table at the same moment,
// round after round. Every commit must land, the losers of each race
// retrying on the winner's metadata, and the final offsets must be the
// union of all three.
func s3ConcurrentCommitters(t *testing.T, open func(t *testing.T) *Lake, prefix string) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	day := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	const writers, rounds, perCommit = 3, 4, 5
	var tables []*Table
	for w := 0; w < writers; w++ {
		tb, err := open(t).Table(ctx, "kafka.raw", "concurrent", baseSchema, []PartitionField{{Column: "ts", Transform: Hour}})
		if err != nil {
			t.Fatalf("writer %d: Table: %v", w, err)
		}
		tables = append(tables, tb)
	}

	attempts := make([]int, writers)
	var want []row
	for round := 0; round < rounds; round++ {
		// Upload first, so that the catalog commits are what races.
		batches := make([]*Files, writers)
		for w, tb := range tables {
			rows := rowsFrom(w*1000+round*perCommit, perCommit, day)
			want = append(want, rows...)
			files, err := tb.Write(ctx, reader(t, mem, rows))
			if err != nil {
				t.Fatalf("writer %d round %d: Write: %v", w, round, err)
			}
			batches[w] = files
		}
		start := make(chan struct{})
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for w, tb := range tables {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				off := int64(round * perCommit)
				res, err := tb.CommitFiles(ctx, batches[w], offs("g", "concurrent", map[int32]Range{
					int32(w): {Start: off, End: off + perCommit, First: round == 0},
				}))
				errs[w] = err
				attempts[w] += res.Attempts
			}()
		}
		close(start)
		wg.Wait()
		for w, err := range errs {
			if err != nil {
				t.Fatalf("writer %d round %d: %v", w, round, err)
			}
		}
	}
	total := 0
	for _, a := range attempts {
		total += a
	}
	t.Logf("catalog attempts per writer: %v for %d commits each (%d retries in all)", attempts, rounds, total-writers*rounds)

	tb := tables[0]
	wantOffsets := map[int32]int64{}
	for w := 0; w < writers; w++ {
		wantOffsets[int32(w)] = rounds * perCommit
	}
	if got, err := tb.CommittedOffsets(ctx, "g", "concurrent"); err != nil || !mapsEqual(got, wantOffsets) {
		t.Fatalf("offsets = %v, %v; want the union %v", got, err, wantOffsets)
	}
	s3CheckRows(t, tb, want)
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != writers*rounds {
		t.Fatalf("table has %d snapshots, want one per commit, %d", n, writers*rounds)
	}
	s3CheckDataFiles(t, tb, prefix)
	time.Sleep(1100 * time.Millisecond)
	if orphans, err := tb.Orphans(ctx, 0); err != nil || len(orphans.Files) != 0 {
		t.Fatalf("orphans after the races = %+v, %v; want none", orphans, err)
	}
}

func TestLake_S3Errors(t *testing.T) {
	s3HermeticEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"quiver-lake"}, TableBuckets: []string{"quiver-tables"}})
	const wrongSecret = "not-the-right-key-0451"
	good := seaweedS3(sw)
	withSecret := func(s S3Config, secret string) S3Config {
		s.SecretAccessKey = secret
		return s
	}
	withEndpoint := func(s S3Config, endpoint string) S3Config {
		s.Endpoint = endpoint
		return s
	}
	sqlite := func(t *testing.T) string { return "sqlite:///" + t.TempDir() + "/catalog.db" }

	cases := []struct {
		name string
		cfg  func(t *testing.T) Config
		// failsAt is the first call that fails: "Open", or "Commit" when
		// Open cannot check the setting.
		failsAt string
		want    []string // distinctive substrings of the error
	}{
		{
			name: "missing bucket",
			cfg: func(t *testing.T) Config {
				return Config{Warehouse: "s3://no-such-bucket/lake", CatalogURI: sqlite(t), S3: good}
			},
			failsAt: "Open",
			want:    []string{`bucket "no-such-bucket"`, "the bucket does not exist"},
		},
		{
			name: "wrong S3 secret key",
			cfg: func(t *testing.T) Config {
				return Config{Warehouse: "s3://quiver-lake/lake", CatalogURI: sqlite(t), S3: withSecret(good, wrongSecret)}
			},
			failsAt: "Open",
			want:    []string{`bucket "quiver-lake"`, "check the endpoint, region and credentials"},
		},
		{
			name: "unreachable S3 endpoint",
			cfg: func(t *testing.T) Config {
				return Config{Warehouse: "s3://quiver-lake/lake", CatalogURI: sqlite(t), S3: withEndpoint(good, "http://"+s3ClosedAddr(t))}
			},
			failsAt: "Open",
			want:    []string{`bucket "quiver-lake"`, "check the endpoint, region and credentials"},
		},
		{
			name: "wrong REST catalog secret",
			cfg: func(t *testing.T) Config {
				return Config{Warehouse: "s3://quiver-tables", CatalogURI: sw.CatalogURL,
					RESTCredential: sw.AccessKey + ":" + wrongSecret, S3: good}
			},
			failsAt: "Open",
			want:    []string{"cannot reach the REST catalog", "credentials"},
		},
		{
			name: "unreachable catalog port",
			cfg: func(t *testing.T) Config {
				return Config{Warehouse: "s3://quiver-tables", CatalogURI: "http://" + s3ClosedAddr(t),
					RESTCredential: sw.AccessKey + ":" + sw.SecretKey, S3: good}
			},
			failsAt: "Open",
			want:    []string{"cannot reach the REST catalog", "check the URI, that the server runs"},
		},
		{
			// A REST catalog owns its warehouse, so Open leaves the bucket
			// alone and a wrong key shows at the first data file.
			name: "wrong S3 secret key with a REST catalog",
			cfg: func(t *testing.T) Config {
				return Config{Warehouse: "s3://quiver-tables", CatalogURI: sw.CatalogURL,
					RESTCredential: sw.AccessKey + ":" + sw.SecretKey, S3: withSecret(good, wrongSecret)}
			},
			failsAt: "Commit",
			want:    []string{"write data files", "SignatureDoesNotMatch"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := tc.cfg(t)
			cfg.ConnectTimeout = 5 * time.Second
			start := time.Now()
			step := "Open"
			l, err := Open(ctx, cfg)
			if err == nil {
				defer l.Close()
				step = "Table"
				var tb *Table
				if tb, err = l.Table(ctx, "ns", "t", baseSchema, nil); err == nil {
					step = "Commit"
					mem := testmem.Checked(t)
					_, err = tb.Commit(ctx, reader(t, mem, s3DayRows(0, 3, time.Now())), offs("g", "t", map[int32]Range{0: {Start: 0, End: 3, First: true}}))
				}
			}
			if err == nil {
				t.Fatalf("Open, Table and Commit succeeded; want %s to fail with an error containing %q", tc.failsAt, tc.want)
			}
			t.Logf("%s failed after %v: %v", step, time.Since(start).Round(time.Millisecond), err)
			if step != tc.failsAt {
				t.Errorf("%s failed, want %s to fail", step, tc.failsAt)
			}
			if d := time.Since(start); d > cfg.ConnectTimeout+time.Second {
				t.Errorf("%s took %v to fail, more than the connect timeout of %v", step, d, cfg.ConnectTimeout)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s = %v\nwant an error containing %q", step, err, w)
				}
			}
			for _, secret := range []string{wrongSecret, sw.SecretKey} {
				if strings.Contains(msg, secret) {
					t.Errorf("error leaks a secret key: %v", err)
				}
			}
		})
	}
}

// s3Orphans returns the orphans of tb with no age limit. Before the first
// data file is written the data location does not exist, and SeaweedFS
// keeps listing a directory whose last object was deleted, for a while,
// as an empty prefix that cannot be opened: Orphans must skip both.
func s3Orphans(t *testing.T, tb *Table) *Orphans {
	t.Helper()
	o, err := tb.Orphans(context.Background(), 0)
	if err != nil {
		t.Fatalf("Orphans: %v", err)
	}
	return o
}

// s3OrphansBeforeData checks that a table without any data file, and so
// without anything under its data location, has no orphans.
func s3OrphansBeforeData(t *testing.T, open func(t *testing.T) *Lake) {
	tb, err := open(t).Table(context.Background(), "kafka.raw", "nodata", baseSchema, nil)
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	if o := s3Orphans(t, tb); len(o.Files) != 0 {
		t.Fatalf("orphans of a table without data = %+v, want none", o.Files)
	}
}

// s3OrphansAfterEmptiedPartition checks Orphans after the only files of a
// partition directory were deleted, by a fenced commit and by
// Orphans.Delete.
func s3OrphansAfterEmptiedPartition(t *testing.T, open func(t *testing.T) *Lake) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	day := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	tb, err := open(t).Table(ctx, "kafka.raw", "emptied", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, s3DayRows(0, 5, day)), offs("g", "emptied", map[int32]Range{0: {Start: 0, End: 5, First: true}})); err != nil {
		t.Fatal(err)
	}

	// A fenced commit whose rows are all in a new partition deletes its
	// files, leaving that partition's directory empty.
	_, err = tb.Commit(ctx, reader(t, mem, s3DayRows(100, 5, day.Add(48*time.Hour))), offs("g", "emptied", map[int32]Range{0: {Start: 0, End: 5}}))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("stale commit = %v, want ErrFenced", err)
	}
	time.Sleep(1100 * time.Millisecond)
	if o := s3Orphans(t, tb); len(o.Files) != 0 {
		t.Fatalf("orphans after a fenced commit = %+v, want none", o.Files)
	}

	// The same after Orphans.Delete empties a directory.
	lost, err := tb.Write(ctx, reader(t, mem, s3DayRows(200, 5, day.Add(96*time.Hour))))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	o := s3Orphans(t, tb)
	if len(o.Files) != lost.Len() {
		t.Fatalf("orphans = %+v, want the %d uncommitted files", o.Files, lost.Len())
	}
	if _, err := o.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if o := s3Orphans(t, tb); len(o.Files) != 0 {
		t.Fatalf("orphans after Delete = %+v, want none", o.Files)
	}
	s3CheckRows(t, tb, s3DayRows(0, 5, day))
}

// s3OpenConns counts the TCP connections this process holds open to port
// on the loopback interface: the sockets among its file descriptors whose
// remote end is that port. Linux only; elsewhere the test is skipped.
func s3OpenConns(t *testing.T, port int) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list the process's file descriptors: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err != nil {
			continue // closed since the listing
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			if table == "/proc/self/net/tcp" {
				t.Skipf("cannot read the TCP socket table: %v", err)
			}
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			_, remPort, ok := strings.Cut(f[2], ":")
			if !ok {
				continue
			}
			if p, err := strconv.ParseInt(remPort, 16, 32); err == nil && int(p) == port {
				n++
			}
		}
	}
	return n
}

// TestLake_S3ConnectionsBounded commits many times in one process and
// checks that the S3 connections it keeps open stay few: every table
// load and commit must reuse one HTTP connection pool rather than leave
// the idle connections of a fresh client behind (iceberg-go builds a new
// S3 client for each operation; see sharedIO).
func TestLake_S3ConnectionsBounded(t *testing.T) {
	s3HermeticEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"quiver-lake"}, TableBuckets: []string{"quiver-tables"}})
	u, err := url.Parse(sw.S3URL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("S3 endpoint %s has no port: %v", sw.S3URL, err)
	}
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"sql catalog", func(t *testing.T) Config {
			return Config{Warehouse: "s3://quiver-lake/lake", CatalogURI: "sqlite:///" + t.TempDir() + "/catalog.db", S3: seaweedS3(sw)}
		}},
		{"rest catalog", func(t *testing.T) Config {
			return Config{Warehouse: "s3://quiver-tables", CatalogURI: sw.CatalogURL,
				RESTCredential: sw.AccessKey + ":" + sw.SecretKey, S3: seaweedS3(sw)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s3CommitsWithBoundedConns(t, s3OpenLake(t, tc.cfg(t)), port)
		})
	}
}

// s3CommitsWithBoundedConns commits 30 times to a table of l and fails if
// the process then holds more than a few connections to the S3 port.
func s3CommitsWithBoundedConns(t *testing.T, l *Lake, port int) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	tb, err := l.Table(ctx, "kafka.raw", "conns", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const commits, perCommit, maxConns = 30, 5, 20
	var counts []int
	for i := 0; i < commits; i++ {
		off := int64(i * perCommit)
		if _, err := tb.Commit(ctx, reader(t, mem, s3DayRows(i*perCommit, perCommit, day)),
			offs("g", "conns", map[int32]Range{0: {Start: off, End: off + perCommit, First: i == 0}})); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		if (i+1)%10 == 0 {
			counts = append(counts, s3OpenConns(t, port))
		}
	}
	t.Logf("open S3 connections after each 10 of %d commits: %v", commits, counts)
	if n := counts[len(counts)-1]; n > maxConns {
		t.Fatalf("%d S3 connections open after %d commits, want at most %d (counts after each 10 commits: %v)", n, commits, maxConns, counts)
	}
	if got, err := tb.CommittedOffsets(ctx, "g", "conns"); err != nil || got[0] != commits*perCommit {
		t.Fatalf("offsets = %v, %v; want %d for partition 0", got, err, commits*perCommit)
	}
}
