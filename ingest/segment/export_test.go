package segment_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
)

// sealedFixture writes a database file holding table events (n rows over
// two days) and table extra (empty), seals it, and returns the segment.
// It uses conn, an in-memory database's connection, through ATTACH.
func sealedFixture(t *testing.T, ctx context.Context, conn *engine.Conn, dir string, n int) segment.Segment {
	t.Helper()
	db := filepath.Join(dir, "live.duckdb")
	for _, sql := range []string{
		"ATTACH " + engine.QuoteString(db) + " AS fixture",
		fmt.Sprintf(`CREATE TABLE fixture.events AS SELECT range AS id, 'v' || range AS v,
			TIMESTAMPTZ '2025-02-24 12:00:00+00' + INTERVAL (range) HOUR AS _timestamp FROM range(%d)`, n),
		"CREATE TABLE fixture.extra (x INTEGER)",
		"DETACH fixture",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	seg, err := segment.Seal(db, segment.NewSegmentID(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	return seg
}

func openMemory(t *testing.T) (context.Context, *engine.Conn) {
	t.Helper()
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", ExternalAccess: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return ctx, conn
}

func scalar(t *testing.T, ctx context.Context, conn *engine.Conn, sql string) string {
	t.Helper()
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", sql, rows.Err())
	}
	return rows.RecordBatch().Column(0).ValueStr(0)
}

func parquetFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestExporter_Export(t *testing.T) {
	ctx, conn := openMemory(t)
	dir := t.TempDir()
	seg := sealedFixture(t, ctx, conn, dir, 48)
	keys, _ := segment.ParsePartitionSpec(segment.DefaultPartition)
	ex, err := segment.NewExporter(segment.ExportConfig{Dir: filepath.Join(dir, "lake"), Tables: []segment.Table{
		{Name: "events", Partition: keys}, {Name: "extra"}, {Name: "absent"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ex.Export(ctx, conn, seg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows["events"] != 48 || st.Files != 3 || st.Bytes == 0 {
		t.Errorf("stats: got %+v, want 48 events rows in 3 files", st)
	}
	want := []string{
		"events/dt=2025-02-24/" + seg.ID + "_0.parquet",
		"events/dt=2025-02-25/" + seg.ID + "_0.parquet",
		"events/dt=2025-02-26/" + seg.ID + "_0.parquet",
	}
	if got := parquetFiles(t, ex.Dir()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files: got %v, want %v", got, want)
	}
	if _, err := os.Stat(seg.Path); !os.IsNotExist(err) {
		t.Errorf("segment not removed: %v", err)
	}
	glob := filepath.Join(ex.Dir(), "events", "**", "*.parquet")
	if got := scalar(t, ctx, conn, "SELECT count(*) || ':' || sum(id) || ':' || count(*) FILTER (WHERE v <> 'v' || id) FROM read_parquet('"+glob+"', hive_partitioning = true)"); got != "48:1128:0" {
		t.Errorf("parquet rows: got %s, want 48:1128:0", got)
	}
	if got := scalar(t, ctx, conn, "SELECT count(*) FROM read_parquet('"+glob+"', hive_partitioning = true) WHERE dt <> strftime(_timestamp, '%Y-%m-%d')"); got != "0" {
		t.Errorf("rows in the wrong partition: got %s", got)
	}
}

// TestExporter_Redo checks that an export interrupted while moving files
// is redone exactly: files already moved are replaced, not duplicated.
func TestExporter_Redo(t *testing.T) {
	ctx, conn := openMemory(t)
	dir := t.TempDir()
	seg := sealedFixture(t, ctx, conn, dir, 30)
	ex, err := segment.NewExporter(segment.ExportConfig{Dir: filepath.Join(dir, "lake"), Tables: []segment.Table{{Name: "events"}}})
	if err != nil {
		t.Fatal(err)
	}
	// What a crash mid-move leaves: the marker, and a file moved into place
	// under another name than the redo will produce.
	stage := filepath.Join(ex.Dir(), "_staging", seg.ID)
	os.MkdirAll(stage, 0o755)
	os.WriteFile(filepath.Join(stage, "_MOVING"), nil, 0o644)
	os.MkdirAll(ex.TableDir("events"), 0o755)
	stale := filepath.Join(ex.TableDir("events"), seg.ID+"_7.parquet")
	os.WriteFile(stale, []byte("partial"), 0o644)
	// And a leftover staging area of a segment exported long ago.
	old := filepath.Join(ex.Dir(), "_staging", segment.NewSegmentID(time.Unix(1, 0)))
	os.MkdirAll(old, 0o755)

	if err := ex.Recover([]segment.Segment{seg}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("leftover staging of a gone segment not removed: %v", err)
	}
	if _, err := ex.Export(ctx, conn, seg); err != nil {
		t.Fatal(err)
	}
	if got, want := parquetFiles(t, ex.Dir()), []string{"events/" + seg.ID + "_0.parquet"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files: got %v, want %v", got, want)
	}
	if got := scalar(t, ctx, conn, "SELECT count(*) FROM read_parquet('"+filepath.Join(ex.TableDir("events"), "*.parquet")+"')"); got != "30" {
		t.Errorf("rows: got %s, want 30", got)
	}
	if got := scalar(t, ctx, conn, "SELECT DISTINCT compression FROM parquet_metadata('"+filepath.Join(ex.TableDir("events"), "*.parquet")+"')"); got != "ZSTD" {
		t.Errorf("compression: got %s, want ZSTD", got)
	}
}

func TestExporter_Validate(t *testing.T) {
	ctx, conn := openMemory(t)
	if _, err := conn.Exec(ctx, "CREATE TABLE events (ts TIMESTAMPTZ)"); err != nil {
		t.Fatal(err)
	}
	good, _ := segment.ParsePartitionSpec("day=strftime(ts, '%Y-%m-%d')")
	bad, _ := segment.ParsePartitionSpec("day=strftime(nope, '%Y')")
	for _, tt := range []struct {
		keys []segment.PartitionKey
		ok   bool
	}{{good, true}, {bad, false}} {
		ex, err := segment.NewExporter(segment.ExportConfig{Dir: t.TempDir(), Tables: []segment.Table{{Name: "events", Partition: tt.keys}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := ex.Validate(ctx, conn); (err == nil) != tt.ok {
			t.Errorf("Validate(%v): got %v, want ok=%v", tt.keys, err, tt.ok)
		}
	}
	if _, err := segment.NewExporter(segment.ExportConfig{Dir: t.TempDir(), Tables: []segment.Table{{Name: "_staging"}}}); err == nil {
		t.Error("table named _staging: got no error")
	}
}

// TestExporter_ParquetVersion checks the files' encodings: V2 (the
// default) delta-encodes the integer column, V1 leaves it PLAIN, and an
// unknown version is refused before anything is written.
func TestExporter_ParquetVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    string // encodings of the id column
		wantErr string
	}{
		{version: "", want: "DELTA_BINARY_PACKED"},
		{version: "v2", want: "DELTA_BINARY_PACKED"},
		{version: "V1", want: "PLAIN"},
		{version: "V3", wantErr: `unknown Parquet version "V3": use V1 or V2`},
	} {
		t.Run("version="+tc.version, func(t *testing.T) {
			ctx, conn := openMemory(t)
			dir := t.TempDir()
			ex, err := segment.NewExporter(segment.ExportConfig{Dir: filepath.Join(dir, "lake"), ParquetVersion: tc.version,
				Tables: []segment.Table{{Name: "events"}}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seg := sealedFixture(t, ctx, conn, dir, 1000)
			if _, err := ex.Export(ctx, conn, seg); err != nil {
				t.Fatal(err)
			}
			glob := engine.QuoteString(filepath.Join(ex.Dir(), "events", "*.parquet"))
			got := scalar(t, ctx, conn, "SELECT string_agg(DISTINCT encodings, '; ') FROM parquet_metadata("+glob+") WHERE path_in_schema = 'id'")
			if !strings.Contains(got, tc.want) || (tc.want == "PLAIN" && strings.Contains(got, "DELTA")) {
				t.Errorf("id column encodings: got %q, want %s", got, tc.want)
			}
			if n := scalar(t, ctx, conn, "SELECT count(*) || ':' || sum(id) FROM read_parquet("+glob+")"); n != "1000:499500" {
				t.Errorf("rows: got %s, want 1000:499500", n)
			}
		})
	}
}
