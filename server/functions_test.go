package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// consoleUser is a console session of one user: a cookie and its CSRF
// token.
type consoleUser struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

func consoleLogin(t *testing.T, srv *server.Server, user, password string) *consoleUser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	cu := &consoleUser{t: t, base: "http://" + srv.HTTPAddr, hc: &http.Client{Jar: jar}}
	req, _ := http.NewRequest("POST", cu.base+"/api/login", nil)
	req.SetBasicAuth(user, password)
	resp, err := cu.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ CSRF string }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusOK || s.CSRF == "" {
		t.Fatalf("console login %s: %s, %v", user, resp.Status, err)
	}
	cu.csrf = s.CSRF
	return cu
}

// query runs sql in the console and returns its HTTP status and body.
func (cu *consoleUser) query(sql string) (int, string) {
	b, _ := json.Marshal(map[string]string{"sql": sql})
	req, _ := http.NewRequest("POST", cu.base+"/api/query", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", cu.csrf)
	resp, err := cu.hc.Do(req)
	if err != nil {
		cu.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestRoles_FunctionsCannotChangeTheServer runs, as a read-only user, the
// DuckDB functions that change the server or tell its secrets, inside
// plain SELECTs, over every endpoint: each is refused with a permission
// error that names the function, and afterwards nothing changed: the
// database answers every user, no log was kept, the sequence never moved.
func TestRoles_FunctionsCannotChangeTheServer(t *testing.T) {
	dir := t.TempDir()
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(dir, "db", "f.duckdb"), MySQLAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Security: server.Security{Users: roleUsers},
	})
	ctx := context.Background()
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "adminpw"})
	for _, q := range []string{
		"CREATE TABLE facts AS SELECT range AS n FROM range(10)",
		"CREATE SEQUENCE seq1",
		"CREATE VIEW v_seq AS SELECT nextval('seq1') AS n",
		"CREATE MACRO m_logs() AS TABLE SELECT * FROM duckdb_logs",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	attacks := []struct{ sql, function string }{
		{"SELECT * FROM enable_logging(storage='file', storage_path='" + filepath.Join(dir, "x") + "')", "enable_logging"},
		{"SELECT * FROM enable_logging()", "enable_logging"},
		{"SELECT message FROM duckdb_logs", "duckdb_log"},
		{"SELECT * FROM m_logs()", "duckdb_log"},
		{"SELECT * FROM truncate_duckdb_logs()", "truncate_duckdb_logs"},
		{"SELECT * FROM force_checkpoint()", "force_checkpoint"},
		{"SELECT * FROM checkpoint()", "checkpoint"},
		{"SELECT nextval('seq1')", "nextval"},
		{"SELECT * FROM v_seq", "nextval"},
		{"SELECT setseed(0.5)", "setseed"},
		{"SELECT current_setting('allowed_directories')", "current_setting"},
		{"SELECT path FROM duckdb_databases()", "duckdb_databases"},
		{"SELECT * FROM duckdb_settings()", "duckdb_settings"},
		{"SELECT 1; SELECT * FROM enable_logging()", "enable_logging"},
		{"EXPLAIN ANALYZE SELECT nextval('seq1')", "readwrite"},
	}
	bi := testutil.Dial(t, srv, client.Config{User: "bi", Password: "bipw"})
	biMySQL := openMySQL(t, srv, roleUsers[2], "multiStatements=true")
	biConsole := consoleLogin(t, srv, "bi", "bipw")
	for _, a := range attacks {
		t.Run("flight/"+a.sql, func(t *testing.T) {
			err := drain(bi.Query(ctx, a.sql))
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), a.function) {
				t.Errorf("got %v, want PermissionDenied naming %s", err, a.function)
			}
		})
		t.Run("flight-prepared/"+a.sql, func(t *testing.T) {
			if strings.Contains(a.sql, ";") {
				t.Skip("a script is not a prepared statement")
			}
			pctx := bi.Context(ctx)
			st, err := bi.SQL().Prepare(pctx, a.sql)
			if err == nil {
				st.Close(pctx)
			}
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), a.function) {
				t.Errorf("got %v, want PermissionDenied naming %s", err, a.function)
			}
		})
		t.Run("mysql/"+a.sql, func(t *testing.T) {
			err := mysqlRun(biMySQL, a.sql, !strings.Contains(a.sql, ";")) // Exec reads every result of a script
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1227 || !strings.Contains(err.Error(), a.function) {
				t.Errorf("got %v, want error 1227 naming %s", err, a.function)
			}
		})
		t.Run("console/"+a.sql, func(t *testing.T) {
			code, body := biConsole.query(a.sql)
			if code != http.StatusForbidden || !strings.Contains(body, a.function) {
				t.Errorf("got %d %s, want 403 naming %s", code, body, a.function)
			}
		})
	}

	// Every user is still served, writes included, and nothing the
	// read-only user tried left a trace.
	if err := drain(bi.Query(ctx, "SELECT count(*) FROM facts")); err != nil {
		t.Errorf("readonly SELECT afterwards: %v", err)
	}
	etl := openMySQL(t, srv, roleUsers[1], "")
	if _, err := etl.Exec("INSERT INTO facts VALUES (100)"); err != nil {
		t.Errorf("readwrite INSERT over MySQL afterwards: %v", err)
	}
	if got := queryString(t, admin, "SELECT coalesce(last_value::VARCHAR, 'never') FROM duckdb_sequences() WHERE sequence_name = 'seq1'"); got != "never" {
		t.Errorf("seq1's last value = %s, want never used", got)
	}
	if got := queryString(t, admin, "SELECT count(*)::VARCHAR FROM duckdb_logs"); got != "0" {
		t.Errorf("duckdb_logs holds %s entries, want 0 (logging never turned on)", got)
	}
	resp, err := http.Get("http://" + srv.HTTPAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %s", resp.Status)
	}
}

// TestRoles_AdminLoggingWayBack: an admin may turn the server's statement
// log on, and so change what every user's statements leave behind, but
// always has the way back; the one way to brick the database for everyone
// (a log file where file access is off) is refused to admins too.
func TestRoles_AdminLoggingWayBack(t *testing.T) {
	dir := t.TempDir()
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(dir, "db", "l.duckdb"), MySQLAddr: "127.0.0.1:0",
		Security: server.Security{Users: roleUsers},
	})
	ctx := context.Background()
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "adminpw"})
	bi := testutil.Dial(t, srv, client.Config{User: "bi", Password: "bipw"})
	adminMySQL := openMySQL(t, srv, roleUsers[0], "")

	for _, q := range []string{
		"SELECT * FROM enable_logging(storage='file', storage_path='" + filepath.Join(dir, "log") + "')",
		"CALL enable_logging(storage_path = '" + filepath.Join(dir, "log") + "')",
		"SELECT * FROM enable_logging(storage_config = {'path': '" + filepath.Join(dir, "log") + "'})",
	} {
		err := drain(admin.Query(ctx, q))
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "only be kept in memory") {
			t.Errorf("admin %s: got %v, want PermissionDenied: the log may only be kept in memory", q, err)
		}
		if _, err := adminMySQL.Exec(q); err == nil || !strings.Contains(err.Error(), "only be kept in memory") {
			t.Errorf("admin over MySQL %s: got %v, want it refused", q, err)
		}
	}
	if err := drain(bi.Query(ctx, "SELECT 1")); err != nil {
		t.Fatalf("after the refused log file: %v", err)
	}

	// On, in memory: every user's statements are logged.
	if err := drain(admin.Query(ctx, "SELECT * FROM enable_logging(storage = 'memory')")); err != nil {
		t.Fatalf("enable_logging in memory: %v", err)
	}
	if err := drain(bi.Query(ctx, "SELECT 'bi was here'")); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, admin, "SELECT count(*)::VARCHAR FROM duckdb_logs WHERE message LIKE '%bi was here%'"); got == "0" {
		t.Errorf("with logging on, the log has no entry of bi's statement")
	}
	// And back: off, and emptied.
	for _, q := range []string{"SELECT * FROM disable_logging()", "SELECT * FROM truncate_duckdb_logs()"} {
		if err := drain(admin.Query(ctx, q)); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := drain(bi.Query(ctx, "SELECT 'bi again'")); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, admin, "SELECT count(*)::VARCHAR FROM duckdb_logs"); got != "0" {
		t.Errorf("after disable_logging and truncate_duckdb_logs the log holds %s entries, want 0", got)
	}
}
