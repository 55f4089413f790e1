package server_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// roleCase is one statement and the least role that may run it.
type roleCase struct {
	sql  string
	need auth.Role
	rows bool // it returns rows (run as a query, not an update)
	// duckOnly is DuckDB syntax that vitess' MySQL parser refuses when a
	// client prepares it (COM_STMT_PREPARE), before quiver sees it.
	duckOnly bool
}

// roleCases covers every kind of statement the roles tell apart. dir is a
// directory the database may reach, for COPY and ATTACH.
func roleCases(dir string) []roleCase {
	ro, rw, ad := auth.RoleReadOnly, auth.RoleReadWrite, auth.RoleAdmin
	return []roleCase{
		{sql: "SELECT count(*) FROM facts", need: ro, rows: true},
		{sql: "EXPLAIN SELECT * FROM facts", need: ro, rows: true},
		{sql: "/* a comment */ explain select 1", need: ro, rows: true, duckOnly: true},
		{sql: "SHOW TABLES", need: ro, rows: true},
		{sql: "DESCRIBE facts", need: ro, rows: true},
		{sql: "INSERT INTO facts (n) VALUES (100)", need: rw},
		{sql: "UPDATE facts SET n = n WHERE n < 0", need: rw},
		{sql: "DELETE FROM facts WHERE n < 0", need: rw},
		{sql: "CREATE OR REPLACE TABLE scratch (i INT)", need: rw, duckOnly: true},
		{sql: "CREATE OR REPLACE VIEW v AS SELECT 1 AS x", need: rw},
		{sql: "CREATE OR REPLACE MACRO plus1(a) AS a + 1", need: rw, duckOnly: true},
		{sql: "ALTER TABLE facts ADD COLUMN IF NOT EXISTS extra INT", need: rw, duckOnly: true},
		{sql: "DROP TABLE IF EXISTS no_such_table", need: rw},
		{sql: "EXPLAIN ANALYZE INSERT INTO facts (n) VALUES (101)", need: rw, rows: true, duckOnly: true},
		// EXPLAIN ANALYZE runs what it explains: an admin statement stays
		// an admin's.
		{sql: "EXPLAIN ANALYZE CHECKPOINT", need: ad, rows: true, duckOnly: true},
		{sql: fmt.Sprintf("EXPLAIN ANALYZE COPY facts TO '%s'", filepath.Join(dir, "facts2.csv")), need: ad, rows: true, duckOnly: true},
		{sql: "VACUUM", need: rw, duckOnly: true},
		{sql: "SET threads = 2", need: ad},
		{sql: "RESET threads", need: ad, duckOnly: true},
		{sql: "SET VARIABLE quiver_test_var = 1", need: ad, duckOnly: true},
		{sql: fmt.Sprintf("COPY facts TO '%s'", filepath.Join(dir, "facts.csv")), need: ad, duckOnly: true},
		{sql: fmt.Sprintf("ATTACH IF NOT EXISTS '%s' AS other", filepath.Join(dir, "other.duckdb")), need: ad, duckOnly: true},
		{sql: "DETACH DATABASE IF EXISTS other", need: ad, duckOnly: true},
		{sql: "CHECKPOINT", need: ad, rows: true, duckOnly: true},
		{sql: "CALL pragma_version()", need: ad, rows: true},
		{sql: "PRAGMA enable_profiling = 'no_output'", need: ad, duckOnly: true},
		{sql: "LOAD json", need: ad, duckOnly: true},
		{sql: "PREPARE ins AS INSERT INTO facts (n) VALUES (102)", need: ad, duckOnly: true},
		// A plain SELECT needs the role of every function it calls, as
		// DuckDB binds it (through views too).
		{sql: "SELECT nextval('seq1')", need: rw, rows: true},
		{sql: "SELECT * FROM v_seq", need: rw, rows: true},
		{sql: "SELECT message FROM duckdb_logs", need: ad, rows: true},
		{sql: "SELECT * FROM truncate_duckdb_logs()", need: ad, rows: true, duckOnly: true},
		{sql: "SELECT current_setting('threads')", need: ad, rows: true},
		{sql: "SELECT path FROM duckdb_databases()", need: ad, rows: true, duckOnly: true},
		{sql: fmt.Sprintf("SELECT * FROM read_text('%s')", filepath.Join(dir, "note.txt")), need: ad, rows: true, duckOnly: true},
		{sql: "SELECT upper('x'), count(*) FROM facts", need: ro, rows: true},
	}
}

var roleUsers = []server.UserSpec{
	{Name: "admin", Password: "adminpw", Role: auth.RoleAdmin},
	{Name: "etl", Password: "etlpw", Role: auth.RoleReadWrite},
	{Name: "bi", Password: "bipw", Role: auth.RoleReadOnly},
}

// startRoleServer starts a server with the three roles on a file database.
// External access is on, so that the role check is the only thing between
// a user and SET, COPY or ATTACH.
func startRoleServer(t *testing.T) (*server.Server, string) {
	dir := t.TempDir()
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(dir, "roles.duckdb"), MySQLAddr: "127.0.0.1:0", ExternalAccess: true,
		Security: server.Security{Users: roleUsers},
	})
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "adminpw"})
	for _, q := range []string{
		"CREATE TABLE facts AS SELECT range AS n FROM range(10)",
		"CREATE SEQUENCE seq1",
		"CREATE VIEW v_seq AS SELECT nextval('seq1') AS n",
	} {
		if _, err := admin.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("a file on the server"), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, dir
}

// flightPaths run one statement over Flight SQL in each way a client can.
var flightPaths = []struct {
	name string
	run  func(ctx context.Context, c *client.Client, tc roleCase) error
}{
	{"statement", func(ctx context.Context, c *client.Client, tc roleCase) error {
		if tc.rows {
			return drain(c.Query(ctx, tc.sql))
		}
		_, err := c.Exec(ctx, tc.sql)
		return err
	}},
	{"prepared", func(ctx context.Context, c *client.Client, tc roleCase) error {
		ctx = c.Context(ctx)
		st, err := c.SQL().Prepare(ctx, tc.sql)
		if err != nil {
			return err
		}
		defer st.Close(ctx)
		if tc.rows {
			info, err := st.Execute(ctx)
			if err != nil {
				return err
			}
			rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				return err
			}
			defer rdr.Release()
			for rdr.Next() {
			}
			return rdr.Err()
		}
		_, err = st.ExecuteUpdate(ctx)
		return err
	}},
	{"script", func(ctx context.Context, c *client.Client, tc roleCase) error {
		// The statement first, then a read: the script must stop at it.
		return drain(c.Query(ctx, tc.sql+"; SELECT 1"))
	}},
	{"transaction", func(ctx context.Context, c *client.Client, tc roleCase) error {
		ctx = c.Context(ctx)
		tx, err := c.SQL().BeginTransaction(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if tc.rows {
			info, err := tx.Execute(ctx, tc.sql)
			if err != nil {
				return err
			}
			rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				return err
			}
			defer rdr.Release()
			for rdr.Next() {
			}
			return rdr.Err()
		}
		_, err = tx.ExecuteUpdate(ctx, tc.sql)
		return err
	}},
}

func drain(r *client.Result, err error) error {
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
	}
	return r.Err()
}

// TestRoles_Flight runs every kind of statement as each role over every
// Flight SQL path: the role's statements run, the others are refused with
// PermissionDenied.
func TestRoles_Flight(t *testing.T) {
	srv, dir := startRoleServer(t)
	for _, u := range roleUsers {
		c := testutil.Dial(t, srv, client.Config{User: u.Name, Password: u.Password})
		for _, p := range flightPaths {
			for _, tc := range roleCases(dir) {
				if p.name == "transaction" && tc.sql == "VACUUM" {
					continue // DuckDB refuses VACUUM inside a transaction, for every role
				}
				t.Run(u.Role.String()+"/"+p.name+"/"+tc.sql, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					err := p.run(ctx, c, tc)
					checkRole(t, u.Role, tc, err, status.Code(err) == codes.PermissionDenied)
				})
			}
		}
	}
	assertFactsUnchangedByReaders(t, srv)
}

// TestRoles_MySQL does the same over the MySQL port: text protocol
// (COM_QUERY), binary protocol (COM_STMT_PREPARE/EXECUTE), and
// multi-statement scripts.
func TestRoles_MySQL(t *testing.T) {
	srv, dir := startRoleServer(t)
	for _, u := range roleUsers {
		text := openMySQL(t, srv, u, "")
		binary := openMySQL(t, srv, u, "")
		multi := openMySQL(t, srv, u, "multiStatements=true")
		paths := []struct {
			name string
			run  func(tc roleCase) error
		}{
			{"COM_QUERY", func(tc roleCase) error { return mysqlRun(text, tc.sql, tc.rows) }},
			{"COM_STMT", func(tc roleCase) error {
				st, err := binary.Prepare(tc.sql)
				if err != nil {
					return err
				}
				defer st.Close()
				if tc.rows {
					rows, err := st.Query()
					if err != nil {
						return err
					}
					defer rows.Close()
					for rows.Next() {
					}
					return rows.Err()
				}
				_, err = st.Exec()
				return err
			}},
			{"multi-statement", func(tc roleCase) error { return mysqlRun(multi, tc.sql+"; SELECT 1", false) }},
		}
		for _, p := range paths {
			for _, tc := range roleCases(dir) {
				if p.name == "COM_STMT" && tc.duckOnly {
					continue
				}
				t.Run(u.Role.String()+"/"+p.name+"/"+tc.sql, func(t *testing.T) {
					err := p.run(tc)
					var me *mysql.MySQLError
					checkRole(t, u.Role, tc, err, errors.As(err, &me) && me.Number == 1227)
				})
			}
		}
	}
	assertFactsUnchangedByReaders(t, srv)
}

func checkRole(t *testing.T, role auth.Role, tc roleCase, err error, denied bool) {
	t.Helper()
	allowed := role >= tc.need
	switch {
	case allowed && err != nil:
		t.Errorf("%s may run it, got %v", role, err)
	case !allowed && !denied:
		t.Errorf("%s may not run it (needs %s), got %v; want a permission error", role, tc.need, err)
	case !allowed && !strings.Contains(err.Error(), tc.need.String()+" role"):
		t.Errorf("error %q does not say which role the statement needs (%s)", err, tc.need)
	}
}

func openMySQL(t *testing.T, srv *server.Server, u server.UserSpec, params string) *sql.DB {
	t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/main?%s", u.Name, u.Password, srv.MySQLAddr, params)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func mysqlRun(db *sql.DB, q string, rows bool) error {
	if !rows {
		_, err := db.Exec(q)
		return err
	}
	r, err := db.Query(q)
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Next() {
	}
	return r.Err()
}

// assertFactsUnchangedByReaders checks that only the writers' inserts (of
// 100 and 101) reached the table: nothing the read-only user tried did.
func assertFactsUnchangedByReaders(t *testing.T, srv *server.Server) {
	t.Helper()
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "adminpw"})
	r, err := admin.Query(context.Background(), "SELECT count(*) FILTER (WHERE n < 10), count(*) FILTER (WHERE n NOT IN (100, 101) AND n >= 10) FROM facts")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if got := r.RecordBatch().Column(0).ValueStr(0) + "," + r.RecordBatch().Column(1).ValueStr(0); got != "10,0" {
		t.Errorf("facts after every role's attempts: got %s original rows and other rows, want 10,0", got)
	}
}
