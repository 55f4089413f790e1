package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// infoSchemaFixture is the catalog the INFORMATION_SCHEMA tests read: keys
// of every kind, an index, a view and a second schema.
const infoSchemaFixture = `CREATE TABLE parent (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, amount DECIMAL(10,2), code VARCHAR UNIQUE);
CREATE INDEX parent_name_amount ON parent (name, amount);
CREATE INDEX parent_expr ON parent ((amount + 1));
CREATE TABLE child (id BIGINT, parent_id INTEGER REFERENCES parent (id), PRIMARY KEY (id));
CREATE VIEW parent_view AS SELECT id, name FROM parent;
CREATE TABLE "back\slash" (x INTEGER);
CREATE SCHEMA other;
CREATE TABLE other.pair (a INTEGER, b INTEGER, PRIMARY KEY (a, b))`

// infoSchemaConn starts a server, creates infoSchemaFixture and returns a
// connection to it.
func infoSchemaConn(t *testing.T) *sql.Conn {
	t.Helper()
	ts := startServer(t, Options{})
	c := ts.conn(t, "multiStatements=true")
	if _, err := c.ExecContext(context.Background(), infoSchemaFixture); err != nil {
		t.Fatalf("create fixture: %v", err)
	}
	return c
}

// queryColumns runs query and returns the named columns of its rows as
// strings ("NULL" for NULL).
func queryColumns(t *testing.T, c *sql.Conn, query string, names ...string) [][]string {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%.80s…: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	idx := make([]int, len(names))
	for i, name := range names {
		idx[i] = -1
		for j, col := range cols {
			if strings.EqualFold(col, name) {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			t.Fatalf("%.80s…: no column %s in %v", query, name, cols)
		}
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%.80s…: scan: %v", query, err)
		}
		row := make([]string, len(names))
		for i, j := range idx {
			row[i] = "NULL"
			if vals[j].Valid {
				row[i] = vals[j].String
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%.80s…: %v", query, err)
	}
	return out
}

// rowsText renders rows for comparison: cells joined by spaces, rows by
// " | ".
func rowsText(rows [][]string) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = strings.Join(r, " ")
	}
	return strings.Join(lines, " | ")
}

func TestServer_InfoSchemaConnectorJ(t *testing.T) {
	c := infoSchemaConn(t)
	tests := []struct {
		name  string
		query string
		cols  []string
		want  string
	}{
		{"getTables", cjGetTables, []string{"TABLE_CAT", "TABLE_NAME", "TABLE_TYPE", "REMARKS"},
			"main parent TABLE "},
		{"getTables any type", cjGetTablesAnyType, []string{"TABLE_CAT", "TABLE_NAME", "TABLE_TYPE"},
			"main back\\slash TABLE | main child TABLE | main parent TABLE | main parent_view VIEW"},
		// INFORMATION_SCHEMA itself is not listed: Connector/J falls back
		// to @@collation_connection.
		{"schema collation", cjSchemaCollation, []string{"DEFAULT_COLLATION_NAME"}, ""},
		{"getColumns", cjGetColumns,
			[]string{"COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE", "ORDINAL_POSITION", "IS_NULLABLE", "IS_AUTOINCREMENT"},
			"id 4 INT 10 NULL 0 1 NO NO | name 12 VARCHAR 255 NULL 0 2 NO NO | amount 3 DECIMAL 10 2 1 3 YES NO | code 12 VARCHAR 255 NULL 1 4 YES NO"},
		{"getPrimaryKeys", cjGetPrimaryKeys, []string{"TABLE_CAT", "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME"},
			"main parent id 1 PRIMARY"},
		{"getImportedKeys", cjGetImportedKeys,
			[]string{"PKTABLE_CAT", "PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ", "UPDATE_RULE", "DELETE_RULE", "FK_NAME", "PK_NAME"},
			"main parent id child parent_id 1 1 1 child_parent_id_id_fkey PRIMARY"},
		// Connector/J joins every unique key of the parent table, so a
		// table with a primary key and a UNIQUE one gives two rows, as on
		// MySQL. Its ORDER BY ties on them, so their order is unspecified
		// and the test compares them sorted.
		{"getExportedKeys", cjGetExportedKeys, []string{"PKTABLE_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ", "PK_NAME"},
			"parent child parent_id 1 PRIMARY | parent child parent_id 1 parent_code_key"},
		{"getCrossReference", cjGetCrossReference, []string{"PKTABLE_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "PK_NAME"},
			"parent child parent_id PRIMARY | parent child parent_id parent_code_key"},
		{"getIndexInfo", cjGetIndexInfo, []string{"NON_UNIQUE", "INDEX_NAME", "ORDINAL_POSITION", "COLUMN_NAME", "ASC_OR_DESC"},
			"0 PRIMARY 1 id A | 0 parent_code_key 1 code A | 1 parent_name_amount 1 name A | 1 parent_name_amount 2 amount A"},
		{"getIndexInfo unique", cjGetIndexInfoUnique, []string{"NON_UNIQUE", "INDEX_NAME", "COLUMN_NAME"},
			"0 PRIMARY id | 0 parent_code_key code"},
		{"getSchemas", cjGetSchemas, []string{"TABLE_SCHEM"}, ""},
		{"getCatalogs", cjGetCatalogs, []string{"TABLE_CAT"}, "main | other"},
		{"getBestRowIdentifier", cjGetBestRowIdentifier, []string{"SCOPE", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME"},
			"2 id 4 INT"},
	}
	// Queries whose ORDER BY leaves the result rows' order open.
	tiedOrder := map[string]bool{"getExportedKeys": true, "getCrossReference": true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := queryColumns(t, c, tt.query, tt.cols...)
			if tiedOrder[tt.name] {
				slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(strings.Join(a, " "), strings.Join(b, " ")) })
			}
			if got := rowsText(rows); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestServer_InfoSchemaTables(t *testing.T) {
	c := infoSchemaConn(t)
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"SCHEMATA", "SELECT CATALOG_NAME, SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM INFORMATION_SCHEMA.SCHEMATA ORDER BY 2",
			"def main utf8mb4 utf8mb4_general_ci | def other utf8mb4 utf8mb4_general_ci"},
		{"TABLES", "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_COMMENT FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME LIKE 'p%' ORDER BY 3",
			"def other pair BASE TABLE InnoDB  | def main parent BASE TABLE InnoDB  | def main parent_view VIEW NULL VIEW"},
		{"COLUMNS", "SELECT COLUMN_NAME, ORDINAL_POSITION, IS_NULLABLE, DATA_TYPE, COLUMN_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, COLUMN_KEY " +
			"FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = 'main' AND TABLE_NAME = 'parent' ORDER BY ORDINAL_POSITION",
			// name and code are in keys: varchar(255), as MySQL keys hold no longtext.
			"id 1 NO int int NULL 10 0 PRI | name 2 NO varchar varchar(255) 255 NULL NULL MUL | " +
				"amount 3 YES decimal decimal(10,2) NULL 10 2  | code 4 YES varchar varchar(255) 255 NULL NULL UNI"},
		{"COLUMNS of a view", "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_KEY FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = 'parent_view' ORDER BY ORDINAL_POSITION",
			"parent_view id  | parent_view name "},
		{"STATISTICS", "SELECT TABLE_NAME, NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NULLABLE FROM INFORMATION_SCHEMA.STATISTICS " +
			"WHERE TABLE_SCHEMA = 'other' OR TABLE_NAME = 'child' ORDER BY 1, 3, 4",
			// The foreign key's index, named after it, as InnoDB makes one.
			"child 0 PRIMARY 1 id  | child 1 child_parent_id_id_fkey 1 parent_id YES | pair 0 PRIMARY 1 a  | pair 0 PRIMARY 2 b "},
		{"TABLE_CONSTRAINTS", "SELECT CONSTRAINT_SCHEMA, CONSTRAINT_NAME, TABLE_NAME, CONSTRAINT_TYPE FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS ORDER BY 3, 2",
			"main PRIMARY child PRIMARY KEY | main child_parent_id_id_fkey child FOREIGN KEY | other PRIMARY pair PRIMARY KEY | " +
				"main PRIMARY parent PRIMARY KEY | main parent_code_key parent UNIQUE"},
		{"KEY_COLUMN_USAGE", "SELECT CONSTRAINT_NAME, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, POSITION_IN_UNIQUE_CONSTRAINT, " +
			"REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE " +
			"WHERE TABLE_NAME IN ('child', 'pair') ORDER BY 2, 1, 4",
			"PRIMARY child id 1 NULL NULL NULL NULL | child_parent_id_id_fkey child parent_id 1 1 main parent id | " +
				"PRIMARY pair a 1 NULL NULL NULL NULL | PRIMARY pair b 2 NULL NULL NULL NULL"},
		{"REFERENTIAL_CONSTRAINTS", "SELECT CONSTRAINT_NAME, UNIQUE_CONSTRAINT_NAME, UPDATE_RULE, DELETE_RULE, TABLE_NAME, REFERENCED_TABLE_NAME " +
			"FROM INFORMATION_SCHEMA.REFERENTIAL_CONSTRAINTS",
			"child_parent_id_id_fkey PRIMARY NO ACTION NO ACTION child parent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rowsText(queryStringsSQL(t, c, tt.query)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestServer_InfoSchemaDialect runs MySQL spellings of queries over
// INFORMATION_SCHEMA that DuckDB reads differently or not at all.
func TestServer_InfoSchemaDialect(t *testing.T) {
	c := infoSchemaConn(t)
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"HAVING names an alias before a column",
			"SELECT TABLE_NAME, CASE WHEN TABLE_TYPE = 'VIEW' THEN 'V' ELSE 'T' END AS TABLE_TYPE FROM INFORMATION_SCHEMA.TABLES " +
				"WHERE TABLE_SCHEMA = 'main' HAVING TABLE_TYPE = 'V' OR TABLE_NAME = 'child' ORDER BY 1",
			"child T | parent_view V"},
		{"HAVING with an aggregate stays",
			"SELECT count(*) AS n FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'main' HAVING n > 1", "4"},
		{"the table's name as its alias",
			"SELECT TABLES.TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE INFORMATION_SCHEMA.TABLES.TABLE_NAME = 'child'", "child"},
		{"backticks, lower case and DATABASE()",
			"SELECT `table_name` FROM `information_schema`.`tables` WHERE `table_schema` = DATABASE() AND table_name LIKE 'par%' ORDER BY 1",
			"parent | parent_view"},
		{"joins with USING",
			"SELECT t.TABLE_NAME, count(*) FROM INFORMATION_SCHEMA.TABLES t JOIN INFORMATION_SCHEMA.COLUMNS c USING (TABLE_SCHEMA, TABLE_NAME) " +
				"WHERE t.TABLE_SCHEMA = 'other' GROUP BY t.TABLE_NAME", "pair 2"},
		{"WITH and UNION",
			"WITH t AS (SELECT TABLE_NAME AS n FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'other') " +
				"SELECT n FROM t UNION ALL SELECT SCHEMA_NAME FROM INFORMATION_SCHEMA.SCHEMATA WHERE SCHEMA_NAME = 'other'",
			"pair | other"},
		{"a subquery",
			"SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = (SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'other') ORDER BY ORDINAL_POSITION",
			"a | b"},
		{"LIMIT offset, count",
			"SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = 'parent' ORDER BY ORDINAL_POSITION LIMIT 1, 2", "name | amount"},
		{"a backslash is an ordinary character",
			"SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME = 'back\\slash'", "back\\slash"},
		{"IF, LOCATE, IFNULL and COLLATE",
			"SELECT COLUMN_NAME, IF(LOCATE('(', COLUMN_TYPE) > 0, 'sized', 'plain') AS k, IFNULL(NUMERIC_PRECISION, 0) FROM INFORMATION_SCHEMA.COLUMNS " +
				"WHERE TABLE_NAME = 'parent' AND IS_NULLABLE COLLATE utf8mb4_general_ci = 'no' ORDER BY ORDINAL_POSITION",
			"id plain 10 | name sized 0"},
		{"a charset introducer",
			"SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME = _utf8mb4'child'", "child"},
		{"DuckDB's own information_schema tables run as written",
			"SELECT table_name FROM information_schema.views WHERE table_name = 'parent_view'", "parent_view"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rowsText(queryStringsSQL(t, c, tt.query)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestServer_InfoSchemaPrepared runs queries over INFORMATION_SCHEMA as
// server-side prepared statements, whose parameters DuckDB binds.
func TestServer_InfoSchemaPrepared(t *testing.T) {
	c := infoSchemaConn(t)
	tests := []struct {
		name  string
		query string
		args  []any
		want  string
	}{
		{"parameters in WHERE",
			"SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
			[]any{"other", "pair"}, "a | b"},
		{"a parameter in an alias HAVING repeats",
			"SELECT TABLE_NAME AS n, ? AS tag FROM INFORMATION_SCHEMA.TABLES HAVING tag = ? AND n = 'child'",
			[]any{"x", "x"}, "child x"},
		{"LIMIT ?",
			"SELECT SCHEMA_NAME FROM INFORMATION_SCHEMA.SCHEMATA ORDER BY 1 LIMIT ?", []any{1}, "main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := c.QueryContext(context.Background(), tt.query, tt.args...)
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			defer rows.Close()
			var got [][]string
			for rows.Next() {
				cols, _ := rows.Columns()
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatalf("scan: %v", err)
				}
				row := make([]string, len(vals))
				for i, v := range vals {
					row[i] = v.String
				}
				got = append(got, row)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("rows: %v", err)
			}
			if got := rowsText(got); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestServer_InfoSchemaColumnTypes checks the MySQL types of the tables' own
// columns, which clients read by type as well as by name.
func TestServer_InfoSchemaColumnTypes(t *testing.T) {
	c := infoSchemaConn(t)
	tests := []struct {
		table string
		want  map[string]string // column: go-sql-driver's name of its type
	}{
		{"TABLES", map[string]string{"TABLE_CATALOG": "VARCHAR", "TABLE_NAME": "VARCHAR", "VERSION": "INT",
			"TABLE_ROWS": "BIGINT", "CREATE_TIME": "DATETIME"}},
		{"COLUMNS", map[string]string{"ORDINAL_POSITION": "UNSIGNED INT", "IS_NULLABLE": "VARCHAR",
			"CHARACTER_MAXIMUM_LENGTH": "BIGINT", "NUMERIC_PRECISION": "BIGINT", "DATETIME_PRECISION": "UNSIGNED INT"}},
		{"STATISTICS", map[string]string{"NON_UNIQUE": "INT", "SEQ_IN_INDEX": "UNSIGNED INT", "CARDINALITY": "BIGINT"}},
		{"KEY_COLUMN_USAGE", map[string]string{"ORDINAL_POSITION": "UNSIGNED INT", "POSITION_IN_UNIQUE_CONSTRAINT": "UNSIGNED INT"}},
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			rows, err := c.QueryContext(context.Background(), "SELECT * FROM INFORMATION_SCHEMA."+tt.table+" LIMIT 0")
			if err != nil {
				t.Fatalf("query: %v", err)
			}
			types, err := rows.ColumnTypes()
			rows.Close()
			if err != nil {
				t.Fatalf("column types: %v", err)
			}
			got := map[string]string{}
			for _, ct := range types {
				got[ct.Name()] = ct.DatabaseTypeName()
			}
			for name, want := range tt.want {
				if got[name] != want {
					t.Errorf("%s: got %q, want %q", name, got[name], want)
				}
			}
		})
	}
}

// everyType are the DuckDB types that map to MySQL, each the type of a
// column of the table everyTypeSQL creates, c0 … cN in order.
var everyType = []string{"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
	"HUGEINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL(18,4)", "DECIMAL(4,1)", "VARCHAR", "BLOB", "BIT", "BIGNUM", "DATE", "TIME",
	"TIMETZ", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ", "INTERVAL", "UUID", "JSON",
	"INTEGER[]", "INTEGER[3]", "STRUCT(a INTEGER)", "MAP(INTEGER, VARCHAR)", "ENUM('x', 'y')", "UNION(a INTEGER, b VARCHAR)",
	"VARCHAR[]", "DECIMAL(10,2)[]"}

// everyTypeSQL creates a table with a column of each of everyType and one
// row of NULLs.
func everyTypeSQL(table string) string {
	cols := make([]string, len(everyType))
	for i, typ := range everyType {
		cols[i] = fmt.Sprintf("c%d %s", i, typ)
	}
	return "CREATE TABLE " + table + " (" + strings.Join(cols, ", ") + "); INSERT INTO " + table + " (c0) VALUES (NULL)"
}

// driverTypeNames are go-sql-driver's names of the MySQL result types a
// column of each DATA_TYPE of the catalog arrives as.
var driverTypeNames = map[string]string{
	"tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INT", "bigint": "BIGINT", "decimal": "DECIMAL", "float": "FLOAT",
	"double": "DOUBLE", "longtext": "VARCHAR", "char": "VARCHAR", "enum": "VARCHAR", "json": "JSON", "longblob": "BLOB",
	"date": "DATE", "time": "TIME", "datetime": "DATETIME", "timestamp": "TIMESTAMP",
}

// driverTypeName is go-sql-driver's name of the result type a column of
// catalog type mt arrives as.
func driverTypeName(mt *mysqlType) string {
	name := driverTypeNames[mt.dataType]
	if strings.HasSuffix(mt.columnType, " unsigned") {
		name = "UNSIGNED " + name
	}
	return name
}

// TestServer_InfoSchemaColumnsMatchResults checks that COLUMNS and a query's
// result describe a column of each DuckDB type from the one table,
// mysqlTypes: DATA_TYPE is the table's, and the result column has the
// table's type, except that the types Arrow carries as strings (UUID, JSON,
// ENUM) arrive as VARCHAR.
func TestServer_InfoSchemaColumnsMatchResults(t *testing.T) {
	c := infoSchemaConn(t)
	queryStringsSQL(t, c, everyTypeSQL("every_type"))
	rows, err := c.QueryContext(context.Background(), "SELECT * FROM every_type")
	if err != nil {
		t.Fatalf("select: %v", err)
	}
	results, err := rows.ColumnTypes()
	rows.Close()
	if err != nil {
		t.Fatalf("column types: %v", err)
	}
	meta := queryStringsSQL(t, c, "SELECT DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE FROM INFORMATION_SCHEMA.COLUMNS "+
		"WHERE TABLE_NAME = 'every_type' ORDER BY ORDINAL_POSITION")
	duck := queryStringsSQL(t, c, "SELECT data_type FROM duckdb_columns() WHERE table_name = 'every_type' ORDER BY column_index")
	if len(meta) != len(everyType) || len(duck) != len(everyType) {
		t.Fatalf("COLUMNS has %d rows, duckdb_columns %d, want %d", len(meta), len(duck), len(everyType))
	}
	for i, typ := range everyType {
		key := duckKey(duck[i][0])
		mt := mysqlTypeOf(key)
		dataType, columnType := meta[i][0], meta[i][1]
		if dataType != mt.dataType {
			t.Errorf("%s: COLUMNS says %s (%s), mysqlTypes %s", typ, dataType, columnType, mt.dataType)
		}
		want := driverTypeName(mt)
		if duck[i][0] == "UUID" || duck[i][0] == "JSON" || key == keyEnum {
			want = "VARCHAR" // a string in Arrow
		}
		if got := results[i].DatabaseTypeName(); got != want {
			t.Errorf("%s: the result column is %s, want %s (COLUMNS says %s)", typ, got, want, columnType)
		}
		if dataType != "decimal" {
			continue
		}
		p, s, _ := results[i].DecimalSize()
		if got, want := meta[i][2]+","+meta[i][3], fmt.Sprintf("%d,%d", p, s); got != want {
			t.Errorf("%s: COLUMNS precision,scale = %s, the result column's = %s", typ, got, want)
		}
	}
}

func TestServer_ShowKeys(t *testing.T) {
	c := infoSchemaConn(t)
	tests := []struct {
		query string
		want  string
	}{
		{"SHOW KEYS FROM parent",
			"parent 0 PRIMARY 1 id  | parent 0 parent_code_key 1 code YES | parent 1 parent_name_amount 1 name  | parent 1 parent_name_amount 2 amount YES"},
		{"SHOW INDEX FROM `pair` FROM `other`", "pair 0 PRIMARY 1 a  | pair 0 PRIMARY 2 b "},
		{"SHOW INDEXES IN other.pair WHERE Column_name = 'b'", "pair 0 PRIMARY 2 b "},
		{`SHOW KEYS FROM "child" FROM "main"`, "child 0 PRIMARY 1 id  | child 1 child_parent_id_id_fkey 1 parent_id YES"},
		{"SHOW EXTENDED KEYS FROM parent WHERE Non_unique = 0 AND Key_name <> 'PRIMARY'", "parent 0 parent_code_key 1 code YES"},
		{"SHOW KEYS FROM parent_view", ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			rows := queryColumns(t, c, tt.query, "Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Null")
			if got := rowsText(rows); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}

	t.Run("a WHERE that is not MySQL", func(t *testing.T) {
		_, err := c.ExecContext(context.Background(), "SHOW KEYS FROM parent WHERE (")
		if got := mysqlErrNum(err); got != 1064 {
			t.Errorf("error = %v, want 1064", err)
		}
	})

	t.Run("columns", func(t *testing.T) {
		rows, err := c.QueryContext(context.Background(), "SHOW KEYS FROM parent")
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		cols, _ := rows.Columns()
		rows.Close()
		want := "Table Non_unique Key_name Seq_in_index Column_name Collation Cardinality Sub_part Packed Null Index_type Comment Index_comment Visible Expression"
		if got := strings.Join(cols, " "); got != want {
			t.Errorf("columns = %s, want %s", got, want)
		}
	})
}

func TestTranslateInfoSchemaQuery(t *testing.T) {
	tests := []struct {
		sql  string
		want bool // translated
	}{
		{"SELECT 1", false},
		{"SELECT * FROM t WHERE note = 'information_schema'", false},
		{"SELECT * FROM information_schema.character_sets", false},
		{"SELECT * FROM information_schema.FILES", true},
		{"SELECT * FROM information_schema.TABLES", true},
		{"select * from INFORMATION_SCHEMA.`key_column_usage` k", true},
		{"SELECT * FROM (SELECT * FROM information_schema.statistics) s", true},
		{"SELECT 1 UNION SELECT 2 FROM information_schema.schemata", true},
		{"DELETE FROM information_schema.tables", false},
		{"SELECT FROM information_schema.tables WHERE", false}, // not MySQL: DuckDB reports the error
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			out, ok := translateInfoSchemaQuery(tt.sql)
			if ok != tt.want {
				t.Errorf("translated = %v, want %v (%s)", ok, tt.want, out)
			}
		})
	}
}

func FuzzTranslateInfoSchemaQuery(f *testing.F) {
	for _, q := range []string{cjGetTables, cjGetColumns, cjGetImportedKeys, cjGetIndexInfo,
		"SELECT `x` FROM information_schema.TABLES HAVING x = 'a\\' LIMIT 1, 2", "WITH a AS (SELECT 1) SELECT * FROM a, information_schema.columns"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		out, ok := translateInfoSchemaQuery(sql)
		if ok && !strings.Contains(out, "mysql_is_") {
			t.Errorf("translated %q without a CTE: %q", sql, out)
		}
	})
}
