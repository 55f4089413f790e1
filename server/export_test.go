package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

var exportUsers = []server.UserSpec{
	{Name: "admin", Password: "adminpw", Role: auth.RoleAdmin},
	{Name: "etl", Password: "etlpw", Role: auth.RoleReadWrite},
	{Name: "bi", Password: "bipw", Role: auth.RoleReadOnly},
}

// exportEnv is a server with an export root, and what a test of it needs.
type exportEnv struct {
	srv     *server.Server
	root    string // the export root
	outside string // a directory outside it
	audit   *syncbuf.Buffer
}

// startExportServer starts a server, with an export root or without, and
// with DuckDB's external access on or off, on a file database with a
// table facts(n, s) of 1000 rows.
func startExportServer(t *testing.T, root, external bool) *exportEnv {
	t.Helper()
	dir := t.TempDir()
	env := &exportEnv{outside: filepath.Join(dir, "outside"), audit: &syncbuf.Buffer{}}
	if err := os.Mkdir(env.outside, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{
		DB: filepath.Join(dir, "db", "q.duckdb"), MySQLAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", ExternalAccess: external,
		Security: server.Security{Users: exportUsers, AuditLog: slog.New(slog.NewTextHandler(env.audit, nil))},
	}
	if root {
		env.root = filepath.Join(dir, "exports")
		cfg.ExportRoot = env.root
	}
	env.srv = testutil.StartServer(t, cfg)
	admin := testutil.Dial(t, env.srv, client.Config{User: "admin", Password: "adminpw"})
	if _, err := admin.Exec(context.Background(), "CREATE TABLE facts AS SELECT range AS n, 'row ' || range AS s FROM range(1000)"); err != nil {
		t.Fatal(err)
	}
	return env
}

// exportPath is one way a client runs a statement.
type exportPath struct {
	name string
	// run runs sql as user and returns the rows it reports, and whether
	// an error is a refusal for permission.
	run func(t *testing.T, env *exportEnv, u server.UserSpec, sql string) (int64, error)
	// denied reports whether err is the endpoint's permission error.
	denied func(err error) bool
}

var exportPaths = []exportPath{
	{"flight", func(t *testing.T, env *exportEnv, u server.UserSpec, sql string) (int64, error) {
		c := testutil.Dial(t, env.srv, client.Config{User: u.Name, Password: u.Password})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return c.Exec(ctx, sql)
	}, isPermissionDenied},
	{"flight-prepared", func(t *testing.T, env *exportEnv, u server.UserSpec, sql string) (int64, error) {
		c := testutil.Dial(t, env.srv, client.Config{User: u.Name, Password: u.Password})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ctx = c.Context(ctx)
		st, err := c.SQL().Prepare(ctx, sql)
		if err != nil {
			return 0, err
		}
		defer st.Close(ctx)
		return st.ExecuteUpdate(ctx)
	}, isPermissionDenied},
	{"mysql", func(t *testing.T, env *exportEnv, u server.UserSpec, sql string) (int64, error) {
		db := openMySQL(t, env.srv, u, "")
		res, err := db.Exec(sql)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}, isMySQLDenied},
}

func isPermissionDenied(err error) bool { return status.Code(err) == codes.PermissionDenied }

func isMySQLDenied(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1227
}

// TestExport_Allowed exports as readwrite and admin users over Flight
// (statement and prepared statement) and MySQL, in each format, and reads
// every file back: its rows and their values.
func TestExport_Allowed(t *testing.T) {
	env := startExportServer(t, true, false)
	cases := []struct {
		name string
		user server.UserSpec
		// sql has %s for the target's directory; file is the target in
		// it. The file holds rows rows whose n add up to sum, and when
		// withS each one's s is 'row ' || n; read reads it back.
		sql, file string
		rows, sum int64
		withS     bool
		read      string
	}{
		{"parquet", exportUsers[1], "COPY (SELECT n, s FROM facts WHERE n < 500) TO '%s/etl.parquet' (FORMAT parquet, COMPRESSION zstd)", "etl.parquet", 500, 124750, true, "read_parquet"},
		{"parquet by extension", exportUsers[1], "COPY (SELECT n FROM facts WHERE n >= 900) TO '%s/ext.parquet'", "ext.parquet", 100, 94950, false, "read_parquet"},
		{"csv into a new directory", exportUsers[0], "COPY facts TO '%s/daily/2026-12-01/admin.csv' (FORMAT csv, HEADER, DELIMITER '|')", "daily/2026-12-01/admin.csv", 1000, 499500, true, "read_csv"},
		{"json", exportUsers[1], "/* nightly */ COPY (SELECT n, s FROM facts WHERE n %% 10 = 0 -- every tenth\n) TO '%s/etl.json' (FORMAT json);", "etl.json", 100, 49500, true, "read_json"},
		{"overwrite", exportUsers[1], "COPY (SELECT n FROM facts WHERE n < 10) TO '%s/etl.parquet' (FORMAT parquet)", "etl.parquet", 10, 45, false, "read_parquet"},
	}
	// Admins read back what is under the root; other roles may not call
	// DuckDB's file readers at all, there or anywhere.
	reader := testutil.Dial(t, env.srv, client.Config{User: "admin", Password: "adminpw"})
	bi := testutil.Dial(t, env.srv, client.Config{User: "bi", Password: "bipw"})
	for _, p := range exportPaths {
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				dir := filepath.Join(env.root, p.name)
				if err := os.MkdirAll(dir, 0o750); err != nil {
					t.Fatal(err)
				}
				n, err := p.run(t, env, tc.user, fmt.Sprintf(tc.sql, dir))
				if err != nil {
					t.Fatalf("export: %v", err)
				}
				if n != tc.rows {
					t.Errorf("rows reported: got %d, want %d", n, tc.rows)
				}
				file := filepath.Join(dir, tc.file)
				fi, err := os.Lstat(file)
				if err != nil || !fi.Mode().IsRegular() {
					t.Fatalf("exported file: %v, %v", fi, err)
				}
				if _, err := os.Lstat(filepath.Join(filepath.Dir(file), "tmp_"+filepath.Base(file))); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("temporary file left behind: %v", err)
				}
				opts := ""
				if tc.read == "read_csv" {
					opts = ", delim = '|', header = true"
				}
				q := fmt.Sprintf("SELECT count(*) || ',' || sum(n) FROM %s('%s'%s)", tc.read, file, opts)
				if tc.withS {
					q = fmt.Sprintf("SELECT count(*) || ',' || sum(n) || ',' || count(*) FILTER (WHERE s = 'row ' || n) FROM %s('%s'%s)", tc.read, file, opts)
				}
				want := fmt.Sprintf("%d,%d", tc.rows, tc.sum)
				if tc.withS {
					want += fmt.Sprintf(",%d", tc.rows)
				}
				if got := queryString(t, reader, q); got != want {
					t.Errorf("%s: got %s, want %s", q, got, want)
				}
				if res, err := bi.Query(context.Background(), q); err == nil {
					res.Release()
					t.Errorf("%s as readonly: ran, want PermissionDenied naming %s", q, tc.read)
				} else if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), tc.read) {
					t.Errorf("%s as readonly: got %v, want PermissionDenied naming %s", q, err, tc.read)
				}
				if !strings.Contains(env.audit.String(), "msg=export user="+tc.user.Name) || !strings.Contains(env.audit.String(), "target="+file) {
					t.Errorf("audit log has no export of %s by %s:\n%s", file, tc.user.Name, env.audit.String())
				}
			})
		}
	}
}

// TestExport_Piped exports a query with a LIMIT, which DuckDB would
// write on one thread and quiver streams into a COPY of its own
// (engine.Stmt.PipeCopy), over each path: the file holds the query's rows
// in its order, and quiver_engine_copies_piped_total counts each. An export
// whose query fails partway, piped or not, reports the query's error and
// leaves nothing behind, not even DuckDB's tmp_ file, so the same export
// runs again.
func TestExport_Piped(t *testing.T) {
	env := startExportServer(t, true, false)
	reader := testutil.Dial(t, env.srv, client.Config{User: "admin", Password: "adminpw"})
	rw := exportUsers[1]
	for _, p := range exportPaths {
		t.Run(p.name, func(t *testing.T) {
			file := filepath.Join(env.root, p.name+"-limit.parquet")
			before := counterValue(t, "quiver_engine_copies_piped_total")
			n, err := p.run(t, env, rw, fmt.Sprintf("COPY (SELECT n, s FROM facts LIMIT 800) TO '%s' (FORMAT parquet)", file))
			if err != nil {
				t.Fatalf("export: %v", err)
			}
			if n != 800 {
				t.Errorf("rows reported: got %d, want 800", n)
			}
			if got := counterValue(t, "quiver_engine_copies_piped_total") - before; got != 1 {
				t.Errorf("quiver_engine_copies_piped_total moved by %v, want 1", got)
			}
			q := fmt.Sprintf("SELECT count(*) FILTER (WHERE n = file_row_number AND s = 'row ' || n) || ',' || count(*) FROM read_parquet('%s', file_row_number = true)", file)
			if got := queryString(t, reader, q); got != "800,800" {
				t.Errorf("rows in the query's order, of all: got %s, want 800,800", got)
			}
			for _, tc := range []struct{ name, limit string }{{"piped", " LIMIT 800"}, {"not piped", ""}} {
				failing := filepath.Join(env.root, p.name+"-"+strings.ReplaceAll(tc.name, " ", "-")+".parquet")
				sql := fmt.Sprintf("COPY (SELECT CASE WHEN n = 700 THEN error('row 700 is bad') ELSE n END AS n FROM facts%s) TO '%s' (FORMAT parquet)", tc.limit, failing)
				if _, err := p.run(t, env, rw, sql); err == nil || !strings.Contains(err.Error(), "row 700 is bad") {
					t.Fatalf("%s: %v; want the query's error", tc.name, err)
				}
				for _, f := range []string{failing, filepath.Join(env.root, "tmp_"+filepath.Base(failing))} {
					if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s: %s is there after the export failed: %v", tc.name, f, err)
					}
				}
				ok := fmt.Sprintf("COPY (SELECT n FROM facts%s) TO '%s' (FORMAT parquet)", tc.limit, failing)
				if _, err := p.run(t, env, rw, ok); err != nil {
					t.Fatalf("%s: the export again, after it failed: %v", tc.name, err)
				}
			}
		})
	}
}

// counterValue is the value of a counter without labels in the default
// registry.
func counterValue(t *testing.T, name string) float64 {
	t.Helper()
	v, ok := testutil.Metric(t, name, nil)
	if !ok {
		t.Fatalf("no counter %s", name)
	}
	return v
}

// TestExport_Refused runs every export that must be refused, as the
// readwrite user (readonly where it says), over Flight and MySQL: each is
// refused with PermissionDenied (MySQL error 1227), the message names
// --export-root (where quiver, not DuckDB's own sandbox, refused it), and
// no file appears outside the root.
func TestExport_Refused(t *testing.T) {
	env := startExportServer(t, true, false)
	// Without a root, and with DuckDB's sandbox off, so that quiver's
	// refusal is the only thing between a readwrite user and the disk.
	noRoot := startExportServer(t, false, true)
	// In the root: a link to the outside directory, a link to a file
	// outside, a link to a directory inside, and a stray temporary file.
	victim := filepath.Join(env.outside, "victim.parquet")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(env.root, "sub")
	for _, d := range []string{sub, filepath.Join(env.root, "open")} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(env.root, "open"), 0o777); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"out": env.outside, "victim.parquet": victim, "inside": sub,
		"ghost.parquet": filepath.Join(env.outside, "x-ghost.parquet")}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(env.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(env.root, "tmp_busy.parquet"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rw, ro := exportUsers[1], exportUsers[2]
	const q = "COPY (SELECT n FROM facts) TO '%s' (FORMAT parquet)"
	cases := []struct {
		name   string
		env    *exportEnv
		user   server.UserSpec
		sql    string
		naming bool // quiver refuses it, naming --export-root; else DuckDB's sandbox refuses it first
	}{
		{"outside the root", env, rw, fmt.Sprintf(q, filepath.Join(env.outside, "x.parquet")), false},
		{"dot-dot out of the root", env, rw, fmt.Sprintf(q, env.root+"/../outside/x.parquet"), false},
		{"dot-dot inside the root", env, rw, fmt.Sprintf(q, env.root+"/sub/../x.parquet"), true},
		{"relative", env, rw, fmt.Sprintf(q, "x.parquet"), false},
		{"symlink to a directory outside", env, rw, fmt.Sprintf(q, env.root+"/out/x.parquet"), false},
		{"symlink to a file outside", env, rw, fmt.Sprintf(q, env.root+"/victim.parquet"), false},
		{"symlink to a missing file outside", env, rw, fmt.Sprintf(q, env.root+"/ghost.parquet"), true},
		{"symlink to a directory inside", env, rw, fmt.Sprintf(q, env.root+"/inside/x.parquet"), true},
		{"directory writable by others", env, rw, fmt.Sprintf(q, env.root+"/open/x.parquet"), true},
		{"export running", env, rw, fmt.Sprintf(q, env.root+"/busy.parquet"), true},
		{"a directory as the target", env, rw, fmt.Sprintf(q, env.root+"/sub"), true},
		{"partitioned", env, rw, "COPY (SELECT n, n % 2 AS p FROM facts) TO '" + env.root + "/parts' (FORMAT parquet, PARTITION_BY (p))", true},
		{"COPY FROM", env, rw, "COPY facts FROM '" + env.root + "/sub/x.csv'", true},
		{"readonly user", env, ro, fmt.Sprintf(q, env.root+"/bi.parquet"), true},
		// A COPY is an admin's, and so is the EXPLAIN ANALYZE that runs it.
		{"EXPLAIN ANALYZE COPY", env, rw, "EXPLAIN ANALYZE " + fmt.Sprintf(q, env.root+"/ghost.parquet"), false},
		{"EXPLAIN (ANALYZE) COPY, as admin", env, exportUsers[0], "/* x */ explain (format json, analyze) " + fmt.Sprintf(q, env.root+"/ghost.parquet"), true},
		{"EXPLAIN ANALYZE COPY without a root", noRoot, rw, "EXPLAIN ANALYZE " + fmt.Sprintf(q, filepath.Join(noRoot.outside, "x.parquet")), false},
		{"no export root", noRoot, rw, fmt.Sprintf(q, filepath.Join(noRoot.outside, "x.parquet")), true},
		{"no export root, readonly", noRoot, ro, fmt.Sprintf(q, filepath.Join(noRoot.outside, "x.parquet")), false},
	}
	for _, p := range exportPaths {
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				if tc.name == "COPY FROM" {
					if err := os.WriteFile(filepath.Join(sub, "x.csv"), []byte("n,s\n1,a\n"), 0o640); err != nil {
						t.Fatal(err)
					}
				}
				_, err := p.run(t, tc.env, tc.user, tc.sql)
				switch {
				case err == nil:
					t.Fatalf("%s ran; want it refused", tc.sql)
				case !p.denied(err):
					t.Fatalf("%s: %v; want a permission error", tc.sql, err)
				case tc.naming && !strings.Contains(err.Error(), "--export-root"):
					t.Errorf("error %q does not name --export-root", err)
				}
				t.Logf("%v", err)
			})
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Errorf("the file outside the root: %q, %v; want it unchanged", b, err)
	}
	for _, e := range []*exportEnv{env, noRoot} {
		if m, _ := filepath.Glob(filepath.Join(e.outside, "x*")); len(m) > 0 {
			t.Errorf("files written outside the root: %v", m)
		}
	}
	for _, f := range []string{"sub/x.parquet", "x.parquet", "parts", "bi.parquet", "open/x.parquet"} {
		if _, err := os.Lstat(filepath.Join(env.root, f)); err == nil {
			t.Errorf("%s written, want every refused export to write nothing", f)
		}
	}
	if n := strings.Count(env.audit.String(), "msg=\"export refused\""); n == 0 {
		t.Errorf("audit log has no refused exports:\n%s", env.audit.String())
	}
}

// TestExport_DatabaseRefusedLeavesNothing: DuckDB makes an EXPORT
// DATABASE's directory when it prepares the statement, so a refused one
// left its directory behind. As the readwrite and readonly users, on every
// endpoint, an EXPORT DATABASE (alone, explained, at the end of a script)
// is refused and leaves no directory, under the export root or, with
// DuckDB's sandbox off, anywhere; the admin's still runs.
func TestExport_DatabaseRefusedLeavesNothing(t *testing.T) {
	for _, external := range []bool{false, true} {
		env := startExportServer(t, true, external)
		paths := append(exportPaths[:len(exportPaths):len(exportPaths)], exportPath{"console", func(t *testing.T, env *exportEnv, u server.UserSpec, sql string) (int64, error) {
			c := newConsoleClient(t, env.srv, nil)
			c.login(u.Name, u.Password)
			if code, msg := c.exec(sql); code != http.StatusOK {
				return 0, fmt.Errorf("%d %s", code, msg)
			}
			return 0, nil
		}, func(err error) bool { return strings.HasPrefix(err.Error(), "403 denied: ") }})
		forms := []struct{ name, sql string }{
			{"alone", "EXPORT DATABASE '%s'"},
			{"lower case, with a comment", "/* x */ export  database '%s' (FORMAT parquet)"},
			{"explained", "EXPLAIN EXPORT DATABASE '%s'"},
			{"in a script", "SELECT 1; EXPORT DATABASE '%s'"},
		}
		for _, p := range paths {
			for _, u := range exportUsers[1:] {
				for i, f := range forms {
					if f.name == "in a script" && p.name != "flight" && p.name != "console" {
						continue // a prepared statement is one statement; MySQL's scripts are split by vitess
					}
					t.Run(fmt.Sprintf("external=%v/%s/%s/%s", external, p.name, u.Name, f.name), func(t *testing.T) {
						dirs := []string{filepath.Join(env.root, fmt.Sprintf("x-%s-%s-%d", p.name, u.Name, i))}
						if external {
							dirs = append(dirs, filepath.Join(env.outside, fmt.Sprintf("x-%s-%s-%d", p.name, u.Name, i)))
						}
						for _, dir := range dirs {
							q := fmt.Sprintf(f.sql, dir)
							_, err := p.run(t, env, u, q)
							if err == nil || !p.denied(err) {
								t.Errorf("%s as %s: %v; want it refused for the role", q, u.Name, err)
							}
							if _, err := os.Lstat(dir); err == nil {
								t.Errorf("%s as %s left its directory behind", q, u.Name)
							}
						}
					})
				}
			}
		}
		t.Run(fmt.Sprintf("external=%v/admin", external), func(t *testing.T) {
			dir := filepath.Join(env.root, "by-admin")
			if _, err := exportPaths[0].run(t, env, exportUsers[0], "EXPORT DATABASE '"+dir+"'"); err != nil {
				t.Fatalf("the admin's EXPORT DATABASE: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "schema.sql")); err != nil {
				t.Errorf("the admin's export: %v", err)
			}
		})
	}
}

// TestExport_Relative resolves a relative target against the root. With
// DuckDB's sandbox on, DuckDB refuses a relative path when it prepares
// the statement, before quiver sees it (TestExport_Refused); with it off
// (--allow-external-access) the export reaches quiver, which writes it
// under the root, not in the server's working directory.
func TestExport_Relative(t *testing.T) {
	env := startExportServer(t, true, true)
	t.Chdir(env.outside)
	c := testutil.Dial(t, env.srv, client.Config{User: "etl", Password: "etlpw"})
	if n, err := c.Exec(context.Background(), "COPY (SELECT n FROM facts) TO 'rel/x.parquet' (FORMAT parquet)"); err != nil || n != 1000 {
		t.Fatalf("relative export: %d rows, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(env.root, "rel", "x.parquet")); err != nil {
		t.Errorf("export under the root: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(env.outside, "*")); len(m) > 0 {
		t.Errorf("files in the working directory: %v", m)
	}
}

// TestExport_FromLake exports a lake table (its views are pointed at a
// snapshot's files when the rebuilt COPY is prepared), and refuses an
// export root that overlaps the lake.
func TestExport_FromLake(t *testing.T) {
	wh := t.TempDir()
	lakeTable(t, wh, 1000, 500, 100)
	root := filepath.Join(t.TempDir(), "exports")
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "q.duckdb"), ExportRoot: root,
		Lake: &server.LakeConfig{Iceberg: lake.Config{Warehouse: "file://" + wh}},
	})
	c := testutil.Dial(t, srv, client.Config{})
	file := filepath.Join(root, "events.parquet")
	if n, err := c.Exec(context.Background(), "COPY (SELECT * FROM lake.quiver.events WHERE id < 600) TO '"+file+"' (FORMAT parquet)"); err != nil || n != 600 {
		t.Fatalf("export a lake table: %d rows, %v", n, err)
	}
	if got := queryString(t, c, "SELECT count(*) FROM read_parquet('"+file+"')"); got != "600" {
		t.Errorf("rows exported from the lake: got %s, want 600", got)
	}

	_, err := server.Start(context.Background(), server.Config{
		DB: ":memory:", FlightAddr: "127.0.0.1:0", ExportRoot: filepath.Join(wh, "exports"),
		Logger: slog.New(slog.DiscardHandler), Announce: func(string, string) {},
		Lake: &server.LakeConfig{Iceberg: lake.Config{Warehouse: "file://" + wh}},
	})
	if err == nil || !strings.Contains(err.Error(), "overlaps the lake") {
		t.Errorf("an export root in the lake's warehouse: %v; want it refused", err)
	}
	if _, err := os.Stat(filepath.Join(wh, "exports")); err == nil {
		t.Error("the refused export root was created in the lake's warehouse")
	}
}

// TestExport_Script checks an export inside a Flight script by its own
// text, as one sent alone (the script is split by quiver's lexer, held
// against DuckDB's parser), and runs one in a MySQL multi-statement
// query, which the MySQL endpoint splits into statements of their own.
func TestExport_Script(t *testing.T) {
	env := startExportServer(t, true, false)
	c := testutil.Dial(t, env.srv, client.Config{User: "etl", Password: "etlpw"})
	if _, err := c.Exec(context.Background(), "SELECT 1; COPY (SELECT 1 AS x) TO '"+env.root+"/script.parquet' (FORMAT parquet)"); err != nil {
		t.Errorf("export in a Flight script: %v", err)
	}
	if _, err := os.Stat(filepath.Join(env.root, "script.parquet")); err != nil {
		t.Errorf("export in a Flight script: %v", err)
	}
	_, err := c.Exec(context.Background(), "SELECT 1; COPY (SELECT 1 AS x, 2 AS p) TO '"+env.root+"/parts' (FORMAT parquet, PARTITION_BY (p))")
	if !isPermissionDenied(err) || !strings.Contains(err.Error(), "--export-root") {
		t.Errorf("export of several files in a Flight script: %v; want PermissionDenied naming --export-root", err)
	}
	db := openMySQL(t, env.srv, exportUsers[1], "multiStatements=true")
	if _, err := db.Exec("SELECT 1; COPY (SELECT 1 AS x) TO '" + env.root + "/multi.parquet' (FORMAT parquet)"); err != nil {
		t.Errorf("export in a MySQL multi-statement query: %v", err)
	}
	if _, err := os.Stat(filepath.Join(env.root, "multi.parquet")); err != nil {
		t.Errorf("export in a MySQL multi-statement query: %v", err)
	}
}

// TestExport_RootChecks refuses to start with an export root that holds
// the database or is writable by others.
func TestExport_RootChecks(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  server.Config
		want string
	}{
		{"holds the database", server.Config{DB: filepath.Join(dir, "q.duckdb"), ExportRoot: dir}, "holds the database"},
		{"writable by others", server.Config{DB: ":memory:", ExportRoot: open}, "writable by other users"},
		{"the file system's root", server.Config{DB: ":memory:", ExportRoot: "/"}, "file system's root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.FlightAddr = "127.0.0.1:0"
			tc.cfg.Logger = slog.New(slog.DiscardHandler)
			tc.cfg.Announce = func(string, string) {}
			srv, err := server.Start(context.Background(), tc.cfg)
			if err == nil {
				srv.Shutdown(context.Background())
				t.Fatal("started; want it refused")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--export-root") {
				t.Errorf("error %q; want it to name --export-root and say %q", err, tc.want)
			}
		})
	}
}

func queryString(t *testing.T, c *client.Client, q string) string {
	t.Helper()
	r, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatalf("%s: no row: %v", q, r.Err())
	}
	return r.RecordBatch().Column(0).ValueStr(0)
}
