package mysqlwire

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

// lockFixture is a server with a table t of n rows, a session that locks
// (or begins a transaction) and another that writes meanwhile.
type lockFixture struct {
	ctx           context.Context
	locker, other *sql.Conn
}

func newLockFixture(t *testing.T) *lockFixture {
	t.Helper()
	ts := startServer(t, Options{})
	f := &lockFixture{ctx: context.Background(), locker: ts.conn(t, ""), other: ts.conn(t, "")}
	f.exec(t, f.other, "CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)")
	f.exec(t, f.other, "CREATE TABLE u (id INTEGER)")
	return f
}

func (f *lockFixture) exec(t *testing.T, c *sql.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		for _, one := range strings.Split(s, "; ") {
			if _, err := c.ExecContext(f.ctx, one); err != nil {
				t.Fatalf("%s: %v", one, err)
			}
		}
	}
}

// count is the rows of t that c sees.
func (f *lockFixture) count(t *testing.T, c *sql.Conn) int {
	t.Helper()
	var n int
	if err := c.QueryRowContext(f.ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

func (f *lockFixture) insert(t *testing.T, id int) {
	t.Helper()
	if _, err := f.other.ExecContext(f.ctx, "INSERT INTO t VALUES (?)", id); err != nil {
		t.Fatalf("insert %d: %v", id, err)
	}
}

func TestSession_LockTables(t *testing.T) {
	t.Run("READ reads one snapshot until UNLOCK TABLES", func(t *testing.T) {
		f := newLockFixture(t)
		f.exec(t, f.locker, "LOCK TABLES `t` READ /*!32311 LOCAL */, u AS x READ, main.u LOW_PRIORITY WRITE")
		f.insert(t, 2)
		if got, want := f.count(t, f.locker), 1; got != want {
			t.Errorf("under READ lock: count = %d, want %d (the snapshot of LOCK TABLES)", got, want)
		}
		if got, want := f.count(t, f.other), 2; got != want {
			t.Errorf("other session: count = %d, want %d (LOCK TABLES blocks nobody)", got, want)
		}
		f.exec(t, f.locker, "UNLOCK TABLES")
		if got, want := f.count(t, f.locker), 2; got != want {
			t.Errorf("after UNLOCK TABLES: count = %d, want %d", got, want)
		}
	})
	t.Run("COMMIT under a READ lock takes a new snapshot", func(t *testing.T) {
		f := newLockFixture(t)
		f.exec(t, f.locker, "LOCK TABLES t READ")
		f.insert(t, 2)
		f.exec(t, f.locker, "COMMIT")
		f.insert(t, 3)
		if got, want := f.count(t, f.locker), 2; got != want {
			t.Errorf("count = %d, want %d", got, want)
		}
		f.exec(t, f.locker, "UNLOCK TABLES")
	})
	t.Run("WRITE takes no snapshot and autocommits", func(t *testing.T) {
		f := newLockFixture(t)
		f.exec(t, f.locker, "LOCK TABLES `t` WRITE", "INSERT INTO t VALUES (5)")
		f.insert(t, 2)
		if got, want := f.count(t, f.other), 3; got != want {
			t.Errorf("other session sees %d rows, want %d (the locker's insert committed)", got, want)
		}
		if got, want := f.count(t, f.locker), 3; got != want {
			t.Errorf("locker sees %d rows, want %d", got, want)
		}
		f.exec(t, f.locker, "UNLOCK TABLES")
	})
	t.Run("FLUSH TABLES WITH READ LOCK", func(t *testing.T) {
		f := newLockFixture(t)
		f.exec(t, f.locker, "FLUSH TABLES", "FLUSH /*!40101 LOCAL */ TABLES WITH READ LOCK")
		f.insert(t, 2)
		if got, want := f.count(t, f.locker), 1; got != want {
			t.Errorf("count = %d, want %d", got, want)
		}
		f.exec(t, f.locker, "UNLOCK TABLES")
		if got, want := f.count(t, f.locker), 2; got != want {
			t.Errorf("after UNLOCK TABLES: count = %d, want %d", got, want)
		}
	})
	t.Run("a table that does not exist", func(t *testing.T) {
		f := newLockFixture(t)
		_, err := f.locker.ExecContext(f.ctx, "LOCK TABLES t READ, nosuch WRITE")
		if mysqlErrNum(err) != 1146 || !strings.Contains(err.Error(), "main.nosuch") {
			t.Errorf("LOCK TABLES nosuch: %v, want error 1146 about main.nosuch", err)
		}
	})
	t.Run("LOCK TABLES commits an open transaction", func(t *testing.T) {
		f := newLockFixture(t)
		f.exec(t, f.locker, "START TRANSACTION", "INSERT INTO t VALUES (7)", "LOCK TABLES t READ")
		if got, want := f.count(t, f.other), 2; got != want {
			t.Errorf("other session sees %d rows, want %d (committed by LOCK TABLES)", got, want)
		}
		f.exec(t, f.locker, "UNLOCK TABLES")
	})
}

func TestSession_ConsistentSnapshot(t *testing.T) {
	for _, stmt := range []string{"START TRANSACTION WITH CONSISTENT SNAPSHOT", "START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */"} {
		t.Run(stmt, func(t *testing.T) {
			f := newLockFixture(t)
			f.exec(t, f.locker, stmt)
			f.insert(t, 2) // before the transaction's first read
			// mysqldump --single-transaction sends UNLOCK TABLES next: it
			// must not end the transaction.
			f.exec(t, f.locker, "UNLOCK TABLES")
			if got, want := f.count(t, f.locker), 1; got != want {
				t.Errorf("count = %d, want %d (the snapshot of START TRANSACTION)", got, want)
			}
			f.insert(t, 3)
			if got, want := f.count(t, f.locker), 1; got != want {
				t.Errorf("count = %d, want %d", got, want)
			}
			f.exec(t, f.locker, "ROLLBACK")
			if got, want := f.count(t, f.locker), 3; got != want {
				t.Errorf("after ROLLBACK: count = %d, want %d", got, want)
			}
		})
	}
	t.Run("unknown mode", func(t *testing.T) {
		f := newLockFixture(t)
		if _, err := f.locker.ExecContext(f.ctx, "START TRANSACTION WITH NOTHING"); mysqlErrNum(err) != 1064 {
			t.Errorf("START TRANSACTION WITH NOTHING: %v, want error 1064", err)
		}
	})
}

func TestSession_Savepoints(t *testing.T) {
	f := newLockFixture(t)
	// What mysqldump --single-transaction does around each table.
	f.exec(t, f.locker, "START TRANSACTION WITH CONSISTENT SNAPSHOT", "SAVEPOINT sp",
		"SHOW CREATE TABLE `t`", "SELECT /*!40001 SQL_NO_CACHE */ * FROM `t`", "ROLLBACK TO SAVEPOINT sp",
		"SELECT * FROM u", "ROLLBACK TO SAVEPOINT sp", "RELEASE SAVEPOINT sp")
	if _, err := f.locker.ExecContext(f.ctx, "ROLLBACK TO SAVEPOINT sp"); mysqlErrNum(err) != 1305 {
		t.Errorf("ROLLBACK TO a released savepoint: %v, want error 1305", err)
	}
	// A write since the savepoint cannot be undone alone.
	f.exec(t, f.locker, "SAVEPOINT a", "INSERT INTO u VALUES (1)")
	if _, err := f.locker.ExecContext(f.ctx, "ROLLBACK TO a"); err == nil || !strings.Contains(err.Error(), "no savepoints") {
		t.Errorf("ROLLBACK TO after a write: %v, want an error", err)
	}
	f.exec(t, f.locker, "ROLLBACK")
	var n int
	if err := f.other.QueryRowContext(f.ctx, "SELECT count(*) FROM u").Scan(&n); err != nil || n != 0 {
		t.Errorf("after ROLLBACK: u has %d rows (%v), want 0", n, err)
	}
	if _, err := f.locker.ExecContext(f.ctx, "RELEASE SAVEPOINT a"); mysqlErrNum(err) != 1305 {
		t.Errorf("RELEASE after ROLLBACK: %v, want error 1305", err)
	}
}

// TestSession_BackslashEscapes checks that a session whose sql_mode lacks
// NO_BACKSLASH_ESCAPES reads backslash escapes, and that the server's
// status says so: go-sql-driver's interpolateParams escapes by it.
func TestSession_BackslashEscapes(t *testing.T) {
	ts := startServer(t, Options{})
	ctx := context.Background()
	c := ts.conn(t, "interpolateParams=true")
	var got string
	if err := c.QueryRowContext(ctx, `SELECT 'a\nb'`).Scan(&got); err != nil || got != `a\nb` {
		t.Errorf("default sql_mode: SELECT 'a\\nb' = %q, %v; want a backslash and an n", got, err)
	}
	tricky := "it's \\ a\nb \"q\" \x1a; '"
	for _, mode := range []string{"", "NO_AUTO_VALUE_ON_ZERO", "ANSI_QUOTES,NO_BACKSLASH_ESCAPES"} {
		if _, err := c.ExecContext(ctx, "SET sql_mode = ?", mode); err != nil {
			t.Fatalf("SET sql_mode = %q: %v", mode, err)
		}
		if err := c.QueryRowContext(ctx, "SELECT ?", tricky).Scan(&got); err != nil || got != tricky {
			t.Errorf("sql_mode %q: SELECT ? = %q, %v; want %q", mode, got, err, tricky)
		}
	}
	if _, err := c.ExecContext(ctx, `SET sql_mode = ''`); err != nil {
		t.Fatal(err)
	}
	checks := []struct{ query, want string }{
		{`SELECT 'a\nb\tc\\d\'e\0f\Zg\%h\_i\qj'`, "a\nb\tc\\d'e\x00f\x1ag\\%h\\_i" + "qj"},
		{`SELECT 'it''s'`, "it's"},
		{`SELECT @@sql_mode`, "ANSI_QUOTES"},
		{`SELECT hex(_binary'\0\\\'')`, "005C27"},
		{`SELECT hex('caf\é')`, "636166C3A9"},
	}
	for _, ck := range checks {
		if err := c.QueryRowContext(ctx, ck.query).Scan(&got); err != nil || got != ck.want {
			t.Errorf("sql_mode '': %s = %q, %v; want %q", ck.query, got, err, ck.want)
		}
	}
	// User variables save and restore sql_mode, as a dump file does.
	for _, stmt := range []string{
		"SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
		"/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */",
	} {
		if _, err := c.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := c.QueryRowContext(ctx, `SELECT 'a\'b'`).Scan(&got); err != nil || got != "a'b" {
		t.Errorf("in a restore: SELECT 'a\\'b' = %q, %v", got, err)
	}
	if _, err := c.ExecContext(ctx, "/*!40101 SET SQL_MODE=@OLD_SQL_MODE */"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRowContext(ctx, "SELECT @@sql_mode").Scan(&got); err != nil || got != "NO_BACKSLASH_ESCAPES,ANSI_QUOTES" {
		t.Errorf("restored sql_mode = %q, %v; want NO_BACKSLASH_ESCAPES,ANSI_QUOTES", got, err)
	}
}
