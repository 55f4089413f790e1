package mysqlwire_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/quiverdata/quiver/mysqlwire"
	"github.com/quiverdata/quiver/server"
)

// The tests here dump with Debian's mysqldump (MariaDB's, from
// mariadb-client) and restore with its mysql client, against quiver
// servers on 127.0.0.1:0 and a real MariaDB started by scripts/mariadb.sh.
// A table is compared by its row count and a checksum of its rows read
// back over the MySQL protocol (tableSums), computed the same way on
// every server.

// needTools skips the test unless the MariaDB client tools are installed.
func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"mysqldump", "mysql"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install mariadb-client, or make deps); skipping the mysqldump tests", tool)
		}
	}
}

// quiver is a quiver server for a test.
type quiver struct{ addr string }

func startQuiver(t *testing.T, demo bool) *quiver {
	t.Helper()
	addr, db := mysqlwire.StartTestServer(t)
	if demo {
		if err := server.LoadDemo(context.Background(), db, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			t.Fatalf("load demo: %v", err)
		}
	}
	return &quiver{addr: addr}
}

// args are the client tools' connection arguments.
func (q *quiver) args() []string {
	host, port, _ := net.SplitHostPort(q.addr)
	return []string{"--protocol=TCP", "-h", host, "-P", port, "-u", "u"}
}

func (q *quiver) open(t *testing.T, db string) *sql.DB {
	t.Helper()
	return openDB(t, fmt.Sprintf("u@tcp(%s)/%s", q.addr, db))
}

// mariaDB is a MariaDB server that scripts/mariadb.sh started for a test;
// the tests use its root user over its socket.
type mariaDB struct{ dir, sock string }

// startMariaDB starts MariaDB in a temporary directory and stops it with
// t. It skips the test when mariadb-server is not installed.
func startMariaDB(t *testing.T) *mariaDB {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/mariadbd"); err != nil {
		t.Skip("mariadb-server not installed (scripts/mariadb.sh start DIR PORT installs it; or apt-get install mariadb-server); skipping the MariaDB round trips")
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	m := &mariaDB{dir: dir, sock: filepath.Join(dir, "sock")}
	t.Cleanup(m.stop(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "scripts", "mariadb.sh"), "start", dir, port)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("scripts/mariadb.sh start: %v: %s\n%s\n%s", err, out, stderr.Bytes(), log)
	}
	return m
}

// stop stops the server and waits until it has exited, so that its
// directory can be removed.
func (m *mariaDB) stop(t *testing.T) func() {
	return func() {
		pidText, err := os.ReadFile(filepath.Join(m.dir, "pid"))
		if err != nil {
			return
		}
		if out, err := exec.Command("bash", filepath.Join("..", "scripts", "mariadb.sh"), "stop", m.dir).CombinedOutput(); err != nil {
			t.Errorf("scripts/mariadb.sh stop: %v: %s", err, out)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
		if err != nil {
			return
		}
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				return
			}
		}
		t.Errorf("mariadbd (pid %d) did not exit", pid)
	}
}

func (m *mariaDB) args() []string { return []string{"--socket=" + m.sock, "-u", "root"} }

func (m *mariaDB) open(t *testing.T, db string) *sql.DB {
	t.Helper()
	return openDB(t, fmt.Sprintf("root@unix(%s)/%s", m.sock, db))
}

// createDatabase makes an empty database.
func (m *mariaDB) createDatabase(t *testing.T, name string) {
	t.Helper()
	runTool(t, nil, "mysql", append(m.args(), "-e", "DROP DATABASE IF EXISTS "+name+"; CREATE DATABASE "+name)...)
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// runTool runs a client tool with stdin (nil for none) and returns its
// standard output; a failure fails the test.
func runTool(t *testing.T, stdin []byte, tool string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, stderr.Bytes())
	}
	t.Logf("%s %s: %v, %d bytes out", tool, strings.Join(args, " "), time.Since(start).Round(time.Millisecond), stdout.Len())
	return stdout.Bytes()
}

// tableSum is what a table is compared by.
type tableSum struct {
	Rows int64
	MD5  string
}

// tableSums reads each table over the MySQL protocol, ordered by its first
// column (the primary key), and returns its row count and the MD5 of its
// values, each in a canonical form (see canonical), with its length.
func tableSums(t *testing.T, db *sql.DB, tables ...string) map[string]tableSum {
	t.Helper()
	out := map[string]tableSum{}
	for _, table := range tables {
		rows, err := db.Query("SELECT * FROM " + table + " ORDER BY 1")
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		types, err := rows.ColumnTypes()
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]sql.RawBytes, len(types))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		h := md5.New()
		var n int64
		var lenBuf [8]byte
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			for i, v := range vals {
				if v == nil {
					binary.LittleEndian.PutUint64(lenBuf[:], ^uint64(0))
					h.Write(lenBuf[:])
					continue
				}
				c := canonical(types[i].DatabaseTypeName(), v)
				binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(c)))
				h.Write(lenBuf[:])
				h.Write(c)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		rows.Close()
		out[table] = tableSum{Rows: n, MD5: hex.EncodeToString(h.Sum(nil))}
	}
	return out
}

// canonical is a value's text in a form that does not depend on how a
// server prints its type: floats as the shortest text of their value,
// decimals without trailing zeros, times and timestamps with six
// fractional digits and no zone, and JSON documents re-encoded
// (MariaDB keeps a json column's text as inserted).
func canonical(typ string, v []byte) []byte {
	s := string(v)
	switch typ {
	case "FLOAT", "DOUBLE":
		bits := 64
		if typ == "FLOAT" {
			bits = 32
		}
		if f, err := strconv.ParseFloat(s, bits); err == nil {
			return []byte(strconv.FormatFloat(f, 'g', -1, bits))
		}
	case "DECIMAL":
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			s = "0"
		}
		return []byte(s)
	case "TIMESTAMP", "DATETIME", "TIME":
		s = strings.TrimSuffix(s, "+00")
		if typ != "TIME" && len(s) == len("2006-01-02") {
			s += " 00:00:00"
		}
		whole, frac, _ := strings.Cut(s, ".")
		return []byte(whole + "." + (frac + "000000")[:6])
	}
	if len(v) > 0 && (v[0] == '[' || v[0] == '{') && json.Valid(v) {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var doc any
		if dec.Decode(&doc) == nil {
			if c, err := json.Marshal(doc); err == nil {
				return c
			}
		}
	}
	return v
}

// compareSums fails the test when got differs from want.
func compareSums(t *testing.T, what string, got, want map[string]tableSum) {
	t.Helper()
	for table, w := range want {
		if g := got[table]; g != w {
			t.Errorf("%s: table %s: got %d rows, md5 %s; want %d rows, md5 %s", what, table, g.Rows, g.MD5, w.Rows, w.MD5)
		} else {
			t.Logf("%s: table %s: %d rows, md5 %s", what, table, g.Rows, g.MD5)
		}
	}
}

// foreignKeys counts the foreign keys of a quiver database.
func foreignKeys(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND schema_name = current_schema()").Scan(&n); err != nil {
		t.Fatalf("count foreign keys: %v", err)
	}
	return n
}

// skipShort skips the demo database's round trips (600,000 orders through
// each server, a minute or more) under go test -short.
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the demo database's round trips")
	}
}

// dumpModes are the ways the tests run mysqldump: locking the tables
// (mysqldump's default), and in one transaction.
var dumpModes = []struct{ name, flag string }{
	{"lock-tables", "--lock-tables"},
	{"single-transaction", "--single-transaction"},
}

var demoTables = []string{"customers", "orders", "products"}

// TestMysqldump_Quiver dumps quiver with mysqldump and restores the dump
// into another quiver: the demo database, and a table of every DuckDB
// type that maps to MySQL.
func TestMysqldump_Quiver(t *testing.T) {
	needTools(t)
	t.Run("demo", func(t *testing.T) {
		skipShort(t)
		src := startQuiver(t, true)
		want := tableSums(t, src.open(t, "main"), demoTables...)
		for _, mode := range dumpModes {
			t.Run(mode.name, func(t *testing.T) {
				dump := runTool(t, nil, "mysqldump", append(src.args(), mode.flag, "main")...)
				checkDump(t, dump, mode.flag)
				dst := startQuiver(t, false)
				runTool(t, dump, "mysql", append(dst.args(), "main")...)
				db := dst.open(t, "main")
				compareSums(t, "quiver → mysqldump → quiver", tableSums(t, db, demoTables...), want)
				if n := foreignKeys(t, db); n != 2 {
					t.Errorf("restored demo has %d foreign keys, want 2 (orders → customers, orders → products)", n)
				}
			})
		}
	})
	t.Run("all types", func(t *testing.T) {
		src := startQuiver(t, false)
		runTool(t, []byte(allTypesSQL), "mysql", append(src.args(), "main")...)
		want := tableSums(t, src.open(t, "main"), "alltypes")
		for _, mode := range dumpModes {
			t.Run(mode.name, func(t *testing.T) {
				dump := runTool(t, nil, "mysqldump", append(src.args(), mode.flag, "main", "alltypes")...)
				dst := startQuiver(t, false)
				runTool(t, dump, "mysql", append(dst.args(), "main")...)
				compareSums(t, "quiver → mysqldump → quiver", tableSums(t, dst.open(t, "main"), "alltypes"), want)
			})
		}
	})
}

// TestMysqldump_MariaDB is the round trip quiver → mysqldump → MariaDB →
// mysqldump → quiver, with and without --single-transaction, on the demo
// database and the table of every type; and a MariaDB-made table (MySQL
// DDL through and through) into quiver and back.
func TestMysqldump_MariaDB(t *testing.T) {
	needTools(t)
	maria := startMariaDB(t)
	roundTrip := func(t *testing.T, src *quiver, tables []string, want map[string]tableSum, dumpArgs ...string) *sql.DB {
		dump := runTool(t, nil, "mysqldump", append(append(src.args(), dumpArgs...), "main")...)
		maria.createDatabase(t, "roundtrip")
		runTool(t, dump, "mysql", append(maria.args(), "roundtrip")...)
		compareSums(t, "quiver → mysqldump → MariaDB", tableSums(t, maria.open(t, "roundtrip"), tables...), want)
		back := runTool(t, nil, "mysqldump", append(append(maria.args(), dumpArgs...), "roundtrip")...)
		dst := startQuiver(t, false)
		runTool(t, back, "mysql", append(dst.args(), "main")...)
		db := dst.open(t, "main")
		compareSums(t, "quiver → mysqldump → MariaDB → mysqldump → quiver", tableSums(t, db, tables...), want)
		return db
	}
	t.Run("demo", func(t *testing.T) {
		skipShort(t)
		src := startQuiver(t, true)
		want := tableSums(t, src.open(t, "main"), demoTables...)
		for _, mode := range dumpModes {
			t.Run(mode.name, func(t *testing.T) {
				db := roundTrip(t, src, demoTables, want, mode.flag)
				if n := foreignKeys(t, db); n != 2 {
					t.Errorf("restored demo has %d foreign keys, want 2", n)
				}
			})
		}
	})
	t.Run("all types", func(t *testing.T) {
		src := startQuiver(t, false)
		runTool(t, []byte(allTypesSQL), "mysql", append(src.args(), "main")...)
		want := tableSums(t, src.open(t, "main"), "alltypes")
		for _, mode := range dumpModes {
			t.Run(mode.name, func(t *testing.T) {
				roundTrip(t, src, []string{"alltypes"}, want, mode.flag)
			})
		}
		t.Run("hex-blob", func(t *testing.T) {
			roundTrip(t, src, []string{"alltypes"}, want, "--single-transaction", "--hex-blob")
		})
	})
	t.Run("from MariaDB", func(t *testing.T) {
		maria.createDatabase(t, "native")
		runTool(t, []byte(mariaNativeSQL), "mysql", append(maria.args(), "native")...)
		tables := []string{"native_types", "parent", "child"}
		want := tableSums(t, maria.open(t, "native"), tables...)
		dump := runTool(t, nil, "mysqldump", append(maria.args(), "native")...)
		dst := startQuiver(t, false)
		runTool(t, dump, "mysql", append(dst.args(), "main")...)
		db := dst.open(t, "main")
		compareSums(t, "MariaDB → mysqldump → quiver", tableSums(t, db, tables...), want)
		if n := foreignKeys(t, db); n != 1 {
			t.Errorf("restored tables have %d foreign keys, want 1 (child → parent)", n)
		}
		// The view, and AUTO_INCREMENT going on from the table's counter.
		var views int
		if err := db.QueryRow("SELECT count(*) FROM native_view").Scan(&views); err != nil || views != 2 {
			t.Errorf("SELECT count(*) FROM native_view = %d, %v; want 2", views, err)
		}
		if _, err := db.Exec("INSERT INTO native_types (v) VALUES ('third')"); err != nil {
			t.Fatalf("insert without the AUTO_INCREMENT column: %v", err)
		}
		var id int
		if err := db.QueryRow("SELECT id FROM native_types WHERE v = 'third'").Scan(&id); err != nil || id != 7 {
			t.Errorf("AUTO_INCREMENT id = %d, %v; want 7 (the table's AUTO_INCREMENT=7)", id, err)
		}
		if _, err := db.Exec("DELETE FROM native_types WHERE v = 'third'"); err != nil {
			t.Fatal(err)
		}
		// And back into MariaDB.
		again := runTool(t, nil, "mysqldump", append(dst.args(), "main", "native_types", "parent", "child")...)
		maria.createDatabase(t, "native_again")
		runTool(t, again, "mysql", append(maria.args(), "native_again")...)
		compareSums(t, "MariaDB → quiver → MariaDB", tableSums(t, maria.open(t, "native_again"), tables...), want)
	})
}

// checkDump checks that a dump of quiver locked its tables, or not, as
// mysqldump does against MySQL.
func checkDump(t *testing.T, dump []byte, flag string) {
	t.Helper()
	for _, want := range []string{"CREATE TABLE `orders`", "ENGINE=InnoDB", "LOCK TABLES `orders` WRITE", "UNLOCK TABLES", "-- Dump completed"} {
		if !bytes.Contains(dump, []byte(want)) {
			t.Errorf("dump (%s) lacks %q", flag, want)
		}
	}
}

// allTypesSQL makes a table with a column of every DuckDB type that maps
// to MySQL, and values at the edges of what both sides hold (MariaDB's
// TIMESTAMP stops in 2038; a FLOAT survives its text with six digits).
const allTypesSQL = `CREATE TYPE mood AS ENUM ('a', 'b c', 'it''s');
CREATE TABLE alltypes (
  id INTEGER PRIMARY KEY,
  b BOOLEAN, ti TINYINT, si SMALLINT, i INTEGER, bi BIGINT,
  uti UTINYINT, usi USMALLINT, ui UINTEGER, ubi UBIGINT, hi HUGEINT,
  d18 DECIMAL(18,4), d38 DECIMAL(38,10), f FLOAT, d DOUBLE,
  v VARCHAR, u UUID, e mood, j JSON, l VARCHAR[], arr INTEGER[3], s STRUCT(a INTEGER, b VARCHAR), m MAP(VARCHAR, INTEGER),
  bl BLOB, dt DATE, tm TIME, ts TIMESTAMP, ts_s TIMESTAMP_S, ts_ms TIMESTAMP_MS, tstz TIMESTAMPTZ, iv INTERVAL
);
INSERT INTO alltypes VALUES
 (1, true, -128, -32768, -2147483648, -9223372036854775808, 255, 65535, 4294967295, 18446744073709551615, 12345678901234567890123456789012345678,
  -12345678901234.5678, 1234567890123456789012345678.0123456789, 1.5, 0.1,
  'it''s a \ back\slash; "quoted"' || chr(10) || 'tab' || chr(9) || 'nul' || chr(0) || 'end' || chr(26), '123e4567-e89b-12d3-a456-426614174000', 'it''s',
  '{"a": [1, 2.5, "x\"y"], "b": null}', ['a', NULL, 'b''c', 'back\slash'], [1, 2, 3], {'a': 1, 'b': 'x"y'}, MAP {'k1': 1, 'k\2': 2},
  '\x00\x5C\x27\x22\xFF\x0A\x0D\x1A'::BLOB, '1000-01-01', '12:34:56.000001', '2024-02-29 23:59:59.999999', '2024-02-29 23:59:59', '2024-02-29 23:59:59.123',
  '2038-01-19 03:14:07+00', INTERVAL '1 year 2 months 3 days 04:05:06'),
 (2, false, 127, 32767, 2147483647, 9223372036854775807, 0, 0, 0, 0, -12345678901234567890123456789012345678,
  0, 0, -0.25, 1e300, '日本語 😀 café', '00000000-0000-0000-0000-000000000000', 'b c', '[]', [], [NULL, NULL, NULL], {'a': NULL, 'b': NULL}, MAP {},
  ''::BLOB, '9999-12-31', '00:00:00', '1000-01-01 00:00:00', '9999-12-31 23:59:59', '1970-01-01 00:00:00.001',
  '1970-01-02 00:00:00+00', INTERVAL '0 seconds'),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (4, true, 0, 0, 0, 0, 1, 1, 1, 1, 0, 1.5, 1.5, 3.40282e38, -1.7976931348623157e308, '', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'a',
  '"just a string"', ['x'], [7, 8, 9], {'a': 7, 'b': ''}, MAP {'z': NULL},
  'caf\xC3\xA9 plain'::BLOB, '2024-02-29', '23:59:59.999999', '2024-01-01 00:00:00', '2024-01-01 00:00:00', '2024-01-01 00:00:00',
  '2024-06-01 12:00:00.5+00', INTERVAL '-1 day');
`

// mariaNativeSQL is MariaDB DDL quiver has to translate: display widths,
// AUTO_INCREMENT, unsigned, KEY lines, a json column (longtext with a
// json_valid check), enum, set, year, uuid, ON UPDATE, comments, a check,
// a foreign key with an action DuckDB lacks, and a view; and values with
// every escape mysqldump writes.
const mariaNativeSQL = `
CREATE TABLE native_types (
 id int NOT NULL AUTO_INCREMENT,
 b tinyint(1) DEFAULT NULL, ti tinyint, tu tinyint unsigned, si smallint, mi mediumint, bi bigint unsigned NOT NULL DEFAULT 0,
 d decimal(10,2) NOT NULL DEFAULT 0.00, f float, db double, c char(36), v varchar(40) NOT NULL DEFAULT 'x', t text, lt longtext, j json,
 bl blob, vb varbinary(20), dt datetime(6), ts timestamp(6) NULL DEFAULT NULL, tm time(6), da date, y year, e enum('a','b c'), st set('x','y'), u uuid,
 created timestamp NOT NULL DEFAULT '2024-01-01 00:00:00' ON UPDATE current_timestamp() COMMENT 'made',
 PRIMARY KEY (id), UNIQUE KEY uv (v), KEY idx_dt (dt, da), KEY pref (t(10)),
 CONSTRAINT chk CHECK (si > -100)
) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci COMMENT='all types';
INSERT INTO native_types (b,ti,tu,si,mi,bi,d,f,db,c,v,t,lt,j,bl,vb,dt,ts,tm,da,y,e,st,u) VALUES
 (1,-5,200,300,-70000,18446744073709551615,123.45,1.5,2.25,'abc','it''s; \\ back\\slash','line1\nline2\ttab\0nul\Zz','long','{"a": [1,2]}',
  x'00015c27ff0a',x'5c00','2024-01-02 03:04:05.123456','2024-01-02 03:04:05.5','12:34:56.000001','2024-02-29',2024,'b c','x,y','123e4567-e89b-12d3-a456-426614174000');
INSERT INTO native_types (v) VALUES ('second');
CREATE TABLE parent (id int PRIMARY KEY, name varchar(10)) ENGINE=InnoDB;
CREATE TABLE child (id int PRIMARY KEY, parent_id int, CONSTRAINT fk_parent FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE) ENGINE=InnoDB;
INSERT INTO parent VALUES (1, 'p'), (2, 'q');
INSERT INTO child VALUES (1, 1), (2, 2), (3, NULL);
CREATE VIEW native_view AS SELECT id, v FROM native_types WHERE id > 0;
`
