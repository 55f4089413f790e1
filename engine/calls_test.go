package engine_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

var (
	ro    = auth.User{Name: "ro", Role: auth.RoleReadOnly}
	rw    = auth.User{Name: "rw", Role: auth.RoleReadWrite}
	admin = auth.User{Name: "admin", Role: auth.RoleAdmin}
)

// authorizeAs prepares sql (a script runs its statements but the last, as
// PrepareLast does) on c, checking each statement for u, and returns the
// check's error.
func authorizeAs(t *testing.T, c *engine.Conn, u auth.User, sql string) error {
	t.Helper()
	ctx := context.Background()
	st, _, err := c.PrepareLast(ctx, sql, func(st *engine.Stmt) error { return st.Authorize(ctx, u) })
	if err != nil {
		return err
	}
	st.Close()
	return nil
}

func TestStmt_AuthorizeCalls(t *testing.T) {
	db := openTest(t, engine.Options{})
	c := testConn(t, db,
		"CREATE TABLE t(i INTEGER, s VARCHAR)",
		"INSERT INTO t VALUES (1, 'a')",
		"CREATE SEQUENCE seq1",
		"CREATE VIEW v_seq AS SELECT nextval('seq1') AS n",
		"CREATE VIEW v_ok AS SELECT i FROM t",
		"CREATE MACRO m_ok(x) AS x + 1",
		"CREATE MACRO m_next() AS nextval('seq1')",
		"CREATE MACRO m_logs() AS TABLE SELECT * FROM duckdb_logs",
		"CREATE MACRO abs(x) AS nextval('seq1')", // a user's macro shadowing a function
	)
	type want struct {
		ok       bool
		refused  bool     // refused for every role
		need     string   // the role the refusal names
		function []string // the function it names, one of these
	}
	allow := want{ok: true}
	deny := func(need string, fns ...string) want { return want{need: need, function: fns} }
	refuse := want{refused: true}
	tests := []struct {
		user auth.User
		sql  string
		want want
	}{
		// Logging: the brick and the spy.
		{ro, "SELECT * FROM enable_logging()", deny("admin", "enable_logging")},
		{rw, "SELECT * FROM enable_logging()", deny("admin", "enable_logging")},
		{admin, "SELECT * FROM enable_logging()", allow},
		{admin, "SELECT * FROM enable_logging(storage = 'memory', level = 'info')", allow},
		{ro, "SELECT * FROM enable_logging(storage='file', storage_path='/tmp/x')", deny("admin", "enable_logging")},
		{admin, "SELECT * FROM enable_logging(storage='file', storage_path='/tmp/x')", refuse},
		{admin, "SELECT * FROM enable_logging(storage_path='/tmp/x')", refuse},
		{admin, "CALL enable_logging(storage='file', storage_path='/tmp/x')", refuse},
		{admin, "select * from ENABLE_LOGGING(storage := 'FILE', storage_path := '/tmp/x')", refuse},
		{admin, "SELECT * FROM enable_logging(storage_config = {'path': '/tmp/x'})", refuse},
		{ro, "SELECT message FROM duckdb_logs", deny("admin", "duckdb_logs", "duckdb_log_contexts")},
		{ro, "SELECT * FROM duckdb_logs_parsed('QueryLog')", deny("admin", "duckdb_logs", "duckdb_log_contexts", "duckdb_logs_parsed")},
		{ro, "SELECT * FROM truncate_duckdb_logs()", deny("admin", "truncate_duckdb_logs")},
		{ro, "SELECT * FROM disable_logging()", deny("admin", "disable_logging")},
		{ro, "SELECT write_log('x')", deny("admin", "write_log")},
		// Checkpoints.
		{ro, "SELECT * FROM force_checkpoint()", deny("admin", "force_checkpoint")},
		{rw, "SELECT * FROM checkpoint()", deny("admin", "checkpoint")},
		// Sequences: a write.
		{ro, "SELECT nextval('seq1')", deny("readwrite", "nextval")},
		{rw, "SELECT nextval('seq1')", allow},
		{ro, "SELECT currval('seq1')", allow},
		{ro, "SELECT * FROM v_seq", deny("readwrite", "nextval")},
		{ro, "SELECT m_next()", deny("readwrite", "nextval")},
		{ro, "SELECT abs(-1)", deny("readwrite", "nextval")},
		{ro, "SELECT * FROM t WHERE i = (SELECT max(n) FROM v_seq)", deny("readwrite", "nextval")},
		{ro, "SELECT * FROM query('SELECT nextval(''seq1'')')", deny("", "query", "nextval")},
		{ro, "SELECT * FROM m_logs()", deny("admin", "duckdb_logs", "duckdb_log_contexts")},
		{ro, "SELECT setseed(0.5)", deny("readwrite", "setseed")},
		// Settings, paths, variables and files.
		{ro, "SELECT current_setting('allowed_directories')", deny("admin", "current_setting")},
		{ro, "SELECT * FROM duckdb_settings()", deny("admin", "duckdb_settings")},
		{ro, "SELECT path FROM duckdb_databases()", deny("admin", "duckdb_databases")},
		{ro, "SELECT getvariable('x')", deny("admin", "getvariable")},
		{ro, "SELECT * FROM duckdb_variables()", deny("admin", "duckdb_variables")},
		{ro, "SELECT * FROM duckdb_temporary_files()", deny("admin", "duckdb_temporary_files")},
		{ro, "SELECT json_serialize_plan('SELECT 1')", deny("admin", "json_serialize_plan")},
		{ro, "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))", deny("admin", "json_execute_serialized_sql")},
		{ro, "SELECT * FROM enable_profiling()", deny("admin", "enable_profiling")},
		{ro, "SELECT * FROM enable_peg_parser()", deny("admin", "enable_peg_parser")},
		// What every role may do.
		{ro, "SELECT upper(s), count(*) FROM t GROUP BY ALL", allow},
		{ro, "SELECT * FROM v_ok", allow},
		{ro, "SELECT m_ok(1)", allow},
		{ro, "SELECT list_transform([1, 2], x -> x + 1), sum(i) OVER () FROM t", allow},
		{ro, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT max(n) FROM r", allow},
		{ro, "SELECT * FROM t WHERE i = ?", allow},
		{ro, "SELECT ?, upper(?)", allow},
		{ro, "SELECT nextval(?)", deny("readwrite", "nextval")},
		{ro, "SELECT * FROM range(10) JOIN generate_series(1, 3) g(x) ON range = x", allow},
		{ro, "SELECT * FROM duckdb_tables()", allow},
		{ro, "SHOW TABLES", allow},
		{ro, "DESCRIBE t", allow},
		{ro, "SUMMARIZE t", allow},
		{ro, "FROM t", allow},
		{ro, "VALUES (1), (2)", allow},
		{ro, "SELECT version(), current_database(), current_schema()", allow},
		{ro, "SELECT 1E1000, -1E1000, i FROM t WHERE i < 'inf'::DOUBLE", allow}, // DuckDB writes Infinity in its JSON
		{ro, "BEGIN TRANSACTION", allow},
		// EXPLAIN binds, EXPLAIN ANALYZE runs: what they explain is checked.
		{ro, "EXPLAIN SELECT 1", allow},
		{ro, "EXPLAIN SELECT * FROM enable_logging()", deny("admin", "enable_logging")},
		{ro, "EXPLAIN (FORMAT json) SELECT nextval('seq1')", deny("readwrite", "nextval")},
		{ro, "EXPLAIN (SELECT * FROM v_seq)", deny("readwrite", "nextval")},
		{ro, "/* a /* nested */ comment */ EXPLAIN SELECT * FROM duckdb_logs", deny("admin", "duckdb_logs", "duckdb_log_contexts")},
		{rw, "EXPLAIN ANALYZE SELECT nextval('seq1')", allow},
		{rw, "EXPLAIN ANALYZE SELECT * FROM checkpoint()", deny("admin", "checkpoint")},
		// A readwrite user's statements and definitions.
		{rw, "CREATE VIEW v2 AS SELECT * FROM duckdb_logs", deny("admin", "duckdb_logs")},
		{rw, "CREATE MACRO m2() AS TABLE SELECT * FROM enable_logging()", deny("admin", "enable_logging")},
		{rw, "CREATE MACRO m3(x) AS current_setting(x)", deny("admin", "current_setting")},
		{rw, "CREATE MACRO m4(x) AS m_ok(x) * 2", allow},
		{rw, "CREATE TABLE t2 AS SELECT nextval('seq1') AS n", allow},
		{rw, "CREATE TABLE t3(i INTEGER DEFAULT nextval('seq1'))", allow},
		{rw, "CREATE TABLE t4(s VARCHAR DEFAULT current_setting('temp_directory'))", deny("admin", "current_setting")},
		{rw, "INSERT INTO t SELECT 1, current_setting('temp_directory')", deny("admin", "current_setting")},
		{rw, "INSERT INTO t VALUES (?, ?)", allow},
		{rw, "UPDATE t SET s = upper(s) WHERE i = ?", allow},
		{rw, "DELETE FROM t WHERE i IN (SELECT i FROM t)", allow},
		{rw, "ALTER TABLE t ALTER s SET DEFAULT current_setting('temp_directory')", deny("admin", "current_setting")},
		{rw, "ALTER TABLE t ADD COLUMN z INTEGER DEFAULT 5", allow},
		// Scripts: each statement, by its own text.
		{ro, "SELECT 1; SELECT * FROM duckdb_logs", deny("admin", "duckdb_logs", "duckdb_log_contexts")},
		{ro, "SELECT 1 /* ; */; SELECT nextval('seq1')", deny("readwrite", "nextval")},
		{ro, "SELECT ';' AS a; SELECT $$;$$ AS b; SELECT 2", allow},
		{ro, "SELECT 1; SELECT 2; -- done", allow},
		{rw, "CREATE TABLE t5(i INTEGER); INSERT INTO t5 VALUES (1); SELECT * FROM t5", allow},
	}
	for _, tt := range tests {
		t.Run(tt.user.Name+"/"+tt.sql, func(t *testing.T) {
			err := authorizeAs(t, c, tt.user, tt.sql)
			c.Exec(context.Background(), "ROLLBACK") // after BEGIN; fails harmlessly otherwise
			var denied *auth.DeniedError
			switch {
			case tt.want.ok:
				if err != nil {
					t.Fatalf("got %v, want it allowed", err)
				}
			case tt.want.refused:
				if !errors.Is(err, engine.ErrRefused) {
					t.Fatalf("got %v, want it refused for every role", err)
				}
			case !errors.As(err, &denied):
				t.Fatalf("got %v, want a refusal naming one of %v", err, tt.want.function)
			default:
				if tt.want.need != "" && denied.Need.String() != tt.want.need {
					t.Errorf("need = %s, want %s (%v)", denied.Need, tt.want.need, err)
				}
				found := false
				for _, f := range tt.want.function {
					found = found || denied.Function == f
				}
				if !found {
					t.Errorf("function = %q, want one of %v (%v)", denied.Function, tt.want.function, err)
				}
				if !strings.Contains(err.Error(), denied.Function) {
					t.Errorf("message %q does not name %s", err, denied.Function)
				}
			}
		})
	}
	// Nothing refused ran: the sequence never moved and no log was kept.
	if n, err := c.QueryInt64(context.Background(), "SELECT count(*) FROM duckdb_logs"); err != nil || n != 0 {
		t.Errorf("duckdb_logs has %d rows (%v), want 0", n, err)
	}
}

// TestFunctionClasses_Complete lists the functions of the linked DuckDB:
// each must be classed by functions.txt, and each name classed there must
// still be one of DuckDB's, so that an upgrade cannot add a function no
// one has looked at.
func TestFunctionClasses_Complete(t *testing.T) {
	db := openTest(t, engine.Options{})
	c := testConn(t, db)
	rows, err := c.Query(context.Background(),
		"SELECT DISTINCT function_name, function_type FROM duckdb_functions() WHERE internal ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	have := map[string]string{}
	for rows.Next() {
		b := rows.RecordBatch()
		names, types := b.Column(0).(*array.String), b.Column(1).(*array.String)
		for i := range names.Len() {
			have[names.Value(i)] += types.Value(i) + " "
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(have) < 900 {
		t.Fatalf("DuckDB lists %d functions, want the ~950 of 1.5.6", len(have))
	}
	var missing []string
	for name, types := range have {
		if _, _, ok := engine.FunctionClass(name); !ok {
			missing = append(missing, name+" ("+strings.TrimSpace(types)+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d functions of the linked DuckDB are in no class; review each and add it to engine/functions.txt:\n%s",
			len(missing), strings.Join(missing, "\n"))
	}
	lower := map[string]bool{}
	for name := range have {
		lower[strings.ToLower(name)] = true
	}
	for _, name := range engine.ClassedFunctions() {
		if !lower[name] {
			t.Errorf("engine/functions.txt classes %s, which the linked DuckDB does not have", name)
		}
	}
}

// TestStmt_BindInvalidUTF8: DuckDB makes no VARCHAR of text that is not
// UTF-8, and binding that nothing crashed the process; such a parameter is
// an error naming it, from Go values and from Arrow rows, and a statement
// text that is not UTF-8 is refused by the function check, not bound.
func TestStmt_BindInvalidUTF8(t *testing.T) {
	db := openTest(t, engine.Options{})
	c := testConn(t, db)
	ctx := context.Background()
	st, err := c.Prepare(ctx, "SELECT ?::VARCHAR")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ee *engine.Error
	if err := st.BindValues("ok\xff"); !errors.As(err, &ee) || ee.Kind != engine.KindInvalid || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("BindValues of invalid UTF-8: got %v, want an invalid-input error about UTF-8", err)
	}
	b := array.NewStringBuilder(db.Allocator())
	defer b.Release()
	b.Append("\xc3\x28")
	arr := b.NewArray()
	defer arr.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{arr}, 1)
	defer rec.Release()
	if err := st.BindRow(rec, 0); !errors.As(err, &ee) || ee.Kind != engine.KindInvalid || !strings.Contains(err.Error(), "parameter 1 (p)") {
		t.Errorf("BindRow of invalid UTF-8: got %v, want an invalid-input error naming parameter 1 (p)", err)
	}
	if err := authorizeAs(t, c, ro, "SELECT 1; SELECT \xd3;"); err == nil {
		t.Error("a script that is not UTF-8 passed the function check")
	}
	if n, err := c.QueryInt64(ctx, "SELECT 42::BIGINT"); err != nil || n != 42 {
		t.Errorf("after the refusals: SELECT 42 = %d, %v", n, err)
	}
}

// TestStmt_AuthorizeCalls_CatalogChanges: the function check's readings
// are kept while the catalog stays as it was, and never serve a statement
// that would bind differently: a view redefined, one redefined in a
// transaction that is rolled back or committed, and a reading made in an
// older transaction's snapshot.
func TestStmt_AuthorizeCalls_CatalogChanges(t *testing.T) {
	db := openTest(t, engine.Options{})
	ctx := context.Background()
	conn := func() *engine.Conn {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	writer, reader, other := conn(), conn(), conn()
	exec := func(c *engine.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const q = "SELECT * FROM v"
	check := func(c *engine.Conn, wantAllowed bool, when string) {
		t.Helper()
		for range 2 { // the second may come from the cache
			err := authorizeAs(t, c, ro, q)
			if got := err == nil; got != wantAllowed {
				t.Fatalf("%s: allowed = %v (%v), want %v", when, got, err, wantAllowed)
			}
		}
	}
	exec(writer, "CREATE SEQUENCE s")
	exec(writer, "CREATE VIEW v AS SELECT 1 AS x")
	check(reader, true, "a plain view")
	exec(writer, "CREATE OR REPLACE VIEW v AS SELECT nextval('s') AS x")
	check(reader, false, "the view now draws from a sequence")

	exec(writer, "BEGIN TRANSACTION")
	exec(writer, "CREATE OR REPLACE VIEW v AS SELECT 2 AS x")
	check(reader, false, "a harmless view, not committed")
	exec(writer, "ROLLBACK")
	check(reader, false, "the harmless view rolled back")
	exec(writer, "BEGIN TRANSACTION")
	exec(writer, "CREATE OR REPLACE VIEW v AS SELECT 3 AS x")
	exec(writer, "COMMIT")
	check(reader, true, "the harmless view committed")

	// A reader in a transaction that began before the view changed keeps
	// its snapshot: its reading must not serve anyone else. DuckDB takes
	// the snapshot at the transaction's first statement that reads the
	// catalog, not at BEGIN, and a check whose statement and reading
	// both come from the caches reads none; so the reader runs one.
	exec(reader, "BEGIN TRANSACTION")
	exec(reader, "SELECT count(*) FROM v")
	check(reader, true, "in a transaction")
	exec(writer, "CREATE OR REPLACE VIEW v AS SELECT nextval('s') AS x")
	check(reader, true, "in a transaction that began before the change")
	check(other, false, "outside it, after the change")
	exec(reader, "COMMIT")
	check(reader, false, "after that transaction")
}
