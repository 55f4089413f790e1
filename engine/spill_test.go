package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
)

// tempDirSetting is the database's temp_directory.
func tempDirSetting(t *testing.T, db *engine.DB) string {
	t.Helper()
	got := collect(t, db, "SELECT current_setting('temp_directory')::VARCHAR")
	defer releaseAll(got)
	return strings.Clone(got[0].Column(0).ValueStr(0))
}

// TestOpen_SpillDirectory checks where a database spills what does not
// fit in its memory limit. An in-memory one (a replica serving a lake,
// serve --db :memory:, the file reader, the ingest's export database)
// spills to a private directory among the system's temporary files,
// removed on Close, never to DuckDB's default .tmp in the working
// directory, which may be read-only or someone's checkout. A database
// file keeps DuckDB's FILE.tmp; a TempDir given is used and left alone.
func TestOpen_SpillDirectory(t *testing.T) {
	ctx := context.Background()
	cwd, tmp := t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	t.Setenv("TMPDIR", tmp)

	t.Run("in memory", func(t *testing.T) {
		db, err := engine.Open(ctx, engine.Options{Path: ":memory:", MemoryLimit: "100MB", Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dir := tempDirSetting(t, db)
		if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "quiver-spill-") {
			t.Fatalf("temp_directory %q, want a quiver-spill-* directory in %s", dir, tmp)
		}
		// About 170 MB to sort under a 100 MB limit: it spills, and it
		// spills there.
		rows, done := openRows(t, db, "SELECT i, md5(i::VARCHAR) AS s FROM range(3000000) t(i) ORDER BY s", true)
		n, spilled := 0, false
		prev := ""
		for rows.Next() {
			if n == 0 {
				ents, _ := os.ReadDir(dir)
				spilled = len(ents) > 0
			}
			ss := rows.RecordBatch().Column(1).(*array.String)
			for i := range ss.Len() {
				if s := ss.Value(i); s < prev {
					t.Fatalf("row %d: %q after %q: not sorted", n+i, s, prev)
				} else {
					prev = strings.Clone(s)
				}
			}
			n += ss.Len()
		}
		err = rows.Err()
		done()
		if err != nil || n != 3_000_000 {
			t.Fatalf("sorted %d rows, err %v: want all 3000000", n, err)
		}
		if !spilled {
			t.Errorf("nothing in %s while the sorted rows streamed: the sort did not spill there", dir)
		}
		if ents, _ := os.ReadDir(cwd); len(ents) > 0 {
			t.Errorf("the working directory has %v: want nothing there", ents)
		}
		db.Close()
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("after Close, %s: %v; want it removed", dir, err)
		}
	})

	t.Run("database file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "q.duckdb")
		db := openTest(t, engine.Options{Path: path})
		if got := tempDirSetting(t, db); got != path+".tmp" {
			t.Errorf("temp_directory %q, want DuckDB's %q", got, path+".tmp")
		}
	})

	t.Run("given", func(t *testing.T) {
		given := t.TempDir()
		db, err := engine.Open(ctx, engine.Options{Path: ":memory:", TempDir: given})
		if err != nil {
			t.Fatal(err)
		}
		got := tempDirSetting(t, db)
		db.Close()
		if got != given {
			t.Errorf("temp_directory %q, want %q", got, given)
		}
		if _, err := os.Stat(given); err != nil {
			t.Errorf("a TempDir given was removed: %v", err)
		}
	})

	t.Run("failed open", func(t *testing.T) {
		if db, err := engine.Open(ctx, engine.Options{Path: ":memory:", Settings: []string{"no_such_setting = 1"}}); err == nil {
			db.Close()
			t.Fatal("a bad setting: Open gave no error")
		}
	})

	// Every in-memory database is closed: none left a directory behind.
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left in TMPDIR: %v", names)
	}
}
