package mysqlwire

import (
	"fmt"
	"strings"
)

// MySQL's INFORMATION_SCHEMA, served from DuckDB's catalog. Clients read
// their metadata from MySQL's tables (Connector/J's DatabaseMetaData sends
// queries over TABLES, COLUMNS, STATISTICS, KEY_COLUMN_USAGE, …) and DuckDB's
// information_schema has other tables, other columns and other meanings.
// Each table here is a DuckDB query over duckdb_tables(), duckdb_columns(),
// duckdb_constraints() and friends with MySQL's column names, types and
// values: TABLE_CATALOG is 'def', TABLE_SCHEMA is the DuckDB schema (a
// MySQL database is a schema of the current catalog), and a column's
// DATA_TYPE and COLUMN_TYPE name the MySQL type its values are sent as.
// translate.go splices the tables a query reads into it as CTEs, so the
// client's own WHERE, HAVING and ORDER BY work as they do on MySQL.
//
// Only the current catalog's objects are listed, as SHOW DATABASES does.
// Primary keys are named PRIMARY, as in MySQL; other constraints keep
// DuckDB's names. STATISTICS lists primary keys, UNIQUE constraints and the
// indexes whose every expression is a plain column.

// infoTable is one table of INFORMATION_SCHEMA, or a helper that such
// tables read, given as a CTE.
type infoTable struct {
	cte  string   // the CTE's name
	deps []string // the helper CTEs its query reads
	sql  string   // DuckDB query
}

// defaultCollation is the collation names and columns report; it is
// @@collation_database.
const defaultCollation = "utf8mb4_general_ci"

// infoTables are the helpers and tables in an order where each comes after
// the ones it reads. mysqlTables maps MySQL's table names to them.
var infoTables = []infoTable{
	{cte: "mysql_is_constraints", sql: `SELECT schema_name, table_name, constraint_type,
  CASE constraint_type WHEN 'PRIMARY KEY' THEN 'PRIMARY' ELSE constraint_name END AS name,
  constraint_column_names, referenced_table, referenced_column_names
FROM duckdb_constraints()
WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY', 'CHECK')`},

	// One row per column of a key: primary, unique or foreign.
	{cte: "mysql_is_key_columns", deps: []string{"mysql_is_constraints"}, sql: `SELECT schema_name, table_name, name, constraint_type,
  constraint_column_names[pos] AS column_name, pos, len(constraint_column_names) AS n_columns,
  referenced_table, referenced_column_names[pos] AS referenced_column
FROM (SELECT *, unnest(generate_series(1, len(constraint_column_names))) AS pos
      FROM mysql_is_constraints WHERE constraint_type <> 'CHECK')`},

	// One row per column of an index as MySQL sees one: primary keys and
	// UNIQUE constraints, and the indexes DuckDB lists whose expressions
	// are all columns (an index on (a + 1) has no MySQL form).
	{cte: "mysql_is_index_columns", deps: []string{"mysql_is_key_columns"}, sql: `SELECT schema_name, table_name, name AS index_name,
  constraint_type = 'PRIMARY KEY' AS is_primary, 0 AS non_unique, pos, n_columns, column_name
FROM mysql_is_key_columns WHERE constraint_type <> 'FOREIGN KEY'
UNION ALL
SELECT i.schema_name, i.table_name, i.index_name, false, CASE WHEN i.is_unique THEN 0 ELSE 1 END, i.pos, i.n_columns, c.column_name
FROM (SELECT schema_name, table_name, index_name, is_unique, unnest(e) AS expr,
        unnest(generate_series(1, len(e))) AS pos, len(e) AS n_columns
      FROM (SELECT *, expressions::VARCHAR[] AS e FROM duckdb_indexes() WHERE database_name = current_database())) AS i
JOIN duckdb_columns() AS c ON c.database_name = current_database() AND c.schema_name = i.schema_name
  AND c.table_name = i.table_name AND i.expr IN (c.column_name, '"' || replace(c.column_name, '"', '""') || '"')
QUALIFY count(*) OVER (PARTITION BY i.schema_name, i.table_name, i.index_name) = i.n_columns`},

	{cte: "mysql_is_column_types", sql: columnTypesSQL()},

	{cte: "mysql_is_schemata", sql: `SELECT 'def' AS CATALOG_NAME, schema_name AS SCHEMA_NAME,
  'utf8mb4' AS DEFAULT_CHARACTER_SET_NAME, '` + defaultCollation + `' AS DEFAULT_COLLATION_NAME,
  NULL::VARCHAR AS SQL_PATH, 'NO' AS DEFAULT_ENCRYPTION
FROM duckdb_schemas() WHERE database_name = current_database()`},

	{cte: "mysql_is_tables", sql: `SELECT 'def' AS TABLE_CATALOG, schema_name AS TABLE_SCHEMA, table_name AS TABLE_NAME,
  'BASE TABLE' AS TABLE_TYPE, 'DuckDB' AS ENGINE, 10 AS VERSION, 'Dynamic' AS ROW_FORMAT,
  estimated_size AS TABLE_ROWS, NULL::BIGINT AS AVG_ROW_LENGTH, NULL::BIGINT AS DATA_LENGTH,
  NULL::BIGINT AS MAX_DATA_LENGTH, NULL::BIGINT AS INDEX_LENGTH, NULL::BIGINT AS DATA_FREE,
  NULL::BIGINT AS AUTO_INCREMENT, NULL::TIMESTAMP AS CREATE_TIME, NULL::TIMESTAMP AS UPDATE_TIME,
  NULL::TIMESTAMP AS CHECK_TIME, '` + defaultCollation + `' AS TABLE_COLLATION, NULL::BIGINT AS CHECKSUM,
  '' AS CREATE_OPTIONS, coalesce(comment, '') AS TABLE_COMMENT
FROM duckdb_tables() WHERE database_name = current_database() AND NOT internal
UNION ALL
SELECT 'def', schema_name, view_name, 'VIEW', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, coalesce(comment, 'VIEW')
FROM duckdb_views() WHERE database_name = current_database() AND NOT internal`},

	{cte: "mysql_is_columns", deps: []string{"mysql_is_column_types", "mysql_is_index_columns"}, sql: `SELECT 'def' AS TABLE_CATALOG, c.schema_name AS TABLE_SCHEMA, c.table_name AS TABLE_NAME,
  c.column_name AS COLUMN_NAME, c.column_index::UINTEGER AS ORDINAL_POSITION, c.column_default AS COLUMN_DEFAULT,
  CASE WHEN c.is_nullable THEN 'YES' ELSE 'NO' END AS IS_NULLABLE, t.data_type AS DATA_TYPE,
  t.char_length AS CHARACTER_MAXIMUM_LENGTH, t.octet_length AS CHARACTER_OCTET_LENGTH,
  CASE WHEN t.duck = 'DECIMAL' THEN c.numeric_precision ELSE t.num_precision END::BIGINT AS NUMERIC_PRECISION,
  CASE WHEN t.duck = 'DECIMAL' THEN c.numeric_scale ELSE t.num_scale END::BIGINT AS NUMERIC_SCALE,
  t.fsp AS DATETIME_PRECISION,
  CASE WHEN t.data_type = 'varchar' THEN 'utf8mb4' END AS CHARACTER_SET_NAME,
  CASE WHEN t.data_type = 'varchar' THEN '` + defaultCollation + `' END AS COLLATION_NAME,
  CASE WHEN t.duck = 'DECIMAL' THEN format('decimal({},{})', c.numeric_precision, c.numeric_scale)
    ELSE t.column_type END AS COLUMN_TYPE,
  coalesce(k.column_key, '') AS COLUMN_KEY,
  CASE WHEN c.column_default LIKE 'nextval(%' THEN 'auto_increment' ELSE '' END AS EXTRA,
  'select,insert,update,references' AS PRIVILEGES, coalesce(c.comment, '') AS COLUMN_COMMENT,
  '' AS GENERATION_EXPRESSION, NULL::UINTEGER AS SRS_ID
FROM duckdb_columns() AS c
JOIN mysql_is_column_types AS t ON t.duck = CASE WHEN c.data_type LIKE 'DECIMAL(%' THEN 'DECIMAL'
  WHEN c.data_type IN (` + duckTypeList() + `) THEN c.data_type ELSE 'VARCHAR' END
LEFT JOIN (
  SELECT schema_name, table_name, column_name,
    CASE WHEN bool_or(is_primary) THEN 'PRI' WHEN bool_or(non_unique = 0 AND n_columns = 1) THEN 'UNI'
      WHEN bool_or(pos = 1) THEN 'MUL' END AS column_key
  FROM mysql_is_index_columns GROUP BY ALL
) AS k ON k.schema_name = c.schema_name AND k.table_name = c.table_name AND k.column_name = c.column_name
WHERE c.database_name = current_database() AND NOT c.internal`},

	{cte: "mysql_is_statistics", deps: []string{"mysql_is_index_columns"}, sql: `SELECT 'def' AS TABLE_CATALOG, i.schema_name AS TABLE_SCHEMA, i.table_name AS TABLE_NAME,
  i.non_unique AS NON_UNIQUE, i.schema_name AS INDEX_SCHEMA, i.index_name AS INDEX_NAME,
  i.pos::UINTEGER AS SEQ_IN_INDEX, i.column_name AS COLUMN_NAME, 'A' AS COLLATION, NULL::BIGINT AS CARDINALITY,
  NULL::BIGINT AS SUB_PART, NULL::VARCHAR AS PACKED, CASE WHEN c.is_nullable THEN 'YES' ELSE '' END AS NULLABLE,
  'BTREE' AS INDEX_TYPE, '' AS COMMENT, '' AS INDEX_COMMENT, 'YES' AS IS_VISIBLE, NULL::VARCHAR AS EXPRESSION
FROM mysql_is_index_columns AS i
LEFT JOIN duckdb_columns() AS c ON c.database_name = current_database() AND c.schema_name = i.schema_name
  AND c.table_name = i.table_name AND c.column_name = i.column_name`},

	{cte: "mysql_is_table_constraints", deps: []string{"mysql_is_constraints"}, sql: `SELECT 'def' AS CONSTRAINT_CATALOG, schema_name AS CONSTRAINT_SCHEMA, name AS CONSTRAINT_NAME,
  schema_name AS TABLE_SCHEMA, table_name AS TABLE_NAME, constraint_type AS CONSTRAINT_TYPE, 'YES' AS ENFORCED
FROM mysql_is_constraints`},

	{cte: "mysql_is_key_column_usage", deps: []string{"mysql_is_key_columns"}, sql: `SELECT 'def' AS CONSTRAINT_CATALOG, schema_name AS CONSTRAINT_SCHEMA, name AS CONSTRAINT_NAME,
  'def' AS TABLE_CATALOG, schema_name AS TABLE_SCHEMA, table_name AS TABLE_NAME, column_name AS COLUMN_NAME,
  pos::UINTEGER AS ORDINAL_POSITION,
  CASE WHEN constraint_type = 'FOREIGN KEY' THEN pos END::UINTEGER AS POSITION_IN_UNIQUE_CONSTRAINT,
  CASE WHEN constraint_type = 'FOREIGN KEY' THEN schema_name END AS REFERENCED_TABLE_SCHEMA,
  referenced_table AS REFERENCED_TABLE_NAME, referenced_column AS REFERENCED_COLUMN_NAME
FROM mysql_is_key_columns`},

	// DuckDB's foreign keys neither cascade nor set null: a change that
	// would orphan a row fails, which is MySQL's NO ACTION.
	{cte: "mysql_is_referential_constraints", deps: []string{"mysql_is_constraints"}, sql: `SELECT 'def' AS CONSTRAINT_CATALOG, f.schema_name AS CONSTRAINT_SCHEMA, f.name AS CONSTRAINT_NAME,
  'def' AS UNIQUE_CONSTRAINT_CATALOG, f.schema_name AS UNIQUE_CONSTRAINT_SCHEMA,
  (SELECT min(u.name) FROM mysql_is_constraints AS u WHERE u.schema_name = f.schema_name
    AND u.table_name = f.referenced_table AND u.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
    AND u.constraint_column_names = f.referenced_column_names) AS UNIQUE_CONSTRAINT_NAME,
  'NONE' AS MATCH_OPTION, 'NO ACTION' AS UPDATE_RULE, 'NO ACTION' AS DELETE_RULE,
  f.table_name AS TABLE_NAME, f.referenced_table AS REFERENCED_TABLE_NAME
FROM mysql_is_constraints AS f WHERE f.constraint_type = 'FOREIGN KEY'`},
}

// mysqlTables maps the INFORMATION_SCHEMA tables served here, by MySQL's
// upper-case name, to their CTEs. A query over any other table of
// information_schema reads DuckDB's.
var mysqlTables = map[string]string{
	"SCHEMATA":                "mysql_is_schemata",
	"TABLES":                  "mysql_is_tables",
	"COLUMNS":                 "mysql_is_columns",
	"STATISTICS":              "mysql_is_statistics",
	"TABLE_CONSTRAINTS":       "mysql_is_table_constraints",
	"KEY_COLUMN_USAGE":        "mysql_is_key_column_usage",
	"REFERENTIAL_CONSTRAINTS": "mysql_is_referential_constraints",
}

// withClause returns the CTE list ("a AS (…), b AS (…)") that defines the
// given tables' CTEs and the helpers they read, each once, in dependency
// order.
func withClause(ctes map[string]bool) string {
	need := make(map[string]bool, len(ctes))
	var add func(name string)
	add = func(name string) {
		if need[name] {
			return
		}
		need[name] = true
		for _, t := range infoTables {
			if t.cte == name {
				for _, d := range t.deps {
					add(d)
				}
			}
		}
	}
	for name := range ctes {
		add(name)
	}
	var b strings.Builder
	for _, t := range infoTables {
		if !need[t.cte] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s AS (%s)", t.cte, t.sql)
	}
	return b.String()
}

// columnType is how INFORMATION_SCHEMA.COLUMNS describes a column of one
// DuckDB type: as the MySQL type mysqlField sends its values as. A
// negative number stands for NULL.
type columnType struct {
	duck       string // DuckDB's type, as duckdb_columns() spells it
	dataType   string // DATA_TYPE
	columnType string // COLUMN_TYPE; DECIMAL's is built from the column's precision and scale
	charLength int64  // CHARACTER_MAXIMUM_LENGTH
	octets     int64  // CHARACTER_OCTET_LENGTH
	precision  int    // NUMERIC_PRECISION
	scale      int    // NUMERIC_SCALE
	fsp        int    // DATETIME_PRECISION
}

// Lengths of the VARCHAR and BLOB columns, as the result columns of those
// types declare them (textColumnLength and blobColumnLength bytes).
const (
	varcharChars = textColumnLength / 4
	blobBytes    = blobColumnLength
)

// columnTypes lists DuckDB's types with a MySQL counterpart; DECIMAL stands
// for every DECIMAL(p,s). Any other type (INTERVAL, UUID, ENUM, JSON, LIST,
// STRUCT, MAP, UNION, …) is sent as text and described as VARCHAR.
var columnTypes = []columnType{
	{"VARCHAR", "varchar", fmt.Sprintf("varchar(%d)", varcharChars), varcharChars, textColumnLength, -1, -1, -1},
	{"BOOLEAN", "tinyint", "tinyint(1)", -1, -1, 3, 0, -1},
	{"TINYINT", "tinyint", "tinyint", -1, -1, 3, 0, -1},
	{"SMALLINT", "smallint", "smallint", -1, -1, 5, 0, -1},
	{"INTEGER", "int", "int", -1, -1, 10, 0, -1},
	{"BIGINT", "bigint", "bigint", -1, -1, 19, 0, -1},
	{"UTINYINT", "tinyint", "tinyint unsigned", -1, -1, 3, 0, -1},
	{"USMALLINT", "smallint", "smallint unsigned", -1, -1, 5, 0, -1},
	{"UINTEGER", "int", "int unsigned", -1, -1, 10, 0, -1},
	{"UBIGINT", "bigint", "bigint unsigned", -1, -1, 20, 0, -1},
	{"HUGEINT", "decimal", "decimal(38,0)", -1, -1, 38, 0, -1},
	{"UHUGEINT", "decimal", "decimal(38,0)", -1, -1, 38, 0, -1},
	{"DECIMAL", "decimal", "", -1, -1, -1, -1, -1},
	{"FLOAT", "float", "float", -1, -1, 12, -1, -1},
	{"DOUBLE", "double", "double", -1, -1, 22, -1, -1},
	{"BLOB", "blob", "blob", blobBytes, blobBytes, -1, -1, -1},
	{"BIT", "blob", "blob", blobBytes, blobBytes, -1, -1, -1},
	{"BIGNUM", "blob", "blob", blobBytes, blobBytes, -1, -1, -1},
	{"DATE", "date", "date", -1, -1, -1, -1, -1},
	{"TIME", "time", "time(6)", -1, -1, -1, -1, 6},
	{"TIME WITH TIME ZONE", "time", "time(6)", -1, -1, -1, -1, 6},
	{"TIMESTAMP_S", "datetime", "datetime", -1, -1, -1, -1, 0},
	{"TIMESTAMP_MS", "datetime", "datetime(3)", -1, -1, -1, -1, 3},
	{"TIMESTAMP", "datetime", "datetime(6)", -1, -1, -1, -1, 6},
	{"TIMESTAMP_NS", "datetime", "datetime(6)", -1, -1, -1, -1, 6},
	{"TIMESTAMP WITH TIME ZONE", "timestamp", "timestamp(6)", -1, -1, -1, -1, 6},
}

// columnTypesSQL renders columnTypes as a query.
func columnTypesSQL() string {
	var b strings.Builder
	b.WriteString("SELECT duck, data_type, column_type, char_length::BIGINT AS char_length, octet_length::BIGINT AS octet_length, " +
		"num_precision::BIGINT AS num_precision, num_scale::BIGINT AS num_scale, fsp::UINTEGER AS fsp FROM (VALUES ")
	num := func(n int64) string {
		if n < 0 {
			return "NULL"
		}
		return fmt.Sprint(n)
	}
	for i, t := range columnTypes {
		if i > 0 {
			b.WriteString(", ")
		}
		colType := "NULL"
		if t.columnType != "" {
			colType = "'" + t.columnType + "'"
		}
		fmt.Fprintf(&b, "('%s', '%s', %s, %s, %s, %s, %s, %s)", t.duck, t.dataType, colType,
			num(t.charLength), num(t.octets), num(int64(t.precision)), num(int64(t.scale)), num(int64(t.fsp)))
	}
	b.WriteString(") AS t(duck, data_type, column_type, char_length, octet_length, num_precision, num_scale, fsp)")
	return b.String()
}

// duckTypeList is the SQL list of the DuckDB types columnTypes names.
func duckTypeList() string {
	names := make([]string, len(columnTypes))
	for i, t := range columnTypes {
		names[i] = "'" + t.duck + "'"
	}
	return strings.Join(names, ", ")
}
