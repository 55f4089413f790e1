package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/scrape"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

// lakeRows builds rows id in [from, to), with day = id / perDay as a date
// and name = "n<id>".
func lakeRows(t testing.TB, from, to, perDay int64) array.RecordReader {
	t.Helper()
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for id := from; id < to; id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Date32Builder).Append(arrow.Date32FromTime(base.AddDate(0, 0, int(id/perDay))))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

// lakeTable opens a file:// lake in dir and commits rows [0, n) to
// quiver.events, partitioned by day, in commits of per rows.
func lakeTable(t testing.TB, dir string, n, per, perDay int64) *lake.Table {
	t.Helper()
	return lakeTableIn(t, lake.Config{Warehouse: "file://" + dir}, n, per, perDay)
}

// lakeTableIn is lakeTable for any lake.
func lakeTableIn(t testing.TB, cfg lake.Config, n, per, perDay int64) *lake.Table {
	t.Helper()
	ctx := context.Background()
	lk, err := lake.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Close() })
	rdr := lakeRows(t, 0, 1, perDay)
	tb, err := lk.Table(ctx, "quiver", "events", rdr.Schema(), []lake.PartitionField{{Column: "day", Transform: lake.Day}})
	rdr.Release()
	if err != nil {
		t.Fatal(err)
	}
	for from := int64(0); from < n; from += per {
		to := min(from+per, n)
		rdr := lakeRows(t, from, to, perDay)
		_, err := tb.Commit(ctx, rdr, lake.Offsets{Group: "g", Topic: "t", Ranges: map[int32]lake.Range{0: {Start: from, End: to, First: from == 0}}})
		rdr.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return tb
}

func startLakeServer(t *testing.T, dir string) *server.Server {
	t.Helper()
	return testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "q.duckdb"), MySQLAddr: "127.0.0.1:0",
		Lake: &server.LakeConfig{Iceberg: lake.Config{Warehouse: "file://" + dir}},
	})
}

func queryInt(t *testing.T, c *client.Client, q string) int64 {
	t.Helper()
	r, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer r.Release()
	var v int64
	got := false
	for r.Next() {
		if r.RecordBatch().NumRows() > 0 && !got {
			v, got = r.RecordBatch().Column(0).(*array.Int64).Value(0), true
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// TestLake_Serve reads an Iceberg table through quiver serve --lake over
// Flight and MySQL: counts, a join with a local table, a new commit seen
// by the next query, time travel, and refused writes.
func TestLake_Serve(t *testing.T) {
	dir := t.TempDir()
	tb := lakeTable(t, dir, 10_000, 2_500, 1_000)
	srv := startLakeServer(t, dir)
	c := testutil.Dial(t, srv, client.Config{})
	ctx := context.Background()

	if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != 10_000 {
		t.Fatalf("count: got %d", got)
	}
	if got := queryInt(t, c, "SELECT sum(id)::BIGINT FROM lake.quiver.events WHERE day = DATE '2026-01-03'"); got != (2000+2999)*1000/2 {
		t.Errorf("sum for one day: got %d", got)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE names AS SELECT i AS id, 'local' || i AS label FROM range(0, 10000, 7) t(i)"); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events e JOIN names n ON n.id = e.id WHERE e.name = 'n' || n.id"); got != 1429 {
		t.Errorf("join: got %d", got)
	}

	// A new commit shows in the next query; the old snapshot stays
	// readable by id and by time.
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := tbl.CurrentSnapshot()
	time.Sleep(20 * time.Millisecond)
	rdr := lakeRows(t, 10_000, 10_500, 1_000)
	if _, err := tb.Commit(ctx, rdr, lake.Offsets{Group: "g", Topic: "t", Ranges: map[int32]lake.Range{0: {Start: 10_000, End: 10_500}}}); err != nil {
		t.Fatal(err)
	}
	rdr.Release()
	if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != 10_500 {
		t.Errorf("count after a commit: got %d", got)
	}
	if got := queryInt(t, c, fmt.Sprintf(`SELECT count(*) FROM lake.quiver."events@%d"`, old.SnapshotID)); got != 10_000 {
		t.Errorf("count at the old snapshot: got %d", got)
	}
	at := time.UnixMilli(old.TimestampMs).UTC().Format(time.RFC3339Nano)
	if got := queryInt(t, c, fmt.Sprintf(`SELECT count(*) FROM lake.quiver."events@%s"`, at)); got != 10_000 {
		t.Errorf("count as of %s: got %d", at, got)
	}

	// A table created after the server started is there at once.
	lk, err := lake.Open(ctx, lake.Config{Warehouse: "file://" + dir})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	rdr = lakeRows(t, 0, 42, 1_000)
	other, err := lk.Table(ctx, "staging", "late", rdr.Schema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Commit(ctx, rdr, lake.Offsets{Group: "g", Topic: "late", Ranges: map[int32]lake.Range{0: {Start: 0, End: 42, First: true}}}); err != nil {
		t.Fatal(err)
	}
	rdr.Release()
	if got := queryInt(t, c, "SELECT count(*) FROM lake.staging.late"); got != 42 {
		t.Errorf("a table made after start: got %d", got)
	}

	// Listed like any table.
	if got := queryInt(t, c, "SELECT count(*) FROM information_schema.tables WHERE table_catalog = 'lake' AND table_schema = 'quiver' AND table_name = 'events'"); got != 1 {
		t.Errorf("information_schema: got %d", got)
	}

	for _, q := range []string{
		"INSERT INTO lake.quiver.events VALUES (1, DATE '2026-01-01', 'x')",
		"DELETE FROM lake.quiver.events WHERE id = 1",
		"UPDATE lake.quiver.events SET name = 'y'",
		"DROP VIEW lake.quiver.events",
		"CREATE TABLE lake.quiver.other (i INT)",
		"ALTER VIEW lake.quiver.events RENAME TO e2",
		"DETACH lake",
		"USE lake.quiver; DELETE FROM events",
		"SELECT 1; DROP SCHEMA lake.quiver CASCADE",
	} {
		_, err := c.Exec(ctx, q)
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: got %v, want PermissionDenied: read-only", q, err)
		}
	}
	if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != 10_500 {
		t.Errorf("count after refused writes: got %d", got)
	}
	// Reading the lake into a table of one's own is fine.
	if _, err := c.Exec(ctx, "CREATE TABLE mine AS SELECT * FROM lake.quiver.events WHERE id < 100"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO mine SELECT * FROM lake.quiver.events WHERE id BETWEEN 100 AND 199"); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, c, "SELECT count(*) FROM mine"); got != 200 {
		t.Errorf("copied rows: got %d", got)
	}

	// MySQL: the same table, joined with a local one.
	db, err := sql.Open("mysql", "root@tcp("+srv.MySQLAddr+")/main")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow("SELECT count(*) FROM lake.quiver.events e JOIN names n ON n.id = e.id").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1429 {
		t.Errorf("MySQL join: got %d", n)
	}
	if _, err := db.Exec("DELETE FROM lake.quiver.events"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("MySQL delete: got %v", err)
	}

	// Inside a transaction that is rolled back, and after it.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow("SELECT count(*) FROM lake.quiver.events WHERE id < 500").Scan(&n); err != nil || n != 500 {
		t.Errorf("in a transaction: %d, %v", n, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FROM lake.quiver.events").Scan(&n); err != nil || n != 10_500 {
		t.Errorf("after a rollback: %d, %v", n, err)
	}
}

// metric reads one counter from the server's /metrics.
func metric(t *testing.T, srv *server.Server, name string) float64 {
	t.Helper()
	f, err := scrape.Page(context.Background(), "http://"+srv.HTTPAddr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := f.Value(name, nil)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return v
}

// TestLake_Pruning checks that a predicate on the partition column reads
// only the matching partition's files: 1 day of 100 reads at most 2% of
// the table's bytes, and returns the same rows as a full scan filtered by
// DuckDB.
func TestLake_Pruning(t *testing.T) {
	dir := t.TempDir()
	lakeTable(t, dir, 100_000, 10_000, 1_000)
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "q.duckdb"), HTTPAddr: "127.0.0.1:0",
		Lake: &server.LakeConfig{Iceberg: lake.Config{Warehouse: "file://" + dir}},
	})
	c := testutil.Dial(t, srv, client.Config{})
	cases := []struct {
		name, where string
		rows        int64
		maxShare    float64
	}{
		{"one day of 100", "day = DATE '2026-02-15'", 1_000, 0.02},
		{"one day, constant first", "'2026-02-15' = day", 1_000, 0.02},
		{"two days by IN", "day IN (DATE '2026-01-05', DATE '2026-03-01')", 2_000, 0.03},
		{"three days by BETWEEN", "day BETWEEN '2026-01-10' AND '2026-01-12' AND name LIKE 'n%'", 3_000, 0.04},
		{"ids by statistics", "id >= 99000", 1_000, 0.02},
		{"unprunable", "name = 'n5'", 1, 1.0},
		{"OR is left to DuckDB", "day = DATE '2026-02-15' OR id = 3", 1_001, 1.0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			read0, total0 := metric(t, srv, "quiver_lake_scan_bytes_total"), metric(t, srv, "quiver_lake_scan_snapshot_bytes_total")
			if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events WHERE "+tc.where); got != tc.rows {
				t.Errorf("rows: got %d, want %d", got, tc.rows)
			}
			read, total := metric(t, srv, "quiver_lake_scan_bytes_total")-read0, metric(t, srv, "quiver_lake_scan_snapshot_bytes_total")-total0
			if total <= 0 {
				t.Fatalf("no snapshot bytes counted")
			}
			share := read / total
			t.Logf("read %.0f of %.0f bytes (%.2f%%)", read, total, 100*share)
			if share > tc.maxShare {
				t.Errorf("read %.2f%% of the bytes, want at most %.0f%%", 100*share, 100*tc.maxShare)
			}
		})
	}
}

// TestLake_Metadata lists the lake through Flight SQL's catalog calls.
func TestLake_Metadata(t *testing.T) {
	dir := t.TempDir()
	lakeTable(t, dir, 100, 100, 1_000)
	srv := startLakeServer(t, dir)
	c := testutil.Dial(t, srv, client.Config{})
	ctx := c.Context(context.Background())
	lake := "lake"
	read := func(info *flight.FlightInfo, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var out []string
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				var row []string
				for j := 0; j < int(rec.NumCols()) && j < 4; j++ {
					row = append(row, rec.Column(j).ValueStr(i))
				}
				out = append(out, strings.Join(row, "|"))
			}
		}
		return out
	}
	schemas := read(c.SQL().GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{Catalog: &lake}))
	if !slices.Contains(schemas, "lake|quiver") {
		t.Errorf("GetDbSchemas(lake): %q", schemas)
	}
	tables := read(c.SQL().GetTables(ctx, &flightsql.GetTablesOpts{Catalog: &lake, IncludeSchema: true}))
	if len(tables) != 1 || !strings.HasPrefix(tables[0], "lake|quiver|events|") {
		t.Errorf("GetTables(lake): %q", tables)
	}
}

// TestLake_Endpoints checks that a plain scan of a lake table is split
// into endpoints by groups of data files, each read at one snapshot, and
// that every row arrives exactly once; other queries keep one endpoint.
func TestLake_Endpoints(t *testing.T) {
	dir := t.TempDir()
	tb := lakeTable(t, dir, 50_000, 5_000, 1_000)
	srv := testutil.StartServer(t, server.Config{
		DB:   filepath.Join(t.TempDir(), "q.duckdb"),
		Lake: &server.LakeConfig{Iceberg: lake.Config{Warehouse: "file://" + dir}, PartBytes: 32 << 10},
	})
	mem := testmem.Checked(t)
	c := testutil.Dial(t, srv, client.Config{Allocator: mem})
	ctx := context.Background()
	cases := []struct {
		query    string
		split    bool
		rows     int64
		distinct bool
	}{
		{"SELECT * FROM lake.quiver.events", true, 50_000, true},
		{"SELECT id, name FROM lake.quiver.events WHERE day >= DATE '2026-01-11' AND id % 3 = 0", true, 13_333, true},
		{"SELECT id FROM lake.quiver.events ORDER BY id", false, 50_000, true},
		{"SELECT count(*) AS n FROM lake.quiver.events", false, 1, false},
		{"SELECT DISTINCT day FROM lake.quiver.events", false, 50, false},
		{"SELECT id FROM lake.quiver.events LIMIT 10", false, 10, true},
		{"SELECT e.id FROM lake.quiver.events e JOIN lake.quiver.events f USING (id)", false, 50_000, true},
		{"SELECT id, sum(id) OVER () FROM lake.quiver.events", false, 50_000, true},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			info, err := c.SQL().Execute(c.Context(ctx), tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if split := len(info.Endpoint) > 1; split != tc.split {
				t.Errorf("endpoints: got %d, want split=%v", len(info.Endpoint), tc.split)
			}
			r, err := c.Query(ctx, tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			seen := map[int64]bool{}
			var n int64
			for r.Next() {
				rec := r.RecordBatch()
				n += rec.NumRows()
				if !tc.distinct {
					continue
				}
				ids := rec.Column(0).(*array.Int64)
				for i := 0; i < ids.Len(); i++ {
					if seen[ids.Value(i)] {
						t.Fatalf("id %d twice", ids.Value(i))
					}
					seen[ids.Value(i)] = true
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if n != tc.rows {
				t.Errorf("rows: got %d, want %d", n, tc.rows)
			}
			// Its parts ran the query's own text over fewer files, each a
			// small result: that must not make the next plan think the
			// whole query small, and leave it unsplit.
			again, err := c.SQL().Execute(c.Context(ctx), tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if split := len(again.Endpoint) > 1; split != tc.split {
				t.Errorf("planned again after a run: %d endpoints, want split=%v", len(again.Endpoint), tc.split)
			}
		})
	}

	// The parts of a result read the snapshot it was planned at, even when
	// the table changes before they are fetched.
	info, err := c.SQL().Execute(c.Context(ctx), "SELECT id FROM lake.quiver.events")
	if err != nil {
		t.Fatal(err)
	}
	rdr := lakeRows(t, 50_000, 60_000, 1_000)
	if _, err := tb.Commit(ctx, rdr, lake.Offsets{Group: "g", Topic: "t", Ranges: map[int32]lake.Range{0: {Start: 50_000, End: 60_000}}}); err != nil {
		t.Fatal(err)
	}
	rdr.Release()
	var n int64
	for i, ep := range info.Endpoint {
		s, err := c.SQL().DoGet(c.Context(ctx), ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		var part int64
		for s.Next() {
			part += s.RecordBatch().NumRows()
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		if part == 0 {
			t.Errorf("endpoint %d of %d has no rows", i, len(info.Endpoint))
		}
		n += part
	}
	if n != 50_000 {
		t.Errorf("rows of the parts planned before a commit: got %d, want 50000", n)
	}
	if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != 60_000 {
		t.Errorf("count after the commit: got %d", got)
	}
}

// TestLake_LocalSplitStaysHere checks that the parts of a large local
// table, split as the session asks, list no other replica beside the
// lake's planner: only this server holds the table.
func TestLake_LocalSplitStaysHere(t *testing.T) {
	dir := t.TempDir()
	lakeTable(t, dir, 100, 100, 1_000)
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "q.duckdb"), Peers: []string{"127.0.0.1:1"},
		Lake: &server.LakeConfig{Iceberg: lake.Config{Warehouse: "file://" + dir}},
	})
	c := testutil.Dial(t, srv, client.Config{})
	ctx := context.Background()
	if _, err := c.Exec(ctx, "CREATE TABLE big AS SELECT range AS id FROM range(2500000)"); err != nil {
		t.Fatal(err)
	}
	sctx, res := testutil.SessionCookie(t, c, "split_rows", "1000000")
	if len(res.Errors) > 0 {
		t.Fatalf("split_rows refused: %v", res.Errors)
	}
	info, err := c.SQL().Execute(c.Context(sctx), "SELECT id FROM big")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) < 2 {
		t.Fatalf("endpoints: got %d, want the table split", len(info.Endpoint))
	}
	for i, ep := range info.Endpoint {
		if len(ep.Location) != 0 {
			t.Errorf("endpoint %d of a local table lists %v", i, ep.Location)
		}
	}
	if got := queryInt(t, c, "SELECT count(DISTINCT id) FROM big"); got != 2_500_000 {
		t.Errorf("distinct: %d", got)
	}
	r, err := c.Query(ctx, "SELECT id FROM big")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	if r.Err() != nil || n != 2_500_000 {
		t.Errorf("fetched %d rows, %v", n, r.Err())
	}
	r.Release()
}

// TestLake_LocalTableNamedLikeALakeTable checks that a local table with a
// lake table's name is read as the local one, and that planning its scan
// does not deadlock (it once did: the planner's catalog lookup ran the
// prepare hook, which waited for the lock the planner held).
func TestLake_LocalTableNamedLikeALakeTable(t *testing.T) {
	dir := t.TempDir()
	lakeTable(t, dir, 1_000, 1_000, 1_000)
	srv := startLakeServer(t, dir)
	c := testutil.Dial(t, srv, client.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Exec(ctx, "CREATE TABLE events AS SELECT range AS id FROM range(5000)"); err != nil {
		t.Fatal(err)
	}
	r, err := c.Query(ctx, "SELECT id FROM events")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	if r.Err() != nil || n != 5_000 {
		t.Errorf("local events: %d rows, %v", n, r.Err())
	}
	r.Release()
	if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != 1_000 {
		t.Errorf("lake events: %d", got)
	}
}

// TestLake_BadTimeTravel checks a time-travel name that names no snapshot
// gets a clear error, and the table reads on.
func TestLake_BadTimeTravel(t *testing.T) {
	dir := t.TempDir()
	lakeTable(t, dir, 100, 100, 1_000)
	srv := startLakeServer(t, dir)
	c := testutil.Dial(t, srv, client.Config{})
	for _, tc := range []struct{ name, want string }{
		{`"events@123"`, "has no snapshot 123"},
		{`"events@yesterday"`, "give a snapshot id or a time"},
		{`"events@1999-01-01T00:00:00Z"`, "no snapshot as of 1999-01-01T00:00:00Z"},
	} {
		r, err := c.Query(context.Background(), "SELECT count(*) FROM lake.quiver."+tc.name)
		if err == nil {
			for r.Next() {
			}
			err = r.Err()
			r.Release()
		}
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want InvalidArgument: %s", tc.name, err, tc.want)
		}
	}
	if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != 100 {
		t.Errorf("count after bad names: %d", got)
	}
}

// TestLake_FilesAreTheCatalogs: with a file:// lake, DuckDB may reach the
// lake's directory, but users other than admins read only what the lake
// catalog plans: its tables. DuckDB's file readers, aimed at the lake's
// files or at anything else under its directory, are refused to them.
func TestLake_FilesAreTheCatalogs(t *testing.T) {
	dir := t.TempDir()
	lakeTable(t, dir, 10_000, 2_500, 1_000)
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("an operator's note"), 0o600); err != nil {
		t.Fatal(err)
	}
	var dataFile string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") && dataFile == "" {
			dataFile = p
		}
		return nil
	})
	if dataFile == "" {
		t.Fatal("the lake has no data file")
	}
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "q.duckdb"), MySQLAddr: "127.0.0.1:0",
		Lake:     &server.LakeConfig{Iceberg: lake.Config{Warehouse: "file://" + dir}},
		Security: server.Security{Users: roleUsers},
	})
	ctx := context.Background()
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "adminpw"})
	etl := testutil.Dial(t, srv, client.Config{User: "etl", Password: "etlpw"})
	bi := testutil.Dial(t, srv, client.Config{User: "bi", Password: "bipw"})

	for _, c := range []*client.Client{bi, etl} {
		if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != 10_000 {
			t.Errorf("count through the catalog: got %d", got)
		}
		if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events WHERE day = DATE '2026-01-03' AND id % 2 = 0"); got != 500 {
			t.Errorf("a pruned count through the catalog: got %d", got)
		}
	}
	if _, err := etl.Exec(ctx, "CREATE TABLE copied AS SELECT * FROM lake.quiver.events WHERE id < 100"); err != nil {
		t.Errorf("readwrite copies lake rows into a table: %v", err)
	}
	if got := queryInt(t, admin, "SELECT count(*) FROM read_parquet('"+dataFile+"')"); got <= 0 {
		t.Errorf("admin reads a lake file: %d rows", got)
	}
	for _, c := range []struct {
		sql, function string
	}{
		{"SELECT * FROM read_text('" + secret + "')", "read_text"},
		{"SELECT * FROM read_blob('" + secret + "')", "read_blob"},
		{"SELECT * FROM glob('" + dir + "/**')", "glob"},
		{"SELECT count(*) FROM read_parquet('" + dataFile + "')", "read_parquet"},
		{"SELECT count(*) FROM read_parquet('" + dir + "/**/*.parquet')", "read_parquet"},
		{"SELECT count(*) FROM parquet_metadata('" + dataFile + "')", "parquet_metadata"},
		{"SELECT * FROM read_csv('" + secret + "')", "read_csv"},
		{"SELECT count(*) FROM lake.quiver.events, read_text('" + secret + "')", "read_text"},
		{"SELECT name, value FROM duckdb_variables()", "duckdb_variables"},
		{"SELECT getvariable('x')", "getvariable"},
	} {
		for _, u := range []*client.Client{bi, etl} {
			err := drain(u.Query(ctx, c.sql))
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), c.function) {
				t.Errorf("%s: got %v, want PermissionDenied naming %s", c.sql, err, c.function)
			}
		}
	}
}

// TestLake_FreshSnapshots checks that no planning cache hides a committed
// snapshot: each query after a commit, or after a compaction's replace
// snapshot, counts exactly the rows the table's current snapshot holds.
func TestLake_FreshSnapshots(t *testing.T) {
	dir := t.TempDir()
	tb := lakeTable(t, dir, 2_000, 200, 1_000)
	srv := startLakeServer(t, dir)
	c := testutil.Dial(t, srv, client.Config{})
	ctx := context.Background()
	next := int64(2_000)
	for round := range 6 {
		if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != next {
			t.Fatalf("round %d: count: got %d, want %d", round, got, next)
		}
		if round%2 == 1 {
			res, err := tb.Compact(ctx, lake.CompactOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != next {
				t.Fatalf("round %d: count after a compaction of %d files: got %d, want %d", round, res.RewrittenFiles, got, next)
			}
		}
		rdr := lakeRows(t, next, next+100, 1_000)
		if _, err := tb.Commit(ctx, rdr, lake.Offsets{Group: "g", Topic: "t", Ranges: map[int32]lake.Range{0: {Start: next, End: next + 100}}}); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
		next += 100
	}
	if got := queryInt(t, c, "SELECT count(DISTINCT id) FROM lake.quiver.events"); got != next {
		t.Errorf("distinct ids: got %d, want %d", got, next)
	}
}

// TestLake_SnapshotSeenAtOnce checks that quiver serve --lake shows a
// commit made by another writer to the very next read, whatever the
// client: a Flight query, a Flight prepared statement and a MySQL
// prepared statement that were prepared before the commit and executed
// again after it (MySQL's through a view of the lake table), and a plain
// MySQL query. After a compaction whose old
// files are then expired and deleted, a reader still planning on an old
// snapshot would fail to read its files; every reader must see the
// compaction's snapshot instead.
func TestLake_SnapshotSeenAtOnce(t *testing.T) {
	dir := t.TempDir()
	tb := lakeTable(t, dir, 1_000, 250, 1_000)
	srv := startLakeServer(t, dir)
	c := testutil.Dial(t, srv, client.Config{})
	ctx := context.Background()
	const q = "SELECT count(*), count(DISTINCT id) FROM lake.quiver.events WHERE id >= ?"
	pctx := c.Context(ctx)
	st, err := c.SQL().Prepare(pctx, strings.Replace(q, "?", "0", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(pctx) })
	db, err := sql.Open("mysql", "root@tcp("+srv.MySQLAddr+")/main")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1) // the prepared statement stays on one connection
	// MySQL's parser takes no three-part names in a prepared statement:
	// it reads the lake table through a local view, which plans it anew
	// at every execution as well.
	if _, err := c.Exec(ctx, "CREATE VIEW lake_events AS SELECT * FROM lake.quiver.events"); err != nil {
		t.Fatal(err)
	}
	mst, err := db.Prepare(strings.Replace(q, "lake.quiver.events", "lake_events", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mst.Close() })

	readers := []struct {
		name string
		read func() (rows, ids int64, err error)
	}{
		{"flight", func() (int64, int64, error) {
			r, err := c.Query(ctx, strings.Replace(q, "?", "0", 1))
			if err != nil {
				return 0, 0, err
			}
			defer r.Release()
			var rows, ids int64
			for r.Next() {
				if rec := r.RecordBatch(); rec.NumRows() > 0 {
					rows, ids = rec.Column(0).(*array.Int64).Value(0), rec.Column(1).(*array.Int64).Value(0)
				}
			}
			return rows, ids, r.Err()
		}},
		{"flight-prepared", func() (int64, int64, error) {
			info, err := st.Execute(pctx)
			if err != nil {
				return 0, 0, err
			}
			var rows, ids int64
			for _, ep := range info.Endpoint {
				rdr, err := c.SQL().DoGet(pctx, ep.Ticket)
				if err != nil {
					return 0, 0, err
				}
				for rdr.Next() {
					if rec := rdr.RecordBatch(); rec.NumRows() > 0 {
						rows, ids = rec.Column(0).(*array.Int64).Value(0), rec.Column(1).(*array.Int64).Value(0)
					}
				}
				err = rdr.Err()
				rdr.Release()
				if err != nil {
					return 0, 0, err
				}
			}
			return rows, ids, nil
		}},
		{"mysql", func() (rows, ids int64, err error) {
			err = db.QueryRow(strings.Replace(q, "?", "0", 1)).Scan(&rows, &ids)
			return rows, ids, err
		}},
		{"mysql-prepared", func() (rows, ids int64, err error) {
			err = mst.QueryRow(0).Scan(&rows, &ids)
			return rows, ids, err
		}},
	}
	check := func(step string, want int64) {
		t.Helper()
		for _, r := range readers {
			rows, ids, err := r.read()
			if err != nil {
				t.Errorf("%s, %s: %v", step, r.name, err)
			} else if rows != want || ids != want {
				t.Errorf("%s, %s: rows, distinct ids: got %d, %d, want %d", step, r.name, rows, ids, want)
			}
		}
	}
	next := int64(1_000)
	check("before any commit", next)
	for round := range 4 {
		rdr := lakeRows(t, next, next+100, 1_000)
		if _, err := tb.Commit(ctx, rdr, lake.Offsets{Group: "g", Topic: "t", Ranges: map[int32]lake.Range{0: {Start: next, End: next + 100}}}); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
		next += 100
		check(fmt.Sprintf("round %d, after a commit", round), next)
		if round%2 == 1 {
			res, err := tb.Compact(ctx, lake.CompactOptions{})
			if err != nil {
				t.Fatal(err)
			}
			exp, err := tb.ExpireSnapshots(ctx, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			o, err := tb.Orphans(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := o.Delete(ctx); err != nil {
				t.Fatal(err)
			}
			if res.RewrittenFiles == 0 || len(exp.DeletedFiles)+len(o.Files) == 0 {
				t.Fatalf("round %d: the compaction rewrote %d files and %d+%d were deleted: the old snapshot's files are still there", round, res.RewrittenFiles, len(exp.DeletedFiles), len(o.Files))
			}
			check(fmt.Sprintf("round %d, after a compaction and the deletion of the files it replaced", round), next)
		}
	}
}
