package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/testmem"
)

// TestReadSegmentSource checks that a sealed segment's streamed Parquet
// files are used only when they are exactly the parts its stream table
// lists, with the rows it lists: a missing, short or stray file fails the
// commit instead of committing offsets without their rows.
func TestReadSegmentSource(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		listed  string // VALUES of the stream table; "" for none
		files   map[int]int
		wantErr string
		want    int // sidecars used
	}{
		{"kept in DuckDB", "", nil, "", 0},
		{"two parts", "(0, 3), (1, 2)", map[int]int{0: 3, 1: 2}, "", 2},
		{"missing", "(0, 3), (1, 2)", map[int]int{0: 3}, "missing", 0},
		{"short", "(0, 3)", map[int]int{0: 2}, "holds 2 rows", 0},
		{"stray", "(0, 3)", map[int]int{0: 3, 1: 1}, "not in the segment's stream table", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			seg := segment.Segment{ID: segment.NewSegmentID(time.Now()), Path: ""}
			seg.Path = filepath.Join(dir, seg.ID+".duckdb")
			db, err := engine.Open(ctx, engine.Options{Path: ":memory:", AllowedDirs: []string{dir}})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			stmts := []string{"ATTACH " + engine.QuoteString(seg.Path) + " AS s", "CREATE TABLE s.main.events (id BIGINT)"}
			if tc.listed != "" {
				stmts = append(stmts, "CREATE TABLE s.main."+StreamTable+" (part INTEGER, rows BIGINT)", "INSERT INTO s.main."+StreamTable+" VALUES "+tc.listed)
			}
			for part, n := range tc.files {
				stmts = append(stmts, fmt.Sprintf("COPY (SELECT range AS id FROM range(%d)) TO %s (FORMAT parquet)", n,
					engine.QuoteString(filepath.Join(dir, sidecarName(seg.ID, part)))))
			}
			for _, q := range stmts {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			src, err := readSegmentSource(ctx, conn, seg, "s")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error saying %q", err, tc.wantErr)
			case len(src.sidecars) != tc.want:
				t.Errorf("%d sidecars used, want %d", len(src.sidecars), tc.want)
			}
		})
	}
}

// TestRemoveLiveForLake checks what a lake-mode start removes: the live
// file and its log, unfinished streams and Parquet files of segments never
// sealed; and what it keeps: sealed segments, their Parquet files and
// uploads lists.
func TestRemoveLiveForLake(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "live.duckdb")
	sealed := segment.SealedDir(db)
	id, orphan := segment.NewSegmentID(time.Now()), segment.NewSegmentID(time.Now().Add(time.Second))
	keep := []string{
		filepath.Join(sealed, id+".duckdb"), filepath.Join(sealed, id+".duckdb.uploads"),
		filepath.Join(sealed, sidecarName(id, 0)), filepath.Join(sealed, sidecarName(id, 1)),
	}
	gone := []string{db, db + ".wal", filepath.Join(sealed, sidecarName(id, 2)+".stream"), filepath.Join(sealed, sidecarName(orphan, 0))}
	if err := os.MkdirAll(sealed, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(append([]string{}, keep...), gone...) {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := removeLiveForLake(db)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != len(gone) {
		t.Errorf("removed %v, want %v", removed, gone)
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it kept", filepath.Base(p), err)
		}
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: still there (%v)", filepath.Base(p), err)
		}
	}
	// Nothing to remove is no error.
	if removed, err := removeLiveForLake(filepath.Join(dir, "other.duckdb")); err != nil || len(removed) != 0 {
		t.Errorf("no files: removed %v, %v", removed, err)
	}
}

// TestMainStreamer streams batches into a segment's Parquet file through a
// real DuckDB: sealing names the file as the segment's part and checks its
// rows, a batch pushed but never committed makes the seal fail (its rows
// must not reach the lake), abort leaves no file, and every batch is freed.
func TestMainStreamer(t *testing.T) {
	ctx := context.Background()
	mem := testmem.Checked(t)
	dir := t.TempDir()
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", AllowedDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "tmax", Type: arrow.PrimitiveTypes.Uint32}}, nil)
	batch := func(from, n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for i := from; i < from+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.Uint32Builder).Append(uint32(i))
		}
		return b.NewRecordBatch()
	}
	m := &mainStreamer{db: db, dir: dir, schema: schema, query: func(view, path string) string {
		return "COPY (SELECT id, CAST(tmax AS INTEGER) AS tmax FROM " + view + ") TO " + engine.QuoteString(path) + " (FORMAT parquet, PRESERVE_ORDER false)"
	}}
	id := segment.NewSegmentID(time.Now())
	push := func(from, n int, commit bool) {
		t.Helper()
		rec := batch(from, n)
		defer rec.Release()
		if err := m.push(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if commit {
			m.commit(int64(n))
		}
	}

	// Two parts of one segment (a rotation skipped in between), then a
	// stream with a batch that never committed.
	for part := 0; part < 2; part++ {
		if err := m.open(ctx, id); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 3; k++ {
			push(part*3000+k*1000, 1000, true)
		}
		got, rows, err := m.seal()
		if err != nil || got != part || rows != 3000 {
			t.Fatalf("seal: part %d, %d rows, %v; want part %d, 3000 rows", got, rows, err, part)
		}
		file := engine.QuoteString(filepath.Join(dir, sidecarName(id, part)))
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n, err := c.QueryInt64(ctx, "SELECT count(DISTINCT id) FILTER (WHERE id = tmax) FROM read_parquet("+file+")")
		c.Release()
		if err != nil || n != 3000 {
			t.Errorf("part %d: %d distinct rows, %v; want 3000", part, n, err)
		}
	}
	if err := m.open(ctx, id); err != nil {
		t.Fatal(err)
	}
	push(6000, 1000, true)
	push(7000, 1000, false)
	if _, _, err := m.seal(); err == nil || !strings.Contains(err.Error(), "only 1000 were committed") {
		t.Errorf("seal after an uncommitted batch: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, sidecarName(id, 2))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused stream's file is there: %v", err)
	}

	// A push after the seal has nowhere to go; abort removes the file.
	rec := batch(0, 10)
	if err := m.push(ctx, rec); err == nil {
		t.Error("push with no stream open: no error")
	}
	rec.Release()
	if err := m.open(ctx, segment.NewSegmentID(time.Now().Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	push(0, 10, true)
	m.abort()
	if left, _ := filepath.Glob(filepath.Join(dir, "*.stream")); len(left) != 0 {
		t.Errorf("abort left %v", left)
	}
}
