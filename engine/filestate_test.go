package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// TestConn_PrepareHidesFileState prepares, as the user the endpoint put in
// the context, statements that would make DuckDB list or open files as it
// binds them. A non-admin's call of a reader by name is refused before
// DuckDB sees it; a failure to prepare that may come from a reader the
// statement reaches gets the one refusal the plan's check gives; the
// user's own mistakes elsewhere, an admin's and the server's own
// statements keep DuckDB's message.
func TestConn_PrepareHidesFileState(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "here.csv"), []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := func(name string) string { return "'" + filepath.Join(dir, name) + "'" }
	db := openTest(t, engine.Options{AllowedDirs: []string{dir}})
	c := testConn(t, db,
		"CREATE TABLE t (a INTEGER, b INTEGER)",
		"CREATE TABLE query (a INTEGER)",
		"CREATE VIEW v_ok AS SELECT a FROM t",
		"CREATE VIEW v_file AS SELECT * FROM read_csv("+in("here.csv")+")",
		"CREATE MACRO rd(p) AS TABLE SELECT * FROM read_csv(p)",
		"CREATE MACRO rd2(p) AS TABLE SELECT * FROM rd(p)",
	)
	const fileRefusal = "may not call a function that reads files"
	type want struct {
		ok      bool
		refusal string // a permission refusal holding this
		duckdb  string // DuckDB's own error holding this
	}
	var none auth.User // no user in the context: the server's own statement
	tests := []struct {
		name string
		user auth.User
		sql  string
		want want
	}{
		{"a reader by name", ro, "SELECT * FROM read_csv(" + in("missing.csv") + ")", want{refusal: "may not call read_csv"}},
		{"a reader by quoted name", ro, `SELECT * FROM "read_csv"(` + in("missing.csv") + ")", want{refusal: "may not call read_csv"}},
		{"a reader in a script", rw, "SELECT 1; SELECT * FROM glob(" + in("*") + ")", want{refusal: "may not call glob"}},
		{"SQL in a string", ro, "SELECT * FROM query('SELECT 1')", want{refusal: "may not call query"}},
		{"a reader in an INSERT", rw, "INSERT INTO t SELECT * FROM read_csv(" + in("here.csv") + ")", want{refusal: "may not call read_csv"}},
		{"COPY from a file", rw, "COPY t FROM " + in("missing.csv"), want{refusal: "may not run COPY statements"}},
		{"IMPORT DATABASE", rw, "IMPORT DATABASE " + in("nothing"), want{refusal: "may not run IMPORT statements"}},
		{"a table named query is no call", rw, "INSERT INTO query (a) VALUES (1)", want{ok: true}},
		{"a table named like a reader is no call", rw, "CREATE TABLE read_text (a INTEGER)", want{ok: true}},
		{"a macro over a reader, file missing", ro, "SELECT * FROM rd(" + in("missing.csv") + ")", want{refusal: fileRefusal}},
		{"a macro over a reader, file there", ro, "SELECT * FROM rd(" + in("here.csv") + ")", want{refusal: fileRefusal}},
		{"a macro over a reader outside the directories", ro, "SELECT * FROM rd('" + filepath.Join(t.TempDir(), "x.csv") + "')", want{refusal: fileRefusal}},
		{"a macro over a macro over a reader", rw, "SELECT * FROM rd2(" + in("missing.csv") + ")", want{refusal: fileRefusal}},
		{"a table named by a file, missing", ro, "SELECT * FROM " + in("missing.csv"), want{refusal: fileRefusal}},
		{"a table named by a file, there", ro, "SELECT * FROM " + in("here.csv"), want{refusal: fileRefusal}},
		{"a mistake beside a file in a FROM list", ro, "SELECT nope FROM t, " + in("here.csv"), want{refusal: fileRefusal}},
		{"DESCRIBE a file, missing", ro, "DESCRIBE " + in("missing.csv"), want{refusal: fileRefusal}},
		{"DESCRIBE a file, there", ro, "DESCRIBE " + in("here.csv"), want{refusal: fileRefusal}},
		{"SUMMARIZE a file, there", ro, "SUMMARIZE " + in("here.csv"), want{refusal: fileRefusal}},
		{"DESCRIBE through a macro", ro, "DESCRIBE SELECT * FROM rd(" + in("here.csv") + ")", want{refusal: fileRefusal}},
		{"DESCRIBE a view over a table", ro, "DESCRIBE v_ok", want{ok: true}},
		{"a view over a macro over a reader", rw, "CREATE VIEW w AS SELECT * FROM rd(" + in("here.csv") + ")", want{refusal: fileRefusal}},
		{"a view with a path among its values", rw, "CREATE VIEW w AS SELECT a, 'x/y.csv' AS p FROM v_ok", want{ok: true}},
		{"a view over a table", rw, "CREATE VIEW w AS SELECT * FROM v_ok", want{ok: true}},
		{"a mistake in a view over a reader", ro, "SELECT nope FROM v_file", want{refusal: fileRefusal}},
		{"a mistake in a view over a table", ro, "SELECT nope FROM v_ok", want{duckdb: "nope"}},
		{"a mistake of one's own", ro, "SELECT nope FROM t", want{duckdb: "nope"}},
		{"an admin's missing file", admin, "SELECT * FROM read_csv(" + in("missing.csv") + ")", want{duckdb: "No files found"}},
		{"an admin's macro", admin, "SELECT * FROM rd(" + in("missing.csv") + ")", want{duckdb: "No files found"}},
		{"the server's own statement", none, "SELECT * FROM read_csv(" + in("missing.csv") + ")", want{duckdb: "No files found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.user.Name != "" {
				ctx = auth.ContextWithUser(ctx, tc.user)
			}
			st, _, err := c.PrepareLast(ctx, tc.sql, func(st *engine.Stmt) error {
				if tc.user.Name == "" {
					return nil
				}
				return st.Authorize(ctx, tc.user)
			})
			if st != nil {
				st.Close()
			}
			var denied *auth.DeniedError
			switch {
			case tc.want.ok:
				if err != nil {
					t.Errorf("got %v, want it prepared and allowed", err)
				}
			case tc.want.refusal != "":
				if !errors.As(err, &denied) || denied.Need != auth.AccessAdmin || !strings.Contains(err.Error(), tc.want.refusal) {
					t.Errorf("got %v, want a refusal saying %q", err, tc.want.refusal)
				}
			default:
				if err == nil || errors.As(err, &denied) || !strings.Contains(err.Error(), tc.want.duckdb) {
					t.Errorf("got %v, want DuckDB's error saying %q", err, tc.want.duckdb)
				}
			}
		})
	}
}
