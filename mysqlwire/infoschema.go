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
// DATA_TYPE and COLUMN_TYPE come from mysqlTypes (mysqltypes.go), which a
// test holds to the types of result columns. translate.go splices the tables a query
// reads into it as CTEs, so the client's own WHERE, HAVING and ORDER BY
// work as they do on MySQL. SHOW COLUMNS, SHOW INDEX, SHOW TABLE STATUS and
// SHOW CREATE TABLE (show.go, showcreate.go) are queries over these tables.
//
// Only the current catalog's objects are listed, as SHOW DATABASES does.
// Primary keys are named PRIMARY, as in MySQL; other constraints keep
// DuckDB's names. STATISTICS lists primary keys, UNIQUE constraints, the
// indexes whose every expression is a plain column, and for a foreign key
// that no such index starts with, the index InnoDB would give it (DuckDB
// keeps one too). Tables report ENGINE InnoDB. FILES, TRIGGERS and ROUTINES
// are empty, and PARTITIONS has one row per table, as MySQL has for tables
// that are not partitioned.

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
  constraint_column_names, referenced_table, referenced_column_names, expression
FROM duckdb_constraints()
WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY', 'CHECK')`},

	// One row per column of a key: primary, unique or foreign.
	{cte: "mysql_is_key_columns", deps: []string{"mysql_is_constraints"}, sql: `SELECT schema_name, table_name, name, constraint_type,
  constraint_column_names[pos] AS column_name, pos, len(constraint_column_names) AS n_columns,
  referenced_table, referenced_column_names[pos] AS referenced_column
FROM (SELECT *, unnest(generate_series(1, len(constraint_column_names))) AS pos
      FROM mysql_is_constraints WHERE constraint_type <> 'CHECK')`},

	// One row per column of an index declared as such: primary keys and
	// UNIQUE constraints, and the indexes DuckDB lists whose expressions
	// are all columns (an index on (a + 1) has no MySQL form).
	{cte: "mysql_is_declared_index_columns", deps: []string{"mysql_is_key_columns"}, sql: `SELECT schema_name, table_name, name AS index_name,
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

	// Every index as MySQL sees one: the declared ones, and the index a
	// foreign key has on its columns, named after the constraint, unless
	// a declared index starts with those columns. (InnoDB makes the same
	// index for a foreign key; DuckDB keeps one too.)
	{cte: "mysql_is_index_columns", deps: []string{"mysql_is_constraints", "mysql_is_key_columns", "mysql_is_declared_index_columns"}, sql: `SELECT * FROM mysql_is_declared_index_columns
UNION ALL
SELECT k.schema_name, k.table_name, k.name, false, 1, k.pos, k.n_columns, k.column_name
FROM mysql_is_key_columns AS k
JOIN mysql_is_constraints AS f ON f.constraint_type = 'FOREIGN KEY' AND f.schema_name = k.schema_name
  AND f.table_name = k.table_name AND f.name = k.name
WHERE k.constraint_type = 'FOREIGN KEY' AND NOT EXISTS (
  SELECT 1 FROM (SELECT schema_name, table_name, list(column_name ORDER BY pos) AS cols
                 FROM mysql_is_declared_index_columns GROUP BY schema_name, table_name, index_name) AS d
  WHERE d.schema_name = f.schema_name AND d.table_name = f.table_name
    AND d.cols[1:len(f.constraint_column_names)] = f.constraint_column_names)`},

	{cte: "mysql_is_column_types", sql: columnTypesSQL()},

	// One row per column of a table or view, with its MySQL type (from
	// mysqlTypes), its key, and its default in MySQL's terms: see
	// columnInfoSQL.
	{cte: "mysql_is_column_info", deps: []string{"mysql_is_column_types", "mysql_is_index_columns"}, sql: columnInfoSQL},

	{cte: "mysql_is_schemata", sql: `SELECT 'def' AS CATALOG_NAME, schema_name AS SCHEMA_NAME,
  'utf8mb4' AS DEFAULT_CHARACTER_SET_NAME, '` + defaultCollation + `' AS DEFAULT_COLLATION_NAME,
  NULL::VARCHAR AS SQL_PATH, 'NO' AS DEFAULT_ENCRYPTION
FROM duckdb_schemas() WHERE database_name = current_database()`},

	{cte: "mysql_is_tables", sql: `SELECT 'def' AS TABLE_CATALOG, schema_name AS TABLE_SCHEMA, table_name AS TABLE_NAME,
  'BASE TABLE' AS TABLE_TYPE, '` + tableEngine + `' AS ENGINE, 10 AS VERSION, 'Dynamic' AS ROW_FORMAT,
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

	{cte: "mysql_is_columns", deps: []string{"mysql_is_column_info"}, sql: `SELECT 'def' AS TABLE_CATALOG, schema_name AS TABLE_SCHEMA, table_name AS TABLE_NAME,
  column_name AS COLUMN_NAME, ordinal::UINTEGER AS ORDINAL_POSITION, column_default AS COLUMN_DEFAULT,
  CASE WHEN nullable THEN 'YES' ELSE 'NO' END AS IS_NULLABLE, data_type AS DATA_TYPE,
  char_length AS CHARACTER_MAXIMUM_LENGTH, octet_length AS CHARACTER_OCTET_LENGTH,
  num_precision AS NUMERIC_PRECISION, num_scale AS NUMERIC_SCALE, fsp AS DATETIME_PRECISION,
  CASE WHEN is_text THEN 'utf8mb4' END AS CHARACTER_SET_NAME,
  CASE WHEN is_text THEN '` + defaultCollation + `' END AS COLLATION_NAME,
  column_type AS COLUMN_TYPE, column_key AS COLUMN_KEY, extra AS EXTRA,
  'select,insert,update,references' AS PRIVILEGES, column_comment AS COLUMN_COMMENT,
  '' AS GENERATION_EXPRESSION, NULL::UINTEGER AS SRS_ID
FROM mysql_is_column_info`},

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

	{cte: "mysql_is_check_constraints", deps: []string{"mysql_is_constraints"}, sql: `SELECT 'def' AS CONSTRAINT_CATALOG, schema_name AS CONSTRAINT_SCHEMA, name AS CONSTRAINT_NAME,
  expression AS CHECK_CLAUSE
FROM mysql_is_constraints WHERE constraint_type = 'CHECK'`},

	// A view's definition is the query DuckDB keeps, after its AS.
	{cte: "mysql_is_views", sql: `SELECT 'def' AS TABLE_CATALOG, schema_name AS TABLE_SCHEMA, view_name AS TABLE_NAME,
  regexp_extract(sql, '(?is)^CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?VIEW\s+.*?\s+AS\s+(.*?);?\s*$', 1) AS VIEW_DEFINITION,
  'NONE' AS CHECK_OPTION, 'NO' AS IS_UPDATABLE, '` + viewDefiner + `' AS DEFINER, 'DEFINER' AS SECURITY_TYPE,
  'utf8mb4' AS CHARACTER_SET_CLIENT, '` + defaultCollation + `' AS COLLATION_CONNECTION
FROM duckdb_views() WHERE database_name = current_database() AND NOT internal`},

	// Tables are not partitioned: one row each, as MySQL has for such a
	// table, with the partition columns NULL.
	{cte: "mysql_is_partitions", sql: `SELECT 'def' AS TABLE_CATALOG, schema_name AS TABLE_SCHEMA, table_name AS TABLE_NAME,
  NULL::VARCHAR AS PARTITION_NAME, NULL::VARCHAR AS SUBPARTITION_NAME, NULL::UINTEGER AS PARTITION_ORDINAL_POSITION,
  NULL::UINTEGER AS SUBPARTITION_ORDINAL_POSITION, NULL::VARCHAR AS PARTITION_METHOD, NULL::VARCHAR AS SUBPARTITION_METHOD,
  NULL::VARCHAR AS PARTITION_EXPRESSION, NULL::VARCHAR AS SUBPARTITION_EXPRESSION, NULL::VARCHAR AS PARTITION_DESCRIPTION,
  estimated_size AS TABLE_ROWS, 0::BIGINT AS AVG_ROW_LENGTH, 0::BIGINT AS DATA_LENGTH, NULL::BIGINT AS MAX_DATA_LENGTH,
  0::BIGINT AS INDEX_LENGTH, 0::BIGINT AS DATA_FREE, NULL::TIMESTAMP AS CREATE_TIME, NULL::TIMESTAMP AS UPDATE_TIME,
  NULL::TIMESTAMP AS CHECK_TIME, NULL::BIGINT AS CHECKSUM, '' AS PARTITION_COMMENT, '' AS NODEGROUP,
  NULL::VARCHAR AS TABLESPACE_NAME
FROM duckdb_tables() WHERE database_name = current_database() AND NOT internal`},

	// DuckDB has no triggers, and no stored routines that MySQL could
	// call: TRIGGERS and ROUTINES are empty. (mysqldump reads TRIGGERS for
	// every table it dumps.)
	{cte: "mysql_is_triggers", sql: `SELECT NULL::VARCHAR AS TRIGGER_CATALOG, NULL::VARCHAR AS TRIGGER_SCHEMA,
  NULL::VARCHAR AS TRIGGER_NAME, NULL::VARCHAR AS EVENT_MANIPULATION, NULL::VARCHAR AS EVENT_OBJECT_CATALOG,
  NULL::VARCHAR AS EVENT_OBJECT_SCHEMA, NULL::VARCHAR AS EVENT_OBJECT_TABLE, NULL::UINTEGER AS ACTION_ORDER,
  NULL::VARCHAR AS ACTION_CONDITION, NULL::VARCHAR AS ACTION_STATEMENT, NULL::VARCHAR AS ACTION_ORIENTATION,
  NULL::VARCHAR AS ACTION_TIMING, NULL::VARCHAR AS ACTION_REFERENCE_OLD_TABLE, NULL::VARCHAR AS ACTION_REFERENCE_NEW_TABLE,
  NULL::VARCHAR AS ACTION_REFERENCE_OLD_ROW, NULL::VARCHAR AS ACTION_REFERENCE_NEW_ROW, NULL::TIMESTAMP AS CREATED,
  NULL::VARCHAR AS SQL_MODE, NULL::VARCHAR AS DEFINER, NULL::VARCHAR AS CHARACTER_SET_CLIENT,
  NULL::VARCHAR AS COLLATION_CONNECTION, NULL::VARCHAR AS DATABASE_COLLATION
WHERE false`},
	{cte: "mysql_is_routines", sql: `SELECT NULL::VARCHAR AS SPECIFIC_NAME, NULL::VARCHAR AS ROUTINE_CATALOG,
  NULL::VARCHAR AS ROUTINE_SCHEMA, NULL::VARCHAR AS ROUTINE_NAME, NULL::VARCHAR AS ROUTINE_TYPE, NULL::VARCHAR AS DATA_TYPE,
  NULL::BIGINT AS CHARACTER_MAXIMUM_LENGTH, NULL::BIGINT AS CHARACTER_OCTET_LENGTH, NULL::UINTEGER AS NUMERIC_PRECISION,
  NULL::UINTEGER AS NUMERIC_SCALE, NULL::UINTEGER AS DATETIME_PRECISION, NULL::VARCHAR AS CHARACTER_SET_NAME,
  NULL::VARCHAR AS COLLATION_NAME, NULL::VARCHAR AS DTD_IDENTIFIER, NULL::VARCHAR AS ROUTINE_BODY,
  NULL::VARCHAR AS ROUTINE_DEFINITION, NULL::VARCHAR AS EXTERNAL_NAME, NULL::VARCHAR AS EXTERNAL_LANGUAGE,
  NULL::VARCHAR AS PARAMETER_STYLE, NULL::VARCHAR AS IS_DETERMINISTIC, NULL::VARCHAR AS SQL_DATA_ACCESS,
  NULL::VARCHAR AS SQL_PATH, NULL::VARCHAR AS SECURITY_TYPE, NULL::TIMESTAMP AS CREATED, NULL::TIMESTAMP AS LAST_ALTERED,
  NULL::VARCHAR AS SQL_MODE, NULL::VARCHAR AS ROUTINE_COMMENT, NULL::VARCHAR AS DEFINER,
  NULL::VARCHAR AS CHARACTER_SET_CLIENT, NULL::VARCHAR AS COLLATION_CONNECTION, NULL::VARCHAR AS DATABASE_COLLATION
WHERE false`},

	// DuckDB has no tablespaces or log files: FILES is empty. (mysqldump
	// reads it before it dumps anything.)
	{cte: "mysql_is_files", sql: `SELECT NULL::BIGINT AS FILE_ID, NULL::VARCHAR AS FILE_NAME, NULL::VARCHAR AS FILE_TYPE,
  NULL::VARCHAR AS TABLESPACE_NAME, NULL::VARCHAR AS TABLE_CATALOG, NULL::VARCHAR AS TABLE_SCHEMA,
  NULL::VARCHAR AS TABLE_NAME, NULL::VARCHAR AS LOGFILE_GROUP_NAME, NULL::BIGINT AS LOGFILE_GROUP_NUMBER,
  NULL::VARCHAR AS ENGINE, NULL::VARCHAR AS FULLTEXT_KEYS, NULL::BIGINT AS DELETED_ROWS, NULL::BIGINT AS UPDATE_COUNT,
  NULL::BIGINT AS FREE_EXTENTS, NULL::BIGINT AS TOTAL_EXTENTS, NULL::BIGINT AS EXTENT_SIZE, NULL::BIGINT AS INITIAL_SIZE,
  NULL::BIGINT AS MAXIMUM_SIZE, NULL::BIGINT AS AUTOEXTEND_SIZE, NULL::TIMESTAMP AS CREATION_TIME,
  NULL::TIMESTAMP AS LAST_UPDATE_TIME, NULL::TIMESTAMP AS LAST_ACCESS_TIME, NULL::TIMESTAMP AS RECOVER_TIME,
  NULL::BIGINT AS TRANSACTION_COUNTER, NULL::BIGINT AS VERSION, NULL::VARCHAR AS ROW_FORMAT, NULL::BIGINT AS TABLE_ROWS,
  NULL::BIGINT AS AVG_ROW_LENGTH, NULL::BIGINT AS DATA_LENGTH, NULL::BIGINT AS MAX_DATA_LENGTH,
  NULL::BIGINT AS INDEX_LENGTH, NULL::BIGINT AS DATA_FREE, NULL::TIMESTAMP AS CREATE_TIME,
  NULL::TIMESTAMP AS UPDATE_TIME, NULL::TIMESTAMP AS CHECK_TIME, NULL::BIGINT AS CHECKSUM,
  NULL::VARCHAR AS STATUS, NULL::VARCHAR AS EXTRA
WHERE false`},
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
	"CHECK_CONSTRAINTS":       "mysql_is_check_constraints",
	"VIEWS":                   "mysql_is_views",
	"PARTITIONS":              "mysql_is_partitions",
	"FILES":                   "mysql_is_files",
	"TRIGGERS":                "mysql_is_triggers",
	"ROUTINES":                "mysql_is_routines",
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

// tableEngine is the storage engine tables report: InnoDB, the engine MySQL
// tools expect a transactional table to have (mysqldump's
// --single-transaction, SQLAlchemy's mysql_engine), since a DuckDB table
// is one.
const tableEngine = "InnoDB"

// viewDefiner is the DEFINER of every view, as user@host; DuckDB records
// none.
const viewDefiner = "root@localhost"

// columnInfoSQL describes each column of the current catalog's tables and
// views in MySQL's terms; COLUMNS, SHOW COLUMNS and SHOW CREATE TABLE read
// it. Its type comes from mysqlTypes, joined by duckKeySQL, with the
// parameters of decimal(p,s) and enum(…) from the column. A VARCHAR column
// in a key or an index is varchar(keyVarcharChars), as MySQL keys hold no
// longtext.
//
// The default is COLUMN_DEFAULT as MySQL shows it, from DuckDB's default
// expression: a literal's value (a number, a string, CAST('…' AS type),
// true and false as 1 and 0, a decimal with its scale's digits);
// CURRENT_TIMESTAMP(fsp) for now() and current_timestamp, curdate() for
// current_date; none and auto_increment for nextval(…); and any other
// expression as DuckDB prints it. extra is MySQL's EXTRA: auto_increment,
// or DEFAULT_GENERATED for a default that is an expression.
var columnInfoSQL = `SELECT schema_name, table_name, column_name, ordinal, nullable, duck, is_text, fsp,
  CASE WHEN key_varchar THEN 'varchar' ELSE data_type END AS data_type,
  CASE WHEN key_varchar THEN 'varchar(` + fmt.Sprint(keyVarcharChars) + `)'
    WHEN duck = 'DECIMAL' THEN format('decimal({},{})', numeric_precision, numeric_scale)
    WHEN duck = 'ENUM' THEN 'enum(' || list_aggregate(enum_values, 'string_agg', ',') || ')'
    ELSE column_type END AS column_type,
  CASE WHEN key_varchar THEN ` + fmt.Sprint(keyVarcharChars) + `
    WHEN duck = 'ENUM' THEN list_max(list_transform(enum_values, v -> length(replace(v[2:-2], '''''', ''''))))
    ELSE char_length END::BIGINT AS char_length,
  CASE WHEN key_varchar THEN ` + fmt.Sprint(4*keyVarcharChars) + `
    WHEN duck = 'ENUM' THEN 4 * list_max(list_transform(enum_values, v -> length(replace(v[2:-2], '''''', ''''))))
    ELSE octet_length END::BIGINT AS octet_length,
  CASE WHEN duck = 'DECIMAL' THEN numeric_precision ELSE num_precision END::BIGINT AS num_precision,
  CASE WHEN duck = 'DECIMAL' THEN numeric_scale ELSE num_scale END::BIGINT AS num_scale,
  CASE WHEN dflt IS NULL OR dflt ILIKE 'nextval(%' THEN NULL
    WHEN lower(dflt) IN ('now()', 'current_timestamp', 'current_timestamp()', 'get_current_timestamp()', 'transaction_timestamp()', 'localtimestamp')
      THEN 'CURRENT_TIMESTAMP' || CASE WHEN fsp > 0 THEN '(' || fsp || ')' ELSE '' END
    WHEN lower(dflt) IN ('current_date', 'current_date()', 'today()') THEN 'curdate()'
    WHEN literal IS NULL THEN dflt
    WHEN duck = 'BOOLEAN' THEN CASE WHEN lower(literal) IN ('t', 'true', 'y', 'yes', 'on', '1') THEN '1' ELSE '0' END
    WHEN duck = 'DECIMAL' AND numeric_scale > 0 AND regexp_full_match(literal, '-?[0-9]+')
      THEN literal || '.' || repeat('0', numeric_scale)
    WHEN duck = 'DECIMAL' AND numeric_scale > 0 AND regexp_full_match(literal, '-?[0-9]*\.[0-9]*')
      THEN literal || repeat('0', greatest(0, numeric_scale - length(split_part(literal, '.', 2))))
    ELSE literal END AS column_default,
  CASE WHEN dflt ILIKE 'nextval(%' THEN 'auto_increment'
    WHEN dflt IS NOT NULL AND literal IS NULL THEN 'DEFAULT_GENERATED'
    ELSE '' END AS extra,
  coalesce(column_key, '') AS column_key, coalesce(comment, '') AS column_comment
FROM (
  SELECT c.*, t.data_type, t.column_type, t.is_text AND t.data_type <> 'json' AS is_text, t.char_length, t.octet_length,
    t.num_precision, t.num_scale, t.fsp, k.column_key, c.duck = 'VARCHAR' AND k.column_name IS NOT NULL AS key_varchar,
    CASE WHEN c.duck = 'ENUM' THEN regexp_extract_all(c.duck_type, '''(?:[^'']|'''')*''') END AS enum_values,
    CASE WHEN regexp_full_match(c.dflt, '\(?-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?\)?') THEN trim(c.dflt, '()')
      WHEN regexp_full_match(c.dflt, '''(?:[^'']|'''')*''') THEN replace(c.dflt[2:-2], '''''', '''')
      WHEN regexp_full_match(c.dflt, '(?i)CAST\(''(?:[^'']|'''')*'' AS [^()]+\)')
        THEN replace(regexp_extract(c.dflt, '^(?i)CAST\(''((?:[^'']|'''')*)''', 1), '''''', '''')
      WHEN lower(c.dflt) IN ('true', 'false') THEN lower(c.dflt)
    END AS literal
  FROM (SELECT schema_name, table_name, column_name, column_index AS ordinal, is_nullable AS nullable,
          column_default AS dflt, data_type AS duck_type, numeric_precision, numeric_scale, comment,
          ` + duckKeySQL("data_type") + ` AS duck
        FROM duckdb_columns() WHERE database_name = current_database() AND NOT internal) AS c
  JOIN mysql_is_column_types AS t ON t.duck = c.duck
  LEFT JOIN (
    SELECT schema_name, table_name, column_name,
      CASE WHEN bool_or(is_primary) THEN 'PRI' WHEN bool_or(non_unique = 0 AND n_columns = 1) THEN 'UNI'
        WHEN bool_or(pos = 1) THEN 'MUL' END AS column_key
    FROM mysql_is_index_columns GROUP BY ALL
  ) AS k ON k.schema_name = c.schema_name AND k.table_name = c.table_name AND k.column_name = c.column_name
)`
