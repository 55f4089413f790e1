package mysqlwire

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// duckDDL is the DDL DuckDB keeps for a table.
func duckDDL(t *testing.T, c *sql.Conn, table string) string {
	t.Helper()
	var ddl string
	if err := c.QueryRowContext(context.Background(), `SELECT "sql" FROM duckdb_tables() WHERE table_name = ?`, table).Scan(&ddl); err != nil {
		t.Fatalf("DDL of %s: %v", table, err)
	}
	return ddl
}

func execAll(t *testing.T, c *sql.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestMySQLDDL_CreateTable(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.conn(t, "")
	tests := []struct {
		name, sql, table, want string
	}{{
		name:  "mysqldump",
		table: "t1",
		sql: "CREATE TABLE `t1` (\n" +
			"  `id` int(11) NOT NULL AUTO_INCREMENT,\n" +
			"  `flag` tinyint(1) NOT NULL DEFAULT '0',\n" +
			"  `small` smallint(5) unsigned DEFAULT NULL,\n" +
			"  `amount` decimal(12,3) NOT NULL DEFAULT 0.000,\n" +
			"  `name` varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT 'it''s',\n" +
			"  `body` mediumtext COMMENT 'the body',\n" +
			"  `raw` varbinary(16) DEFAULT NULL,\n" +
			"  `made` datetime(6) NOT NULL DEFAULT current_timestamp(6),\n" +
			"  `seen` timestamp NULL DEFAULT NULL ON UPDATE current_timestamp(),\n" +
			"  `kind` enum('a','b c') NOT NULL,\n" +
			"  `doc` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`doc`)),\n" +
			"  `y` year(4) DEFAULT NULL,\n" +
			"  `u` uuid DEFAULT NULL,\n" +
			"  PRIMARY KEY (`id`),\n" +
			"  UNIQUE KEY `name_u` (`name`),\n" +
			"  KEY `made_k` (`made`,`kind`),\n" +
			"  KEY `body_prefix` (`body`(10)),\n" +
			"  FULLTEXT KEY `ft` (`body`),\n" +
			"  CONSTRAINT `positive` CHECK (`amount` >= 0)\n" +
			") ENGINE=InnoDB AUTO_INCREMENT=42 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci ROW_FORMAT=DYNAMIC COMMENT='a table'",
		want: `CREATE TABLE t1(id INTEGER DEFAULT(nextval('"t1_id_seq"')), flag BOOLEAN DEFAULT(CAST('f' AS BOOLEAN)) NOT NULL, ` +
			`small USMALLINT, amount DECIMAL(12,3) DEFAULT(0.000) NOT NULL, "name" VARCHAR DEFAULT('it''s') NOT NULL, body VARCHAR, raw BLOB, ` +
			`made TIMESTAMP DEFAULT(CAST(current_timestamp AS TIMESTAMP)) NOT NULL, seen TIMESTAMP WITH TIME ZONE, kind ENUM('a', 'b c') NOT NULL, doc JSON, y SMALLINT, u VARCHAR, ` +
			`PRIMARY KEY(id), UNIQUE("name"), CHECK((amount >= 0)));`,
	}, {
		name:  "DuckDB DDL runs as written",
		table: "t2",
		sql:   "CREATE TABLE `t2` (ts TIMESTAMP, v VARCHAR[], id INTEGER PRIMARY KEY)",
		want:  "CREATE TABLE t2(ts TIMESTAMP, v VARCHAR[], id INTEGER PRIMARY KEY);",
	}, {
		name:  "column keys and an executable comment",
		table: "t3",
		sql:   "/*!40101 CREATE TABLE IF NOT EXISTS t3 (a int primary key auto_increment, b bigint unsigned unique, c float(30), d decimal(50,2), e bit(1), f int key) */",
		want:  `CREATE TABLE t3(a INTEGER DEFAULT(nextval('"t3_a_seq"')) PRIMARY KEY, b UBIGINT UNIQUE, c DOUBLE, d DOUBLE, e BLOB, f INTEGER);`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			execAll(t, c, tt.sql)
			if got := duckDDL(t, c, tt.table); got != tt.want {
				t.Errorf("DuckDB has\n%s\nwant\n%s", got, tt.want)
			}
		})
	}

	t.Run("indexes, comments, AUTO_INCREMENT", func(t *testing.T) {
		rows := queryStringsSQL(t, c, `SELECT index_name, "sql" FROM duckdb_indexes() WHERE table_name = 't1' ORDER BY 1`)
		want := [][]string{
			{"body_prefix", "CREATE INDEX body_prefix ON t1(body);"},
			{"made_k", "CREATE INDEX made_k ON t1(made, kind);"},
		}
		if strings.Join(flatten(rows), "|") != strings.Join(flatten(want), "|") {
			t.Errorf("indexes = %q, want %q", rows, want)
		}
		rows = queryStringsSQL(t, c, "SELECT comment FROM duckdb_tables() WHERE table_name = 't1' UNION ALL SELECT comment FROM duckdb_columns() WHERE table_name = 't1' AND column_name = 'body'")
		if len(rows) != 2 || rows[0][0] != "a table" || rows[1][0] != "the body" {
			t.Errorf("comments = %q", rows)
		}
		execAll(t, c, "INSERT INTO t1 (name, kind) VALUES ('x', 'a')")
		rows = queryStringsSQL(t, c, "SELECT id, flag, made IS NOT NULL FROM t1")
		if len(rows) != 1 || rows[0][0] != "42" || rows[0][1] != "0" || rows[0][2] != "1" {
			t.Errorf("row = %q, want id 42 (AUTO_INCREMENT=42), flag 0, made set", rows)
		}
		// SHOW CREATE TABLE carries the counter on, as MySQL's table option.
		var tbl, create string
		if err := c.QueryRowContext(context.Background(), "SHOW CREATE TABLE t1").Scan(&tbl, &create); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(create, ") ENGINE=InnoDB AUTO_INCREMENT=43 DEFAULT CHARSET=") {
			t.Errorf("SHOW CREATE TABLE t1 = %s, want AUTO_INCREMENT=43 after the ENGINE", create)
		}
	})
	t.Run("an index name taken in the schema", func(t *testing.T) {
		execAll(t, c, "CREATE TABLE `t4` (`made` int, KEY `made_k` (`made`)) ENGINE=InnoDB")
		rows := queryStringsSQL(t, c, "SELECT index_name FROM duckdb_indexes() WHERE table_name = 't4'")
		if len(rows) != 1 || rows[0][0] != "t4_made_k" {
			t.Errorf("index of t4 = %q, want t4_made_k", rows)
		}
	})
	t.Run("a type quiver lacks", func(t *testing.T) {
		_, err := c.ExecContext(context.Background(), "CREATE TABLE g (p point) ENGINE=InnoDB")
		if err == nil || !strings.Contains(err.Error(), "point") {
			t.Errorf("CREATE TABLE with a point: %v, want an error naming the type", err)
		}
	})
	t.Run("a view", func(t *testing.T) {
		execAll(t, c,
			"/*!50001 CREATE VIEW `v1` AS SELECT\n 1 AS `id`,\n 1 AS `name` */",
			"/*!50001 DROP VIEW IF EXISTS `v1`*/",
			"/*!50001 CREATE ALGORITHM=UNDEFINED */\n/*!50013 DEFINER=`root`@`localhost` SQL SECURITY DEFINER */\n"+
				"/*!50001 VIEW `v1` AS select `t1`.`id` AS `id`,`t1`.`name` AS `name` from `t1` where `t1`.`id` > 0 */")
		rows := queryStringsSQL(t, c, "SELECT id, name FROM v1")
		if len(rows) != 1 || rows[0][0] != "42" || rows[0][1] != "x" {
			t.Errorf("SELECT FROM v1 = %q", rows)
		}
	})
}

func flatten(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// TestMySQLDDL_ForeignKeyChecks restores tables in a dump's order, a
// referencing table and its rows before the table it references.
func TestMySQLDDL_ForeignKeyChecks(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.conn(t, "")
	restore := []string{
		"/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */",
		"CREATE TABLE `child` (`id` int NOT NULL, `parent_id` int DEFAULT NULL, `n` int, PRIMARY KEY (`id`), KEY `fk_parent` (`parent_id`), KEY `by_n` (`n`), " +
			"CONSTRAINT `fk_parent` FOREIGN KEY (`parent_id`) REFERENCES `parent` (`id`) ON DELETE CASCADE) ENGINE=InnoDB COMMENT='kids'",
		"INSERT INTO `child` VALUES (1,1,10),(2,2,20),(3,NULL,30)",
		"CREATE TABLE parent (id INTEGER PRIMARY KEY, name VARCHAR)", // DuckDB's own DDL
		"INSERT INTO `parent` VALUES (1,'p'),(2,'q')",
	}
	execAll(t, c, restore...)
	if got := duckDDL(t, c, "child"); strings.Contains(got, "FOREIGN KEY") {
		t.Errorf("with foreign_key_checks=0, child was created with its foreign key: %s", got)
	}
	execAll(t, c, "/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */")
	want := "CREATE TABLE child(id INTEGER, parent_id INTEGER, n INTEGER, PRIMARY KEY(id), FOREIGN KEY (parent_id) REFERENCES parent(id));"
	if got := duckDDL(t, c, "child"); got != want {
		t.Errorf("after foreign_key_checks=1, child is\n%s\nwant\n%s", got, want)
	}
	// KEY fk_parent is InnoDB's index for the foreign key: DuckDB's
	// foreign key needs none.
	rows := queryStringsSQL(t, c, "SELECT (SELECT count(*) FROM child), (SELECT string_agg(index_name) FROM duckdb_indexes() WHERE table_name = 'child'), (SELECT comment FROM duckdb_tables() WHERE table_name = 'child')")
	if rows[0][0] != "3" || rows[0][1] != "by_n" || rows[0][2] != "kids" {
		t.Errorf("child after its rebuild: rows, indexes, comment = %q, want 3, by_n, kids", rows)
	}
	if _, err := c.ExecContext(context.Background(), "INSERT INTO child VALUES (4, 9, 40)"); err == nil {
		t.Errorf("the foreign key lets an orphan in")
	}

	t.Run("rows that break it", func(t *testing.T) {
		execAll(t, c, "SET foreign_key_checks = 0",
			"CREATE TABLE `orphan` (`id` int, `parent_id` int, FOREIGN KEY (`parent_id`) REFERENCES `parent` (`id`)) ENGINE=InnoDB",
			"INSERT INTO orphan VALUES (1, 99)")
		_, err := c.ExecContext(context.Background(), "SET foreign_key_checks = 1")
		if mysqlErrNum(err) != 1215 || !strings.Contains(err.Error(), "orphan") {
			t.Errorf("SET foreign_key_checks = 1 with an orphan row: %v, want error 1215 naming the table", err)
		}
		if got := duckDDL(t, c, "orphan"); strings.Contains(got, "FOREIGN KEY") {
			t.Errorf("orphan has a foreign key its rows break: %s", got)
		}
	})
}

func TestMySQLDDL_Databases(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.conn(t, "")
	execAll(t, c,
		"CREATE TABLE main.keep (id INTEGER)",
		"CREATE DATABASE /*!32312 IF NOT EXISTS*/ `restored` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */",
		"ALTER DATABASE `restored` CHARACTER SET utf8mb4",
		"USE `restored`",
		// MySQL looks keep up in restored only: main.keep must stay.
		"DROP TABLE IF EXISTS `keep`",
		"CREATE TABLE `keep` (`id` int) ENGINE=InnoDB",
		"/*!40000 ALTER TABLE `keep` DISABLE KEYS */",
		"INSERT INTO keep VALUES (1)",
		"/*!40000 ALTER TABLE `keep` ENABLE KEYS */",
		"DROP TABLE `keep`, `main`.`keep`",
		"CREATE TABLE main.keep (id INTEGER)",
		"USE main",
		"DROP DATABASE `restored`",
	)
	rows := queryStringsSQL(t, c, "SELECT count(*) FROM duckdb_schemas() WHERE schema_name = 'restored'")
	if rows[0][0] != "0" {
		t.Errorf("DROP DATABASE left the schema")
	}
	if _, err := c.ExecContext(context.Background(), "ALTER TABLE nosuch DISABLE KEYS"); mysqlErrNum(err) != 1146 {
		t.Errorf("ALTER TABLE nosuch DISABLE KEYS: %v, want error 1146", err)
	}
}

func TestMySQLTypeToDuck(t *testing.T) {
	tests := map[string]string{
		"tinyint(1)": "BOOLEAN", "tinyint(4)": "TINYINT", "tinyint unsigned": "UTINYINT", "bool": "BOOLEAN",
		"smallint": "SMALLINT", "mediumint unsigned": "UINTEGER", "int(11)": "INTEGER", "integer unsigned": "UINTEGER",
		"bigint(20)": "BIGINT", "bigint unsigned": "UBIGINT", "decimal(10,2)": "DECIMAL(10,2)", "numeric": "DECIMAL(10,0)",
		"decimal(65,30)": "DOUBLE", "float": "REAL", "float(10,2)": "REAL", "float(53)": "DOUBLE", "double": "DOUBLE",
		"real": "DOUBLE", "char(36)": "VARCHAR", "varchar(255)": "VARCHAR", "tinytext": "VARCHAR", "longtext": "VARCHAR",
		"json": "JSON", "binary(16)": "BLOB", "varbinary(8)": "BLOB", "blob": "BLOB", "longblob": "BLOB",
		"date": "DATE", "time(6)": "TIME", "datetime": "TIMESTAMP", "datetime(6)": "TIMESTAMP",
		"timestamp": "TIMESTAMPTZ", "timestamp(6)": "TIMESTAMPTZ", "year": "SMALLINT", "set('a','b')": "VARCHAR",
		"enum('x','it''s')": "ENUM('x', 'it''s')",
	}
	for mysqlType, want := range tests {
		d, ok := parseMySQLDDL("CREATE TABLE t (c " + mysqlType + ")")
		if !ok {
			t.Errorf("%s: vitess cannot parse it", mysqlType)
			continue
		}
		got, err := mysqlTypeToDuck(&d.TableSpec.Columns[0].Type, false)
		if err != nil || got != want {
			t.Errorf("%s = %s, %v; want %s", mysqlType, got, err, want)
		}
	}
	// vitess's column key options, whose constants ddl.go repeats.
	d, _ := parseMySQLDDL("CREATE TABLE t (a int primary key, b int unique key, c int key)")
	for i, want := range []sqlparser.ColumnKeyOption{colKeyPrimary, colKeyUniqueKey, colKeyIndex} {
		if got := d.TableSpec.Columns[i].Type.KeyOpt; got != want {
			t.Errorf("key option of column %d = %d, want %d", i, got, want)
		}
	}
}

func TestExecComments(t *testing.T) {
	tests := map[string]string{
		"/*!40101 SET NAMES utf8 */":                             "  SET NAMES utf8  ",
		"START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */": "START TRANSACTION   WITH CONSISTENT SNAPSHOT  ",
		"/*!99999 SET x=1 */ SELECT 1":                           "  SELECT 1",
		"/*M!100616 SET @a=1 */ /* plain */ /*! SET b=2 */":      "      SET b=2  ",
		"SELECT '/*!40101 not a comment */', `/*!1*/`":           "SELECT '/*!40101 not a comment */', `/*!1*/`",
		"SELECT 1 -- /*!40101 x */\n":                            "SELECT 1 -- /*!40101 x */\n",
		"/*!40101 SET x='*/' */":                                 "  SET x='*/'  ",
		"/*!40101 unterminated":                                  "  unterminated",
	}
	for in, want := range tests {
		if got := execComments(in); got != want {
			t.Errorf("execComments(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRewriteLiterals_Backslash(t *testing.T) {
	blobAt := func(i int) bool { return i == 28 || i == 33 }
	tests := []struct {
		in, want string
		blob     func(int) bool
	}{
		{`SELECT 'plain', 'it''s'`, `SELECT 'plain', 'it''s'`, nil},
		{`SELECT 'it\'s', 'a\nb', 'c:\\x'`, "SELECT 'it''s', 'a\nb', 'c:\\x'", nil},
		{`SELECT 'nul\0here', _binary'\0\\'`, `SELECT ('nul' || chr(0) || 'here'), from_hex('005c')`, nil},
		{"SELECT '\xff\\'' FROM `t`", `SELECT from_hex('ff27') FROM "t"`, nil},
		{`INSERT INTO t VALUES (1,'a','\\',0x00FF,'x')`, `INSERT INTO t VALUES (1,'a',from_hex('5c'),from_hex('00FF'),'x')`, blobAt},
		{`SELECT E'\n', X'41'`, `SELECT E'\n', 'A'`, nil},
	}
	for _, tt := range tests {
		if got := rewriteLiterals(tt.in, quoteBackslash, tt.blob); got != tt.want {
			t.Errorf("rewriteLiterals(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSplitStatements_Backslash(t *testing.T) {
	sql := `INSERT INTO t VALUES ('it\'s; ok'),('\\'); SELECT 'a\\'; SELECT 2`
	got := splitStatements(sql, quoteBackslash)
	want := []string{`INSERT INTO t VALUES ('it\'s; ok'),('\\')`, ` SELECT 'a\\'`, ` SELECT 2`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("splitStatements = %q, want %q", got, want)
	}
}

func TestReadValues(t *testing.T) {
	cols := []tableColumn{{"n", kindNumber}, {"s", kindText}, {"b", kindBlob}}
	rec, ok := readValues(` (1,'it\'s',_binary '\0\\'), (-2.5e3, X'41', 0x00FF) ,(NULL,NULL,'x');`, quoteBackslash, cols)
	if !ok {
		t.Fatal("readValues refused the rows")
	}
	defer rec.Release()
	var got []string
	for i := 0; i < int(rec.NumRows()); i++ {
		var row []string
		for _, col := range rec.Columns() {
			row = append(row, col.ValueStr(i))
		}
		got = append(got, strings.Join(row, ","))
	}
	want := []string{`1,it's,AFw=`, `-2.5e3,A,AP8=`, `(null),(null),eA==`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows = %q, want %q", got, want)
	}
	for _, bad := range []string{`(1,'a','b'),(now(),'a','b')`, `(1,'a')`, `(1,'a','b') ON DUPLICATE KEY UPDATE n=1`, `(0x41,'a','b')`, `(1,'a','b'),`} {
		if rec, ok := readValues(bad, quoteBackslash, cols); ok {
			rec.Release()
			t.Errorf("readValues(%q) took it; want the ordinary path", bad)
		}
	}
}
