package backup_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverdata/quiver/backup"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/lake"
)

// served opens a file database the way a server does: external access
// off, the staging directory allowed.
func served(t *testing.T) (*engine.DB, *backup.Backer) {
	t.Helper()
	dir := t.TempDir()
	staging := filepath.Join(dir, "staging")
	if err := os.MkdirAll(staging, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(context.Background(), engine.Options{Path: filepath.Join(dir, "served.duckdb"), AllowedDirs: []string{staging}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("users\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := backup.NewBacker(db, staging, map[string]string{backup.UsersFile: users, backup.TokenKeyFile: filepath.Join(dir, "missing.tokenkey")}, nil)
	if err := b.CleanStaging(); err != nil {
		t.Fatal(err)
	}
	return db, b
}

func exec(t *testing.T, db *engine.DB, sql string) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryInt(t *testing.T, db *engine.DB, sql string) int64 {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	n, err := c.QueryInt64(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func openStore(t *testing.T) *backup.Store {
	t.Helper()
	st, err := backup.Open(context.Background(), "file://"+t.TempDir(), lake.S3Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// restore restores m into a new file and opens it.
func restore(t *testing.T, st *backup.Store, m *backup.Manifest) *engine.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "restored.duckdb")
	if _, err := backup.Restore(context.Background(), st, m, backup.Targets{DB: path}, false); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(context.Background(), engine.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestBacker_Run(t *testing.T) {
	db, b := served(t)
	exec(t, db, `CREATE SCHEMA s2;
		CREATE SEQUENCE seq START 10;
		CREATE TABLE t(id BIGINT PRIMARY KEY DEFAULT nextval('seq'), m ENUM('a', 'b'), note VARCHAR, l INT[]);
		INSERT INTO t(m, note, l) VALUES ('a', 'x', [1, 2]), ('b', NULL, NULL), ('a', 'a longer string than twelve', []);
		CREATE TABLE s2.u(x INTEGER CHECK (x > 0));
		INSERT INTO s2.u SELECT range + 1 FROM range(5000);
		CREATE TABLE empty(x DOUBLE);
		CREATE INDEX ux ON s2.u(x);
		CREATE MACRO plus1(a) AS a + 1;
		CREATE VIEW v AS SELECT plus1(id) AS n FROM t`)
	st := openStore(t)
	m, err := b.Run(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	got := restore(t, st, m)
	for _, c := range []struct {
		sql  string
		want int64
	}{
		{"SELECT count(*) FROM t", 3},
		{"SELECT count(*) FROM s2.u", 5000},
		{"SELECT count(*) FROM empty", 0},
		{"SELECT max(n) FROM v", 13},
		{"SELECT nextval('seq')", 13},
		{"SELECT count(*) FROM duckdb_indexes() WHERE index_name = 'ux'", 1},
		{"SELECT count(*) FROM t WHERE note = 'a longer string than twelve' AND len(l) = 0", 1},
	} {
		t.Run(c.sql, func(t *testing.T) {
			if n := queryInt(t, got, c.sql); n != c.want {
				t.Errorf("got %d, want %d", n, c.want)
			}
		})
	}
	t.Run("manifest", func(t *testing.T) {
		if m.Rows() != 5003 || len(m.Tables) != 3 {
			t.Errorf("got %d rows in %d tables, want 5003 in 3", m.Rows(), len(m.Tables))
		}
		var names []string
		for _, f := range m.Files {
			names = append(names, f.Name)
		}
		if g, w := strings.Join(names, ","), "database.duckdb,users"; g != w {
			t.Errorf("got files %s, want %s", g, w)
		}
	})
	t.Run("verify", func(t *testing.T) {
		same, err := backup.Verify(context.Background(), st, m, t.TempDir())
		if err != nil || !same {
			t.Errorf("got %v (same version %v), want no error", err, same)
		}
	})
}

// TestBacker_RunWhileWriting backs up while a writer commits increasing
// ids, one per transaction: the restored table must hold exactly the ids
// 1..n for some n, with no gap, n at least what was committed when the
// backup began.
func TestBacker_RunWhileWriting(t *testing.T) {
	db, b := served(t)
	exec(t, db, "CREATE TABLE ids(id BIGINT, pad VARCHAR); CREATE TABLE bulk AS SELECT range AS i, repeat('x', 100) AS s FROM range(300000)")
	ctx, cancel := context.WithCancel(context.Background())
	var committed atomic.Int64
	var wg sync.WaitGroup
	werr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := db.Conn(ctx)
		if err != nil {
			werr <- err
			return
		}
		defer c.Close()
		for id := int64(1); ctx.Err() == nil; id++ {
			if _, err := c.Exec(context.Background(), "INSERT INTO ids VALUES (?, 'row')", id); err != nil {
				werr <- err
				return
			}
			committed.Store(id)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for committed.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	before := committed.Load()
	st := openStore(t)
	m, err := b.Run(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	after := committed.Load()
	cancel()
	wg.Wait()
	select {
	case err := <-werr:
		t.Fatalf("writer: %v", err)
	default:
	}
	got := restore(t, st, m)
	n := queryInt(t, got, "SELECT count(*) FROM ids")
	if d := queryInt(t, got, "SELECT count(DISTINCT id) FROM ids"); d != n {
		t.Errorf("got %d distinct ids in %d rows, want no duplicates", d, n)
	}
	if mx := queryInt(t, got, "SELECT coalesce(max(id), 0) FROM ids"); mx != n {
		t.Errorf("got max id %d with %d rows, want a gap-free prefix", mx, n)
	}
	if n < before || n > after {
		t.Errorf("got %d ids, want between %d (committed before the backup) and %d (after)", n, before, after)
	}
	t.Logf("ids committed: %d before the backup, %d in it, %d after it returned", before, n, after)
	var manifestRows int64
	for _, tb := range m.Tables {
		if tb.Name == "ids" {
			manifestRows = tb.Rows
		}
	}
	if manifestRows != n {
		t.Errorf("got %d rows in the manifest, want %d as restored", manifestRows, n)
	}
}

func TestStore_ListIncomplete(t *testing.T) {
	db, b := served(t)
	exec(t, db, "CREATE TABLE t AS SELECT range AS i FROM range(1000)")
	st := openStore(t)
	good, err := b.Run(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // a new ID
	torn, err := b.Run(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	damaged, err := b.Run(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimPrefix(st.URI(), "file://")
	if err := os.Remove(filepath.Join(root, torn.ID, backup.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(root, damaged.ID, backup.DatabaseFile), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("garbage"), 5000); err != nil {
		t.Fatal(err)
	}
	f.Close()

	list, incomplete, err := st.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("list", func(t *testing.T) {
		var ids []string
		for _, m := range list {
			ids = append(ids, m.ID)
		}
		if g, w := strings.Join(ids, ","), good.ID+","+damaged.ID; g != w {
			t.Errorf("got complete %s, want %s", g, w)
		}
		if _, ok := incomplete[torn.ID]; !ok || len(incomplete) != 1 {
			t.Errorf("got incomplete %v, want %s", incomplete, torn.ID)
		}
	})
	t.Run("torn", func(t *testing.T) {
		_, err := st.Manifest(context.Background(), torn.ID)
		if !errors.Is(err, backup.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
	t.Run("damaged", func(t *testing.T) {
		_, err := backup.Verify(context.Background(), st, damaged, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("got %v, want a damaged file", err)
		}
	})
	t.Run("newest", func(t *testing.T) {
		m, err := st.Manifest(context.Background(), "")
		if err != nil || m.ID != damaged.ID {
			t.Errorf("got %v, %v; want %s", m, err, damaged.ID)
		}
	})
	t.Run("restore refuses to overwrite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x.duckdb")
		os.WriteFile(path, []byte("keep"), 0o600)
		_, err := backup.Restore(context.Background(), st, good, backup.Targets{DB: path}, false)
		if !errors.Is(err, backup.ErrExists) {
			t.Errorf("got %v, want ErrExists", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "keep" {
			t.Errorf("got the file changed to %d bytes", len(b))
		}
		if _, err := backup.Restore(context.Background(), st, good, backup.Targets{DB: path}, true); err != nil {
			t.Errorf("with force: got %v", err)
		}
	})
}
