package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testsvc"
)

// The tests below run the lake against an Iceberg SQL catalog in a real
// PostgreSQL server, started on 127.0.0.1 for the test (see
// testsvc.StartPostgres; QUIVER_SKIP_POSTGRES=1 skips them). Each test
// gets its own server, so catalogs never mix.

// openPostgresLake opens a lake over a file:// warehouse in dir with its
// catalog in PostgreSQL at pgURL.
func openPostgresLake(t *testing.T, dir, pgURL string) *Lake {
	t.Helper()
	l, err := Open(context.Background(), Config{
		Warehouse:  "file://" + filepath.ToSlash(dir),
		CatalogURI: pgURL,
	})
	if err != nil {
		t.Fatalf("Open with a PostgreSQL catalog: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// catalogRows returns the metadata location of every table the PostgreSQL
// catalog lists under catalog name "quiver", keyed by namespace.name, read
// straight from iceberg-go's iceberg_tables table.
func catalogRows(t *testing.T, pgURL string) map[string]string {
	t.Helper()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(pgURL)))
	defer db.Close()
	rows, err := db.QueryContext(context.Background(),
		"SELECT table_namespace, table_name, metadata_location FROM iceberg_tables WHERE catalog_name = $1", DefaultCatalogName)
	if err != nil {
		t.Fatalf("query the catalog tables: %v", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var ns, name string
		var loc sql.NullString
		if err := rows.Scan(&ns, &name, &loc); err != nil {
			t.Fatal(err)
		}
		out[ns+"."+name] = loc.String
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPostgresCatalogCommitFenceRead commits two batches with offsets,
// reads rows and offsets back, checks that a stale commit is fenced and
// changes nothing, and that a second lake (another process) sees the same
// table through PostgreSQL.
func TestPostgresCatalogCommitFenceRead(t *testing.T) {
	t.Parallel()
	pgURL := testsvc.StartPostgres(t)
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	l := openPostgresLake(t, dir, pgURL)
	day := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)

	tb, err := l.Table(ctx, "kafka.raw", "events", baseSchema, []PartitionField{{Column: "ts", Transform: Day}})
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	first := rowsFrom(0, 50, day)
	res, err := tb.Commit(ctx, reader(t, mem, first),
		offs("g", "events", map[int32]Range{0: {Start: 0, End: 40, First: true}, 3: {Start: 1000, End: 1010, First: true}}))
	if err != nil {
		t.Fatalf("first Commit: %v", err)
	}
	if res.Rows != 50 || res.Files < 2 || res.SnapshotID == 0 || res.Attempts != 1 {
		t.Fatalf("first commit result = %+v, want 50 rows in at least 2 files, one attempt", res)
	}
	second := rowsFrom(50, 30, day)
	res2, err := tb.Commit(ctx, reader(t, mem, second), offs("g", "events", map[int32]Range{0: {Start: 40, End: 70}}))
	if err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	if res2.Rows != 30 || res2.Attempts != 1 || res2.SnapshotID == res.SnapshotID {
		t.Fatalf("second commit result = %+v", res2)
	}

	wantRows := append(append([]row(nil), first...), second...)
	wantOffsets := map[int32]int64{0: 70, 3: 1010}
	check := func(what string, tb *Table) {
		t.Helper()
		got := readAll(t, tb)
		if len(got) != len(wantRows) {
			t.Fatalf("%s: read %d rows, want %d", what, len(got), len(wantRows))
		}
		for _, w := range wantRows {
			g, ok := got[w.id]
			if !ok || g.name != w.name || !g.ts.Equal(w.ts) {
				t.Fatalf("%s: row %d = %+v (found %v), want %+v", what, w.id, g, ok, w)
			}
		}
		offsets, err := tb.CommittedOffsets(ctx, "g", "events")
		if err != nil {
			t.Fatal(err)
		}
		if !mapsEqual(offsets, wantOffsets) {
			t.Fatalf("%s: offsets = %v, want %v", what, offsets, wantOffsets)
		}
		tbl, err := tb.Iceberg(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snaps := tbl.Metadata().Snapshots()
		if len(snaps) != 2 || tbl.CurrentSnapshot().SnapshotID != res2.SnapshotID {
			t.Fatalf("%s: %d snapshots, current %d; want 2, current %d", what, len(snaps), tbl.CurrentSnapshot().SnapshotID, res2.SnapshotID)
		}
		if got := tbl.CurrentSnapshot().Summary.Properties[OffsetsKey("g", "events")]; got != `{"0":70,"3":1010}` {
			t.Fatalf("%s: offsets in the snapshot summary = %s", what, got)
		}
	}
	check("after two commits", tb)

	// The catalog lives in PostgreSQL, not in a SQLite file next to the
	// data, and points at the table's current metadata.
	if _, err := os.Stat(filepath.Join(dir, "catalog.db")); !os.IsNotExist(err) {
		t.Fatalf("a catalog.db appeared in the warehouse: %v", err)
	}
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rows := catalogRows(t, pgURL); len(rows) != 1 || rows["kafka.raw.events"] != tbl.MetadataLocation() {
		t.Fatalf("PostgreSQL catalog rows = %v, want kafka.raw.events at %s", rows, tbl.MetadataLocation())
	}

	// Stale commits: a replay of the second batch, a replay of the first
	// marked First, and a gap. Each is fenced and changes nothing.
	for _, stale := range []map[int32]Range{
		{0: {Start: 40, End: 70}},
		{0: {Start: 0, End: 40, First: true}},
		{0: {Start: 70, End: 80}, 3: {Start: 1005, End: 1010}},
	} {
		_, err := tb.Commit(ctx, reader(t, mem, rowsFrom(500, 10, day)), offs("g", "events", stale))
		if !errors.Is(err, ErrFenced) {
			t.Fatalf("stale commit %v = %v, want ErrFenced", stale, err)
		}
	}
	check("after stale commits", tb)
	if rows := catalogRows(t, pgURL); rows["kafka.raw.events"] != tbl.MetadataLocation() {
		t.Fatalf("a fenced commit moved the catalog row to %s", rows["kafka.raw.events"])
	}
	time.Sleep(10 * time.Millisecond)
	orphans, err := tb.Orphans(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans.Files) != 0 {
		t.Fatalf("fenced commits left files behind: %v", orphans.Files)
	}

	// Another process opening the same catalog sees the same table.
	other := openPostgresLake(t, dir, pgURL)
	tb2, err := other.Table(ctx, "kafka.raw", "events", nil, nil)
	if err != nil {
		t.Fatalf("load from a second lake: %v", err)
	}
	check("from a second lake", tb2)
}

// TestPostgresCatalogConcurrentLakes has two lakes over the same
// PostgreSQL catalog, as two processes would, commit concurrently to
// different Kafka partitions. Every commit lands once: losers of the
// catalog's compare-and-swap retry on the new metadata.
func TestPostgresCatalogConcurrentLakes(t *testing.T) {
	t.Parallel()
	pgURL := testsvc.StartPostgres(t)
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	day := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)

	lakes := []*Lake{openPostgresLake(t, dir, pgURL), openPostgresLake(t, dir, pgURL)}
	if _, err := lakes[0].Table(ctx, "ns", "t", baseSchema, []PartitionField{{Column: "ts", Transform: Hour}}); err != nil {
		t.Fatal(err)
	}

	const commits, perCommit = 10, 5
	var wg sync.WaitGroup
	errs := make([]error, len(lakes))
	attempts := make([]int, len(lakes))
	start := make(chan struct{})
	for w, l := range lakes {
		tb, err := l.Table(ctx, "ns", "t", baseSchema, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			p := int32(w)
			for i := 0; i < commits; i++ {
				first := int64(i * perCommit)
				rdr := recordReader(mem, rowsFrom(w*1000+i*perCommit, perCommit, day))
				res, err := tb.Commit(ctx, rdr, offs("g", "t", map[int32]Range{p: {first, first + perCommit, i == 0}}))
				rdr.Release()
				if err != nil {
					errs[w] = err
					return
				}
				attempts[w] += res.Attempts
			}
		}()
	}
	close(start)
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
	t.Logf("catalog attempts per writer: %v for %d commits each", attempts, commits)

	tb, err := lakes[1].Table(ctx, "ns", "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tb.CommittedOffsets(ctx, "g", "t")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int32]int64{0: commits * perCommit, 1: commits * perCommit}; !mapsEqual(got, want) {
		t.Fatalf("offsets = %v, want %v", got, want)
	}
	rows := readAll(t, tb)
	if len(rows) != 2*commits*perCommit {
		t.Fatalf("table has %d rows, want %d", len(rows), 2*commits*perCommit)
	}
	for w := range lakes {
		for i := 0; i < commits*perCommit; i++ {
			if _, ok := rows[int64(w*1000+i)]; !ok {
				t.Fatalf("row %d of writer %d is missing", w*1000+i, w)
			}
		}
	}
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 2*commits {
		t.Fatalf("%d snapshots, want one per commit, %d", n, 2*commits)
	}
}

// racingCatalog lets another writer commit just before the next commit of
// this one reaches the catalog, so that commit is built on metadata that
// is no longer current and PostgreSQL's compare-and-swap must refuse it.
type racingCatalog struct {
	catalog.Catalog
	before atomic.Pointer[func()]
}

func (c *racingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *racingCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if f := c.before.Swap(nil); f != nil {
		(*f)()
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// TestPostgresCatalogConflictRetry makes a commit lose the race in
// PostgreSQL for sure: the other lake's commit lands in between, the
// catalog refuses the stale one, and Commit retries it on the new metadata
// (and fences again) instead of failing or overwriting the other commit.
func TestPostgresCatalogConflictRetry(t *testing.T) {
	t.Parallel()
	pgURL := testsvc.StartPostgres(t)
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	day := time.Date(2026, 7, 3, 0, 0, 0, 0, time.UTC)

	a, b := openPostgresLake(t, dir, pgURL), openPostgresLake(t, dir, pgURL)
	racing := &racingCatalog{Catalog: a.cat}
	a.cat = racing
	ta, err := a.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Table(ctx, "ns", "t", baseSchema, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The raw conflict first: a transaction on metadata that another lake
	// has moved past is refused by the catalog as a conflict.
	stale, err := ta.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, reader(t, mem, rowsFrom(1000, 5, day)), offs("g", "t", map[int32]Range{1: {0, 5, true}})); err != nil {
		t.Fatal(err)
	}
	txn := stale.NewTransaction()
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		t.Fatal(err)
	}
	if err := txn.AddFiles(ctx, nil, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err == nil || !isConflict(err) {
		t.Fatalf("commit on stale metadata = %v, want a conflict", err)
	}

	// PostgreSQL's own compare-and-swap: the test holds the catalog row
	// locked while both lakes commit, so both pass the catalog's checks of
	// the metadata they loaded and then wait in the UPDATE of the row. Once
	// the lock goes, one UPDATE lands and the other finds the row's
	// metadata location changed, updates nothing, and that commit is
	// retried on the new metadata.
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(pgURL)))
	defer db.Close()
	lock, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := lock.QueryRowContext(ctx, `SELECT 1 FROM iceberg_tables
		WHERE catalog_name = $1 AND table_namespace = 'ns' AND table_name = 't' FOR UPDATE`, DefaultCatalogName).Scan(&one); err != nil {
		lock.Rollback()
		t.Fatalf("lock the catalog row: %v", err)
	}
	var wg sync.WaitGroup
	results := make([]CommitResult, 2)
	errs := make([]error, 2)
	for w, tbw := range []*Table{ta, tb} {
		rdr := recordReader(mem, rowsFrom(2000+100*w, 4, day))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rdr.Release()
			results[w], errs[w] = tbw.Commit(ctx, rdr, offs("cas", "t", map[int32]Range{int32(w): {0, 4, true}}))
		}()
	}
	waiting := 0
	for deadline := time.Now().Add(30 * time.Second); waiting < 2 && time.Now().Before(deadline); {
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE 'UPDATE%iceberg_tables%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if waiting < 2 {
		t.Fatalf("%d commits waited for the locked catalog row, want 2", waiting)
	}
	for w, err := range errs {
		if err != nil {
			t.Fatalf("lake %d: %v", w, err)
		}
	}
	if n := results[0].Attempts + results[1].Attempts; n != 3 {
		t.Fatalf("attempts %d and %d, want 1 and 2: one UPDATE found the row moved", results[0].Attempts, results[1].Attempts)
	}
	if got, err := tb.CommittedOffsets(ctx, "cas", "t"); err != nil || !mapsEqual(got, map[int32]int64{0: 4, 1: 4}) {
		t.Fatalf("offsets after the compare-and-swap race = %v, %v; want both partitions at 4", got, err)
	}

	// Now through Commit: b commits partition 1 just before a's commit of
	// partition 0 reaches PostgreSQL.
	var hookErr error
	hook := func() {
		_, hookErr = tb.Commit(ctx, reader(t, mem, rowsFrom(1005, 5, day)), offs("g", "t", map[int32]Range{1: {5, 10, false}}))
	}
	racing.before.Store(&hook)
	res, err := ta.Commit(ctx, reader(t, mem, rowsFrom(0, 7, day)), offs("g", "t", map[int32]Range{0: {0, 7, true}}))
	if err != nil {
		t.Fatalf("commit that lost the race: %v", err)
	}
	if hookErr != nil {
		t.Fatalf("the racing commit: %v", hookErr)
	}
	if res.Attempts != 2 {
		t.Fatalf("commit took %d attempts, want 2 (one conflict, one retry)", res.Attempts)
	}

	// And a race the fence must win: b commits the very offsets a is about
	// to commit; a's retry finds them committed and is fenced.
	hook = func() {
		_, hookErr = tb.Commit(ctx, reader(t, mem, rowsFrom(1010, 3, day)), offs("g", "t", map[int32]Range{0: {7, 10, false}}))
	}
	racing.before.Store(&hook)
	if _, err := ta.Commit(ctx, reader(t, mem, rowsFrom(7, 3, day)), offs("g", "t", map[int32]Range{0: {7, 10, false}})); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit of offsets another lake committed first = %v, want ErrFenced", err)
	}
	if hookErr != nil {
		t.Fatalf("the racing commit: %v", hookErr)
	}

	got, err := tb.CommittedOffsets(ctx, "g", "t")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int32]int64{0: 10, 1: 10}; !mapsEqual(got, want) {
		t.Fatalf("offsets = %v, want %v", got, want)
	}
	rows := readAll(t, tb)
	for _, id := range []int64{0, 6, 1000, 1009, 1010, 1012} {
		if _, ok := rows[id]; !ok {
			t.Fatalf("row %d is missing from %d rows", id, len(rows))
		}
	}
	for _, id := range []int64{2000, 2003, 2100, 2103} {
		if _, ok := rows[id]; !ok {
			t.Fatalf("row %d is missing from %d rows", id, len(rows))
		}
	}
	if len(rows) != 7+5+5+3+4+4 {
		t.Fatalf("table has %d rows, want 28", len(rows))
	}
	time.Sleep(10 * time.Millisecond)
	if orphans, err := ta.Orphans(ctx, 0); err != nil || len(orphans.Files) != 0 {
		t.Fatalf("orphans = %+v, %v; want none", orphans, err)
	}
}

// recordReader builds a reader of rows in baseSchema; the caller releases
// it. Unlike reader it is safe to call from other goroutines than the
// test's.
func recordReader(mem memory.Allocator, rows []row) array.RecordReader {
	b := array.NewRecordBuilder(mem, baseSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.name == "" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r.name)
		}
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(baseSchema, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err) // the schema is fixed; only a bug here gets this far
	}
	return rdr
}

// TestPostgresCatalogConcurrentStart opens six lakes at once on an empty
// catalog database, as six processes starting together would, and has
// each create its own table in one namespace at the same moment.
func TestPostgresCatalogConcurrentStart(t *testing.T) {
	pgURL := testsvc.StartPostgres(t)
	dir := t.TempDir()
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Open(context.Background(), Config{Warehouse: "file://" + filepath.ToSlash(dir), CatalogURI: pgURL})
			if err != nil {
				errs[i] = fmt.Errorf("open: %w", err)
				return
			}
			defer l.Close()
			_, errs[i] = l.Table(context.Background(), "ns", fmt.Sprintf("t%d", i), baseSchema, nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("lake %d: %v", i, err)
		}
	}
}
