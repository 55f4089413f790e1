package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// shopFixture has a column default of every kind, keys of every kind, a
// check, comments and a view.
const shopFixture = `CREATE TABLE parent (id INTEGER PRIMARY KEY);
CREATE SEQUENCE shop_seq;
CREATE TABLE shop (
  id INTEGER PRIMARY KEY DEFAULT nextval('shop_seq'),
  code VARCHAR NOT NULL UNIQUE,
  name VARCHAR DEFAULT 'it''s a \ b',
  qty SMALLINT NOT NULL DEFAULT 1,
  price DECIMAL(10,2) DEFAULT 3,
  ok BOOLEAN DEFAULT true,
  created TIMESTAMP DEFAULT current_timestamp,
  day DATE DEFAULT current_date,
  expr INTEGER DEFAULT (1 + 2),
  seen TIMESTAMPTZ,
  note VARCHAR CHECK (length(note) < 100),
  label VARCHAR DEFAULT 'x',
  parent_id INTEGER REFERENCES parent (id));
CREATE INDEX shop_name_qty ON shop (name, qty);
COMMENT ON TABLE shop IS 'the shop';
COMMENT ON COLUMN shop.qty IS 'how many';
CREATE VIEW shop_view AS SELECT id, "name" FROM shop`

// shopCreate is SHOW CREATE TABLE shop with backquotes and backslash
// escapes, for a client that emptied its sql_mode.
const shopCreate = "CREATE TABLE `shop` (\n" +
	"  `id` int NOT NULL AUTO_INCREMENT,\n" +
	"  `code` varchar(255) NOT NULL,\n" +
	"  `name` varchar(255) DEFAULT 'it''s a \\\\ b',\n" +
	"  `qty` smallint NOT NULL DEFAULT '1' COMMENT 'how many',\n" +
	"  `price` decimal(10,2) DEFAULT '3.00',\n" +
	"  `ok` tinyint(1) DEFAULT '1',\n" +
	"  `created` datetime(6) DEFAULT CURRENT_TIMESTAMP(6),\n" +
	"  `day` date DEFAULT (curdate()),\n" +
	"  `expr` int DEFAULT ((1 + 2)),\n" +
	"  `seen` timestamp(6) NULL DEFAULT NULL,\n" +
	"  `note` longtext,\n" +
	"  `label` longtext DEFAULT (_utf8mb4'x'),\n" +
	"  `parent_id` int DEFAULT NULL,\n" +
	"  PRIMARY KEY (`id`),\n" +
	"  UNIQUE KEY `shop_code_key` (`code`),\n" +
	"  KEY `shop_name_qty` (`name`,`qty`),\n" +
	"  KEY `shop_parent_id_id_fkey` (`parent_id`),\n" +
	"  CONSTRAINT `shop_parent_id_id_fkey` FOREIGN KEY (`parent_id`) REFERENCES `parent` (`id`),\n" +
	"  CONSTRAINT `shop_note_check` CHECK ((length(note) < 100))\n" +
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci COMMENT='the shop'"

// shopConn starts a server, creates shopFixture and returns a connection.
func shopConn(t *testing.T) *sql.Conn {
	t.Helper()
	ts := startServer(t, Options{})
	c := ts.conn(t, "multiStatements=true")
	if _, err := c.ExecContext(context.Background(), shopFixture); err != nil {
		t.Fatalf("create fixture: %v", err)
	}
	return c
}

// showCreate returns the two columns of SHOW CREATE TABLE or VIEW.
func showCreate(t *testing.T, c *sql.Conn, stmt string) (name, create string) {
	t.Helper()
	rows := queryStringsSQL(t, c, stmt)
	if len(rows) != 1 || len(rows[0]) < 2 {
		t.Fatalf("%s: got %q", stmt, rows)
	}
	return rows[0][0], rows[0][1]
}

func TestServer_ShowCreateTable(t *testing.T) {
	c := shopConn(t)
	ctx := context.Background()

	t.Run("ANSI_QUOTES and NO_BACKSLASH_ESCAPES, quiver's sql_mode", func(t *testing.T) {
		_, got := showCreate(t, c, "SHOW CREATE TABLE shop")
		want := strings.ReplaceAll(strings.ReplaceAll(shopCreate, "`", `"`), `\\`, `\`)
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("sql_mode=''", func(t *testing.T) {
		c := shopConn(t)
		if _, err := c.ExecContext(ctx, "SET sql_mode = ''"); err != nil {
			t.Fatal(err)
		}
		if _, got := showCreate(t, c, "SHOW CREATE TABLE `main`.`shop`"); got != shopCreate {
			t.Errorf("got\n%s\nwant\n%s", got, shopCreate)
		}
		name, got := showCreate(t, c, "SHOW CREATE VIEW shop_view")
		want := "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `shop_view` AS SELECT id, `name` FROM shop"
		if name != "shop_view" || got != want {
			t.Errorf("got %s %s\nwant shop_view %s", name, got, want)
		}
	})
	t.Run("a view", func(t *testing.T) {
		rows, err := c.QueryContext(ctx, "SHOW CREATE TABLE shop_view")
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		rows.Close()
		if got, want := strings.Join(cols, ","), "View,Create View,character_set_client,collation_connection"; got != want {
			t.Errorf("columns %s, want %s", got, want)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for stmt, want := range map[string]uint16{
			"SHOW CREATE TABLE no_such_table": 1146, "SHOW CREATE VIEW shop": 1347,
			"SHOW COLUMNS FROM no_such_table": 1146, "SHOW INDEX FROM no_such_table": 1146,
		} {
			_, err := c.ExecContext(ctx, stmt)
			if got := mysqlErrNum(err); got != want {
				t.Errorf("%s: error %v, want %d", stmt, err, want)
			}
		}
	})
}

// everyTypeColumns is what SHOW CREATE TABLE says of the columns of
// everyType, in order.
var everyTypeColumns = []string{"tinyint(1) DEFAULT NULL", "tinyint DEFAULT NULL", "smallint DEFAULT NULL", "int DEFAULT NULL",
	"bigint DEFAULT NULL", "tinyint unsigned DEFAULT NULL", "smallint unsigned DEFAULT NULL", "int unsigned DEFAULT NULL",
	"bigint unsigned DEFAULT NULL", "decimal(38,0) DEFAULT NULL", "decimal(38,0) DEFAULT NULL", "float DEFAULT NULL",
	"double DEFAULT NULL", "decimal(18,4) DEFAULT NULL", "decimal(4,1) DEFAULT NULL", "longtext", "longblob", "longblob",
	"longblob", "date DEFAULT NULL", "time(6) DEFAULT NULL", "time(6) DEFAULT NULL", "datetime(6) DEFAULT NULL",
	"datetime DEFAULT NULL", "datetime(3) DEFAULT NULL", "datetime(6) DEFAULT NULL", "timestamp(6) NULL DEFAULT NULL",
	"longtext", "char(36) DEFAULT NULL", "json DEFAULT NULL", "json DEFAULT NULL", "json DEFAULT NULL", "json DEFAULT NULL",
	"json DEFAULT NULL", "enum('x','y') DEFAULT NULL", "longtext", "json DEFAULT NULL", "json DEFAULT NULL"}

func TestServer_ShowCreateTableEveryType(t *testing.T) {
	ts := startServer(t, Options{})
	c := ts.conn(t, "multiStatements=true")
	queryStringsSQL(t, c, everyTypeSQL("every_type"))
	if _, err := c.ExecContext(context.Background(), "SET sql_mode = 'STRICT_TRANS_TABLES'"); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i, col := range everyTypeColumns {
		lines = append(lines, fmt.Sprintf("  `c%d` %s", i, col))
	}
	want := "CREATE TABLE `every_type` (\n" + strings.Join(lines, ",\n") + "\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
	if _, got := showCreate(t, c, "SHOW CREATE TABLE every_type"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// SHOW COLUMNS says the same types.
	rows := queryStringsSQL(t, c, "SHOW COLUMNS FROM every_type")
	for i, r := range rows {
		if typ, _, _ := strings.Cut(everyTypeColumns[i], " DEFAULT"); !strings.HasPrefix(typ, r[1]) {
			t.Errorf("SHOW COLUMNS: c%d is %s, SHOW CREATE TABLE %s", i, r[1], typ)
		}
	}
}

func TestServer_ShowColumnsAndStatus(t *testing.T) {
	c := shopConn(t)
	tests := []struct{ query, want string }{
		{"SHOW COLUMNS FROM shop LIKE 'c%'",
			"code varchar(255) NO UNI NULL  | created datetime(6) YES  CURRENT_TIMESTAMP(6) DEFAULT_GENERATED"},
		{"SHOW FULL FIELDS IN shop FROM main WHERE `Key` <> ''",
			"id int NULL NO PRI NULL auto_increment select,insert,update,references  | " +
				"code varchar(255) utf8mb4_general_ci NO UNI NULL  select,insert,update,references  | " +
				"name varchar(255) utf8mb4_general_ci YES MUL it's a \\ b  select,insert,update,references  | " +
				"parent_id int NULL YES MUL NULL  select,insert,update,references "},
		{"DESC main.parent", "id int NO PRI NULL "},
		{"SHOW TABLE STATUS WHERE Engine IS NOT NULL AND Comment <> ''",
			"shop InnoDB 10 Dynamic 0 NULL NULL NULL NULL NULL NULL NULL NULL NULL utf8mb4_general_ci NULL  the shop"},
		{"SHOW TABLE STATUS LIKE 'shop%'",
			"shop InnoDB 10 Dynamic 0 NULL NULL NULL NULL NULL NULL NULL NULL NULL utf8mb4_general_ci NULL  the shop | " +
				"shop_view NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL VIEW"},
		{"SELECT COLUMN_NAME, COLUMN_DEFAULT, EXTRA FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = 'shop' AND COLUMN_DEFAULT IS NOT NULL ORDER BY ORDINAL_POSITION",
			"name it's a \\ b  | qty 1  | price 3.00  | ok 1  | created CURRENT_TIMESTAMP(6) DEFAULT_GENERATED | " +
				"day curdate() DEFAULT_GENERATED | expr (1 + 2) DEFAULT_GENERATED | label x "},
		{"SELECT CONSTRAINT_NAME, CHECK_CLAUSE FROM INFORMATION_SCHEMA.CHECK_CONSTRAINTS", "shop_note_check (length(note) < 100)"},
		{"SELECT TABLE_NAME, VIEW_DEFINITION, DEFINER, SECURITY_TYPE FROM INFORMATION_SCHEMA.VIEWS",
			`shop_view SELECT id, "name" FROM shop root@localhost DEFINER`},
		{"SELECT TABLE_NAME, PARTITION_NAME, TABLE_ROWS FROM INFORMATION_SCHEMA.PARTITIONS WHERE TABLE_SCHEMA = 'main' ORDER BY 1",
			"parent NULL 0 | shop NULL 0"},
		// What mysqldump asks before it dumps anything.
		{"SELECT LOGFILE_GROUP_NAME, FILE_NAME, TOTAL_EXTENTS, INITIAL_SIZE, ENGINE, EXTRA FROM INFORMATION_SCHEMA.FILES " +
			"WHERE FILE_TYPE = 'UNDO LOG' AND FILE_NAME IS NOT NULL AND LOGFILE_GROUP_NAME IS NOT NULL AND LOGFILE_GROUP_NAME IN " +
			"(SELECT DISTINCT LOGFILE_GROUP_NAME FROM INFORMATION_SCHEMA.FILES WHERE FILE_TYPE = 'DATAFILE' AND TABLESPACE_NAME IN " +
			"(SELECT DISTINCT TABLESPACE_NAME FROM INFORMATION_SCHEMA.PARTITIONS WHERE TABLE_SCHEMA IN ('main'))) " +
			"GROUP BY LOGFILE_GROUP_NAME, FILE_NAME, ENGINE, TOTAL_EXTENTS, INITIAL_SIZE ORDER BY LOGFILE_GROUP_NAME", ""},
		{"SELECT TRIGGER_NAME FROM INFORMATION_SCHEMA.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'shop'", ""},
		{"SELECT count(*) FROM INFORMATION_SCHEMA.ROUTINES", "0"},
		{"SHOW ENGINES", "InnoDB DEFAULT DuckDB tables: transactions, MVCC, no row locks YES NO NO"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if got := rowsText(queryStringsSQL(t, c, tt.query)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSequenceOf(t *testing.T) {
	cases := []struct{ in, schema, name string }{
		{`nextval('"main"."t1_id_seq"')`, "main", "t1_id_seq"},
		{`nextval('t1_id_seq')`, "", "t1_id_seq"},
		{`nextval('s.q')`, "s", "q"},
		{`nextval('"a""b"."c.d"')`, `a"b`, "c.d"},
		{`nextval('db.s.q')`, "s", "q"},
	}
	for _, tc := range cases {
		s, n, ok := sequenceOf(tc.in)
		if !ok || s != tc.schema || n != tc.name {
			t.Errorf("sequenceOf(%s) = %q, %q, %v; want %q, %q", tc.in, s, n, ok, tc.schema, tc.name)
		}
	}
	for _, bad := range []string{`now()`, `nextval('"unterminated')`, `nextval('a.b.c.d')`} {
		if _, _, ok := sequenceOf(bad); ok {
			t.Errorf("sequenceOf(%s) ok", bad)
		}
	}
}
