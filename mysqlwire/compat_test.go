package mysqlwire

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// queryStringsSQL runs a statement on c and returns its rows as strings
// ("NULL" for NULL); a statement without rows returns none.
func queryStringsSQL(t *testing.T, c *sql.Conn, query string) [][]string {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%s: scan: %v", query, err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// one returns the single value of a one-row, one-column query.
func one(t *testing.T, c *sql.Conn, query string) string {
	t.Helper()
	rows := queryStringsSQL(t, c, query)
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("%s: got %v, want one value", query, rows)
	}
	return rows[0][0]
}

// TestServer_ConnectStatements runs what the mysql CLI, Connector/J,
// PyMySQL and go-sql-driver send when they connect.
func TestServer_ConnectStatements(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.conn(t, "")
	if _, err := c.ExecContext(context.Background(), "CREATE TABLE ct (id INTEGER, name VARCHAR)"); err != nil {
		t.Fatalf("create: %v", err)
	}
	statements := []string{
		"SET NAMES utf8mb4",
		"SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci'",
		"SET character_set_results = NULL",
		"SET autocommit=1",
		"SET sql_mode='STRICT_TRANS_TABLES'",
		"SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_ZERO_DATE')",
		"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
		"SET @@session.net_write_timeout = 600",
		"SET time_zone = '+00:00'",
		"SET SQL_SELECT_LIMIT=DEFAULT",
		"SET foreign_key_checks = 0, unique_checks = 0",
		"/*!40101 SET NAMES utf8 */",
		"SELECT @@version_comment LIMIT 1",
		"/* mysql-connector-java-8.0.33 */SELECT @@session.auto_increment_increment AS auto_increment_increment, " +
			"@@character_set_client AS character_set_client, @@character_set_connection AS character_set_connection, " +
			"@@character_set_results AS character_set_results, @@character_set_server AS character_set_server, " +
			"@@collation_server AS collation_server, @@collation_connection AS collation_connection, " +
			"@@init_connect AS init_connect, @@interactive_timeout AS interactive_timeout, @@license AS license, " +
			"@@lower_case_table_names AS lower_case_table_names, @@max_allowed_packet AS max_allowed_packet, " +
			"@@net_write_timeout AS net_write_timeout, @@performance_schema AS performance_schema, " +
			"@@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, @@time_zone AS time_zone, " +
			"@@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout",
		"SHOW VARIABLES LIKE 'character\\_set\\_%'",
		"SHOW VARIABLES WHERE Variable_name = 'language' OR Variable_name = 'net_write_timeout'",
		"SHOW SESSION VARIABLES LIKE 'lower_case_table_names'",
		"SHOW WARNINGS",
		"SHOW WARNINGS LIMIT 10",
		"SHOW COUNT(*) WARNINGS",
		"SHOW DATABASES",
		"SHOW TABLES",
		"SHOW FULL TABLES",
		"SELECT DATABASE()",
		"SELECT @@tx_isolation",
		"SELECT @@session.transaction_isolation",
		"SELECT @@session.transaction_read_only",
		"SELECT @@session.tx_read_only",
		"SHOW COLLATION",
		"SHOW COLLATION WHERE Charset = 'utf8mb4'",
		"SHOW CHARACTER SET",
		"SHOW CHARSET LIKE 'utf8%'",
		"SHOW ENGINES",
		"SHOW PROCESSLIST",
		"SHOW STATUS LIKE 'Threads%'",
		"SHOW COLUMNS FROM ct",
		"SHOW FULL COLUMNS FROM `ct`",
		"DESCRIBE ct",
		"DESC ct",
		"SHOW CREATE TABLE ct",
		"SELECT USER(), CURRENT_USER(), CONNECTION_ID(), VERSION(), LAST_INSERT_ID()",
		"SELECT @@max_allowed_packet, @@global.max_allowed_packet FROM DUAL",
		"SET SESSION autocommit = ON",
		"COMMIT",
		"ROLLBACK",
	}
	for _, stmt := range statements {
		queryStringsSQL(t, c, stmt)
	}

	checks := []struct{ query, want string }{
		{"SELECT @@character_set_client", "utf8"},
		{"SELECT @@character_set_results", "utf8"},
		// ANSI_QUOTES stays; NO_BACKSLASH_ESCAPES goes with the client's
		// sql_mode, as in MySQL (lock_test.go has what that changes).
		{"SELECT @@sql_mode", "STRICT_TRANS_TABLES,ANSI_QUOTES"},
		{"SELECT @@transaction_isolation", "READ-COMMITTED"},
		{"SELECT @@tx_isolation", "READ-COMMITTED"},
		// The server's write timeout (60 s) is a ceiling a session may
		// not raise (ceiling.go).
		{"SELECT @@net_write_timeout", "60"},
		{"SELECT @@autocommit", "1"},
		{"SELECT @@foreign_key_checks", "0"},
		{"SELECT @@version_comment", "quiver (DuckDB v"},
		{"SELECT DATABASE()", "main"},
		{"SHOW TABLES", "ct"},
		{"SELECT @@SESSION.time_zone AS tz", "+00:00"},
	}
	for _, ck := range checks {
		rows := queryStringsSQL(t, c, ck.query)
		if len(rows) == 0 || !strings.HasPrefix(rows[0][0], ck.want) {
			t.Errorf("%s = %v, want %q", ck.query, rows, ck.want)
		}
	}

	t.Run("SET character_set_results = NULL reads back as NULL", func(t *testing.T) {
		queryStringsSQL(t, c, "SET character_set_results = NULL")
		if got := one(t, c, "SELECT @@character_set_results"); got != "NULL" {
			t.Errorf("@@character_set_results = %q, want NULL", got)
		}
	})

	t.Run("column names", func(t *testing.T) {
		rows, err := c.QueryContext(context.Background(), "SELECT @@session.auto_increment_increment AS auto_increment_increment, @@version_comment, DATABASE()")
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		cols, _ := rows.Columns()
		rows.Close()
		if got, want := strings.Join(cols, ","), "auto_increment_increment,@@version_comment,DATABASE()"; got != want {
			t.Errorf("columns = %s, want %s", got, want)
		}
	})

	t.Run("SHOW VARIABLES LIKE", func(t *testing.T) {
		rows := queryStringsSQL(t, c, "SHOW VARIABLES LIKE 'character\\_set\\_c%'")
		var names []string
		for _, r := range rows {
			names = append(names, r[0])
		}
		if got, want := strings.Join(names, ","), "character_set_client,character_set_connection"; got != want {
			t.Errorf("variables = %s, want %s", got, want)
		}
	})

	t.Run("SHOW VARIABLES WHERE", func(t *testing.T) {
		rows := queryStringsSQL(t, c, "SHOW VARIABLES WHERE Variable_name IN ('wait_timeout', 'nosuch')")
		if len(rows) != 1 || rows[0][0] != "wait_timeout" || rows[0][1] != "28800" {
			t.Errorf("rows = %v, want [[wait_timeout 28800]]", rows)
		}
	})

	t.Run("a DuckDB setting goes to DuckDB", func(t *testing.T) {
		// The engine locks its configuration, so DuckDB refuses; what
		// matters is that it was DuckDB that answered.
		_, err := c.ExecContext(context.Background(), "SET threads = 1")
		if err == nil || !strings.Contains(err.Error(), "configuration") {
			t.Errorf("SET threads = %v, want DuckDB's locked-configuration error", err)
		}
	})
}

func TestServer_UseDatabase(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.conn(t, "")
	queryStringsSQL(t, c, "CREATE SCHEMA s2; CREATE TABLE s2.t2 (x INTEGER); INSERT INTO s2.t2 VALUES (7)")

	t.Run("USE", func(t *testing.T) {
		queryStringsSQL(t, c, "USE s2")
		if got := one(t, c, "SELECT DATABASE()"); got != "s2" {
			t.Errorf("DATABASE() = %q, want s2", got)
		}
		if got := one(t, c, "SELECT x FROM t2"); got != "7" {
			t.Errorf("x = %q, want 7", got)
		}
		rows, err := c.QueryContext(context.Background(), "SHOW TABLES")
		if err != nil {
			t.Fatalf("show tables: %v", err)
		}
		cols, _ := rows.Columns()
		rows.Close()
		if len(cols) != 1 || cols[0] != "Tables_in_s2" {
			t.Errorf("columns = %v, want [Tables_in_s2]", cols)
		}
		queryStringsSQL(t, c, "USE `main`")
		if got := one(t, c, "SELECT DATABASE()"); got != "main" {
			t.Errorf("DATABASE() = %q, want main", got)
		}
	})

	t.Run("database in the login", func(t *testing.T) {
		db := ts.openAs(t, "u", "", "s2", "")
		var name string
		if err := db.QueryRow("SELECT DATABASE()").Scan(&name); err != nil || name != "s2" {
			t.Errorf("DATABASE() = %q, %v; want s2", name, err)
		}
	})

	t.Run("unknown database in the login", func(t *testing.T) {
		db := ts.openAs(t, "u", "", "nosuchdb", "")
		err := db.Ping()
		if got := mysqlErrNum(err); got != 1049 {
			t.Errorf("ping = %v, want error 1049", err)
		}
	})

	t.Run("a pooled engine connection forgets USE", func(t *testing.T) {
		db2, err := sql.Open("mysql", ts.dsn("u", "", "", ""))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		c2, err := db2.Conn(context.Background())
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		queryStringsSQL(t, c2, "USE s2")
		id := one(t, c2, "SELECT CONNECTION_ID()")
		c2.Close()
		db2.Close()
		waitFor(t, 5*time.Second, "session "+id+" to close", func() bool {
			for _, r := range queryStringsSQL(t, c, "SHOW PROCESSLIST") {
				if r[0] == id {
					return false
				}
			}
			return true
		})
		for range 3 {
			c3 := ts.conn(t, "")
			if got := one(t, c3, "SELECT DATABASE()"); got != "main" {
				t.Errorf("DATABASE() on a new connection = %q, want main", got)
			}
		}
	})
}

func TestServer_Autocommit(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.conn(t, "")
	other := ts.conn(t, "")
	queryStringsSQL(t, c, "CREATE TABLE ac (x INTEGER)")
	count := func() string { return one(t, other, "SELECT count(*) FROM ac") }

	queryStringsSQL(t, c, "SET autocommit = 0")
	queryStringsSQL(t, c, "INSERT INTO ac VALUES (1)")
	if got := count(); got != "0" {
		t.Errorf("uncommitted insert visible to another connection: count = %s", got)
	}
	queryStringsSQL(t, c, "ROLLBACK")
	queryStringsSQL(t, c, "INSERT INTO ac VALUES (2)")
	queryStringsSQL(t, c, "COMMIT")
	if got := count(); got != "1" {
		t.Errorf("count after COMMIT = %s, want 1", got)
	}
	queryStringsSQL(t, c, "INSERT INTO ac VALUES (3)")
	queryStringsSQL(t, c, "SET autocommit = 1") // commits, as in MySQL
	if got := count(); got != "2" {
		t.Errorf("count after SET autocommit = 1: %s, want 2", got)
	}
	queryStringsSQL(t, c, "START TRANSACTION")
	queryStringsSQL(t, c, "INSERT INTO ac VALUES (4)")
	queryStringsSQL(t, c, "BEGIN") // commits the open transaction
	queryStringsSQL(t, c, "INSERT INTO ac VALUES (5)")
	queryStringsSQL(t, c, "ROLLBACK")
	if got := count(); got != "3" {
		t.Errorf("count after BEGIN inside a transaction: %s, want 3", got)
	}
	queryStringsSQL(t, c, "COMMIT") // nothing open: not an error
	if got := one(t, c, "SELECT @@autocommit"); got != "1" {
		t.Errorf("@@autocommit = %s, want 1", got)
	}

	t.Run("go-sql-driver transactions", func(t *testing.T) {
		db := ts.open(t, "")
		tx, err := db.Begin()
		if err != nil {
			t.Fatalf("begin: %v", err)
		}
		if _, err := tx.Exec("INSERT INTO ac VALUES (?)", 6); err != nil {
			t.Fatalf("insert: %v", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatalf("rollback: %v", err)
		}
		if got := count(); got != "3" {
			t.Errorf("count after rollback = %s, want 3", got)
		}
	})
}

func TestServer_Kill(t *testing.T) {
	ts := startServer(t, Options{})
	victim := ts.conn(t, "")
	killer := ts.conn(t, "")
	id := one(t, victim, "SELECT CONNECTION_ID()")

	errc := make(chan error, 1)
	go func() {
		_, err := victim.ExecContext(context.Background(), "SELECT count(*) FROM range(1000000000000)")
		errc <- err
	}()
	waitFor(t, 5*time.Second, "the long query to start", func() bool {
		for _, r := range queryStringsSQL(t, killer, "SHOW PROCESSLIST") {
			if r[0] == id && r[4] == "Query" {
				return true
			}
		}
		return false
	})
	queryStringsSQL(t, killer, "KILL QUERY "+id)
	select {
	case err := <-errc:
		if got := mysqlErrNum(err); got != 1317 {
			t.Errorf("killed query returned %v, want error 1317", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("KILL QUERY did not stop the query")
	}
	if got := one(t, victim, "SELECT 42"); got != "42" {
		t.Errorf("victim after KILL QUERY: %s", got)
	}
	_, err := killer.ExecContext(context.Background(), "KILL 999999")
	if got := mysqlErrNum(err); got != 1094 {
		t.Errorf("KILL of an unknown id: %v, want 1094", err)
	}
}
