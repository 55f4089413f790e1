package server_test

import (
	"context"
	"errors"
	"os"
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

// TestRoles_FileStateHidden asks, as a readonly and a readwrite user, for
// files in a directory DuckDB may reach (the backup staging directory)
// and outside it, that exist, do not, match a glob or not, or are not
// what their reader expects, directly and through an admin's view and
// macro. DuckDB binds a statement when it is prepared, and binding a
// reader lists and opens its files: each group's statements must get one
// and the same refusal, over Flight SQL and over MySQL, or the error
// would tell which files exist. An admin keeps DuckDB's own errors.
func TestRoles_FileStateHidden(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db", "f.duckdb")
	srv := testutil.StartServer(t, server.Config{
		DB: db, MySQLAddr: "127.0.0.1:0", Security: server.Security{Users: roleUsers},
	})
	staging, outside := db+".backup", t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(staging, "secret1.csv"), "a,b\n1,2\n")
	write(filepath.Join(staging, "gone.csv"), "a,b\n3,4\n")
	write(filepath.Join(staging, "bad.parquet"), "this is not a parquet file")
	write(filepath.Join(staging, "bad.csv"), "\x00\xff\xfe\"unterminated\n\x00")
	write(filepath.Join(outside, "secret.csv"), "a,b\n5,6\n")
	in := func(name string) string { return filepath.Join(staging, name) }
	out := func(name string) string { return filepath.Join(outside, name) }

	ctx := context.Background()
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "adminpw"})
	for _, q := range []string{
		"CREATE TABLE facts (a INTEGER, b INTEGER)",
		"CREATE MACRO rd(p) AS TABLE SELECT * FROM read_csv(p)",
		"CREATE VIEW v_here AS SELECT * FROM read_csv('" + in("secret1.csv") + "')",
		"CREATE VIEW v_gone AS SELECT * FROM read_csv('" + in("gone.csv") + "')",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := os.Remove(filepath.Join(staging, "gone.csv")); err != nil {
		t.Fatal(err)
	}

	// Each group's statements differ only in what DuckDB would find.
	groups := []struct {
		name  string
		query bool // a statement with rows, for MySQL's driver
		sqls  []string
	}{
		{"read_csv", true, []string{
			"SELECT * FROM read_csv('" + in("secret1.csv") + "')",
			"SELECT * FROM read_csv('" + in("missing.csv") + "')",
			"SELECT * FROM read_csv('" + in("secret*.csv") + "')",
			"SELECT * FROM read_csv('" + in("zz*.csv") + "')",
			"SELECT * FROM read_csv('" + in("bad.csv") + "')",
			"SELECT * FROM read_csv('" + in("bad.parquet") + "')",
			"SELECT * FROM read_csv('" + out("secret.csv") + "')",
			"SELECT * FROM read_csv('" + out("missing.csv") + "')",
		}},
		{"read_parquet", true, []string{
			"SELECT * FROM read_parquet('" + in("bad.parquet") + "')",
			"SELECT * FROM read_parquet('" + in("missing.parquet") + "')",
			"SELECT * FROM read_parquet('" + in("*.parquet") + "')",
			"SELECT * FROM read_parquet('" + in("zz*.parquet") + "')",
		}},
		{"glob", true, []string{
			"SELECT * FROM glob('" + in("s*") + "')",
			"SELECT * FROM glob('" + in("q*") + "')",
		}},
		{"read_text", true, []string{
			"SELECT * FROM read_text('" + in("secret1.csv") + "')",
			"SELECT * FROM read_text('" + in("missing.csv") + "')",
		}},
		{"a table named by a file", true, []string{
			"SELECT * FROM '" + in("secret1.csv") + "'",
			"SELECT * FROM '" + in("missing.csv") + "'",
			"SELECT * FROM '" + in("bad.parquet") + "'",
			"SELECT * FROM '" + in("missing.parquet") + "'",
			"SELECT * FROM '" + in("secret*.csv") + "'",
		}},
		{"an admin's macro", true, []string{
			"SELECT * FROM rd('" + in("secret1.csv") + "')",
			"SELECT * FROM rd('" + in("missing.csv") + "')",
			"SELECT * FROM rd('" + in("secret*.csv") + "')",
			"SELECT * FROM rd('" + in("zz*.csv") + "')",
			"SELECT * FROM rd('" + in("bad.parquet") + "')",
		}},
		{"an admin's view", true, []string{
			"SELECT * FROM v_here",
			"SELECT * FROM v_gone",
		}},
		{"DESCRIBE", true, []string{
			"DESCRIBE '" + in("secret1.csv") + "'",
			"DESCRIBE '" + in("missing.csv") + "'",
			"DESCRIBE SELECT * FROM rd('" + in("secret1.csv") + "')",
			"DESCRIBE SELECT * FROM rd('" + in("missing.csv") + "')",
		}},
		{"INSERT from a file", false, []string{
			"INSERT INTO facts SELECT * FROM read_csv('" + in("secret1.csv") + "')",
			"INSERT INTO facts SELECT * FROM read_csv('" + in("missing.csv") + "')",
		}},
		{"COPY from a file", false, []string{
			"COPY facts FROM '" + in("secret1.csv") + "'",
			"COPY facts FROM '" + in("missing.csv") + "'",
		}},
	}
	for _, user := range roleUsers[1:] {
		fl := testutil.Dial(t, srv, client.Config{User: user.Name, Password: user.Password})
		my := openMySQL(t, srv, user, "")
		for _, g := range groups {
			t.Run(user.Name+"/flight/"+g.name, func(t *testing.T) {
				var first string
				for i, q := range g.sqls {
					err := drain(fl.Query(ctx, q))
					if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "admin role") {
						t.Errorf("%s: got %v, want PermissionDenied saying it needs the admin role", q, err)
						continue
					}
					got := status.Convert(err).Message()
					if i == 0 {
						first = got
					} else if got != first {
						t.Errorf("%s: got %q, want the same refusal as %s: %q", q, got, g.sqls[0], first)
					}
				}
			})
			t.Run(user.Name+"/mysql/"+g.name, func(t *testing.T) {
				var first string
				for i, q := range g.sqls {
					err := mysqlRun(my, q, g.query)
					var me *mysql.MySQLError
					if !errors.As(err, &me) || me.Number != 1227 || !strings.Contains(me.Message, "admin role") {
						t.Errorf("%s: got %v, want error 1227 saying it needs the admin role", q, err)
						continue
					}
					if i == 0 {
						first = me.Message
					} else if me.Message != first {
						t.Errorf("%s: got %q, want the same refusal as %s: %q", q, me.Message, g.sqls[0], first)
					}
				}
			})
		}
		t.Run(user.Name+"/own mistakes keep DuckDB's message", func(t *testing.T) {
			err := drain(fl.Query(ctx, "SELECT no_such_column FROM facts"))
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "no_such_column") {
				t.Errorf("got %v, want InvalidArgument naming no_such_column", err)
			}
		})
	}

	t.Run("admin keeps DuckDB's errors", func(t *testing.T) {
		for _, tc := range []struct{ sql, want string }{
			{"SELECT * FROM read_csv('" + in("missing.csv") + "')", "No files found"},
			{"SELECT * FROM rd('" + in("zz*.csv") + "')", "No files found"},
			{"SELECT * FROM read_parquet('" + in("bad.parquet") + "')", "parquet"},
			{"SELECT * FROM v_gone", "gone.csv"},
		} {
			err := drain(admin.Query(ctx, tc.sql))
			if err == nil || status.Code(err) == codes.PermissionDenied || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want DuckDB's error saying %q", tc.sql, err, tc.want)
			}
		}
		if got := queryString(t, admin, "SELECT count(*)::VARCHAR FROM v_here"); got != "1" {
			t.Errorf("admin's count of v_here = %s, want 1", got)
		}
	})
}
