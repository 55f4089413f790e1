package mysqlwire

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/quiverdata/quiver/engine"
)

// SHOW statements: the ones about DuckDB objects become queries over
// information_schema and DuckDB's catalog functions, the others canned
// tables. LIKE and WHERE filters work on all of them.

// showDatabases lists the schemas of the current catalog.
func (s *session) showDatabases(_ context.Context, m []string) (compatOutcome, error) {
	sql := `SELECT schema_name AS "Database" FROM information_schema.schemata WHERE catalog_name = current_database()`
	return filterSQL(sql, "schema_name", m[1], m[2], "1")
}

// showTables lists the tables and views of a schema.
func (s *session) showTables(ctx context.Context, m []string) (compatOutcome, error) {
	schema, schemaExpr, err := s.schemaArg(ctx, m[2])
	if err != nil {
		return compatOutcome{}, err
	}
	full := ""
	if m[1] != "" {
		full = `, CASE table_type WHEN 'VIEW' THEN 'VIEW' ELSE 'BASE TABLE' END AS "Table_type"`
	}
	sql := fmt.Sprintf(`SELECT table_name AS %s%s FROM information_schema.tables WHERE table_catalog = current_database() AND table_schema = %s`,
		engine.QuoteIdent("Tables_in_"+schema), full, schemaExpr)
	return filterSQL(sql, "table_name", m[3], m[4], "1")
}

// showColumns describes a table's columns as MySQL's SHOW [FULL] COLUMNS
// does, from INFORMATION_SCHEMA.COLUMNS; DESCRIBE t answers the same way.
// m holds: whole, FULL, table, schema, filter kind, filter expression.
func (s *session) showColumns(ctx context.Context, m []string) (compatOutcome, error) {
	schema, name, err := s.showTableArg(ctx, m[2], m[3])
	if err != nil {
		return compatOutcome{}, err
	}
	cols := "COLUMN_NAME AS `Field`, COLUMN_TYPE AS `Type`, IS_NULLABLE AS `Null`, COLUMN_KEY AS `Key`, " +
		"COLUMN_DEFAULT AS `Default`, EXTRA AS `Extra`"
	if m[1] != "" {
		cols = "COLUMN_NAME AS `Field`, COLUMN_TYPE AS `Type`, COLLATION_NAME AS `Collation`, IS_NULLABLE AS `Null`, " +
			"COLUMN_KEY AS `Key`, COLUMN_DEFAULT AS `Default`, EXTRA AS `Extra`, PRIVILEGES AS `Privileges`, COLUMN_COMMENT AS `Comment`"
	}
	sql, ok := translateInfoSchemaQuery("SELECT " + cols + ", ORDINAL_POSITION AS pos FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = " +
		mysqlString(schema) + " AND TABLE_NAME = " + mysqlString(name))
	if !ok {
		return compatOutcome{}, fmt.Errorf("translate SHOW COLUMNS of %s.%s", schema, name)
	}
	out := "SELECT * EXCLUDE (pos) FROM (" + sql + ") AS c"
	switch strings.ToUpper(m[4]) {
	case "LIKE":
		pattern, rest, ok := parseStringLiteral(strings.TrimSpace(m[5]))
		if !ok || strings.TrimSpace(rest) != "" {
			return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[5])
		}
		out += ` WHERE "Field" ILIKE ` + engine.QuoteString(pattern) + ` ESCAPE '\'`
	case "WHERE":
		out += " WHERE " + rewriteForDuckDB(m[5])
	}
	return sqlOutcome(out + " ORDER BY pos"), nil
}

// showTableArg resolves the table of SHOW COLUMNS or SHOW KEYS, "t" or
// "db.t", with an optional FROM db: its schema and name, or MySQL's error
// for a table that does not exist.
func (s *session) showTableArg(ctx context.Context, tableArg, dbArg string) (schema, name string, err error) {
	parts, ok := parseQualifiedName(tableArg)
	if !ok {
		return "", "", errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", tableArg)
	}
	if len(parts) == 2 {
		dbArg = engine.QuoteIdent(parts[0])
	}
	schema, _, err = s.schemaArg(ctx, dbArg)
	if err != nil {
		return "", "", err
	}
	name = parts[len(parts)-1]
	conn, err := s.engineConn(ctx)
	if err != nil {
		return "", "", err
	}
	rows, err := infoSchemaRows(ctx, conn, "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = "+
		mysqlString(schema)+" AND TABLE_NAME = "+mysqlString(name))
	if err != nil {
		return "", "", err
	}
	if len(rows) == 0 {
		return "", "", errorf(mysql.ERNoSuchTable, sqlStateNoSuchTable, "Table '%s.%s' doesn't exist", schema, name)
	}
	return schema, name, nil
}

// showTableStatus is SHOW TABLE STATUS [FROM db] [LIKE|WHERE]: TABLES as
// MySQL shows it. m holds: whole, schema, filter kind, filter expression.
func (s *session) showTableStatus(ctx context.Context, m []string) (compatOutcome, error) {
	schema, _, err := s.schemaArg(ctx, m[1])
	if err != nil {
		return compatOutcome{}, err
	}
	sql, ok := translateInfoSchemaQuery("SELECT TABLE_NAME AS `Name`, ENGINE AS `Engine`, VERSION AS `Version`, " +
		"ROW_FORMAT AS `Row_format`, TABLE_ROWS AS `Rows`, AVG_ROW_LENGTH AS `Avg_row_length`, DATA_LENGTH AS `Data_length`, " +
		"MAX_DATA_LENGTH AS `Max_data_length`, INDEX_LENGTH AS `Index_length`, DATA_FREE AS `Data_free`, " +
		"AUTO_INCREMENT AS `Auto_increment`, CREATE_TIME AS `Create_time`, UPDATE_TIME AS `Update_time`, " +
		"CHECK_TIME AS `Check_time`, TABLE_COLLATION AS `Collation`, CHECKSUM AS `Checksum`, " +
		"CREATE_OPTIONS AS `Create_options`, TABLE_COMMENT AS `Comment` FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = " +
		mysqlString(schema))
	if !ok {
		return compatOutcome{}, fmt.Errorf("translate SHOW TABLE STATUS of %s", schema)
	}
	return filterSQL("SELECT * FROM ("+sql+") AS t WHERE true", `"Name"`, m[2], m[3], `"Name"`)
}

func init() {
	// SHOW TABLE STATUS (mysqldump sends it for every table) joins the
	// compatibility rules of compat.go here, beside its kin.
	compatRules["SHOW"] = append(compatRules["SHOW"],
		rule(`SHOW\s+TABLE\s+STATUS(?:\s+(?:FROM|IN)\s+(\S+))?`+filterRe, (*session).showTableStatus))
}

// showKeysSQL is MySQL's SHOW KEYS over INFORMATION_SCHEMA.STATISTICS, in
// MySQL's dialect, for a schema and a table.
const showKeysSQL = "SELECT TABLE_NAME AS `Table`, NON_UNIQUE AS Non_unique, INDEX_NAME AS Key_name, " +
	"SEQ_IN_INDEX AS Seq_in_index, COLUMN_NAME AS Column_name, COLLATION AS `Collation`, CARDINALITY AS Cardinality, " +
	"SUB_PART AS Sub_part, PACKED AS Packed, NULLABLE AS `Null`, INDEX_TYPE AS Index_type, COMMENT AS `Comment`, " +
	"INDEX_COMMENT AS Index_comment, IS_VISIBLE AS Visible, EXPRESSION AS Expression " +
	"FROM INFORMATION_SCHEMA.STATISTICS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"

// showKeys lists a table's indexes as MySQL's SHOW KEYS (INDEX, INDEXES)
// does: primary key first, then unique ones. m holds: whole, table, schema,
// WHERE expression.
func (s *session) showKeys(ctx context.Context, m []string) (compatOutcome, error) {
	schema, name, err := s.showTableArg(ctx, m[1], m[2])
	if err != nil {
		return compatOutcome{}, err
	}
	sql := fmt.Sprintf(showKeysSQL, mysqlString(schema), mysqlString(name))
	if m[3] != "" {
		sql = "SELECT * FROM (" + sql + ") AS k WHERE " + m[3]
	}
	sql += " ORDER BY Key_name <> 'PRIMARY', Non_unique, Key_name, Seq_in_index"
	out, ok := translateInfoSchemaQuery(sql)
	if !ok {
		return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[3])
	}
	return sqlOutcome(out), nil
}

// schemaArg resolves the optional database of a SHOW statement: its name,
// and a DuckDB expression for it.
func (s *session) schemaArg(ctx context.Context, arg string) (name, expr string, err error) {
	if arg == "" {
		name, err = s.currentSchema(ctx)
		return name, "current_schema()", err
	}
	parts, ok := parseQualifiedName(arg)
	if !ok || len(parts) != 1 {
		return "", "", errorf(mysql.ERBadDb, sqlStateSyntax, "Unknown database '%s'", arg)
	}
	return parts[0], engine.QuoteString(parts[0]), nil
}

// filterSQL adds a SHOW statement's LIKE or WHERE filter to sql: LIKE
// matches likeCol case-insensitively; WHERE applies to the output columns.
func filterSQL(sql, likeCol, kind, expr, orderBy string) (compatOutcome, error) {
	switch strings.ToUpper(kind) {
	case "LIKE":
		pattern, rest, ok := parseStringLiteral(strings.TrimSpace(expr))
		if !ok || strings.TrimSpace(rest) != "" {
			return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", expr)
		}
		sql += " AND " + likeCol + " ILIKE " + engine.QuoteString(pattern) + ` ESCAPE '\'`
	case "WHERE":
		return sqlOutcome("SELECT * FROM (" + sql + ") AS t WHERE " + rewriteForDuckDB(expr) + " ORDER BY 1"), nil
	}
	return sqlOutcome(sql + " ORDER BY " + orderBy), nil
}

// filterTable applies a SHOW statement's LIKE or WHERE to a canned table.
// LIKE matches the first column here; WHERE runs on DuckDB over the rows.
func (s *session) filterTable(t *table, kind, expr string) (compatOutcome, error) {
	switch strings.ToUpper(kind) {
	case "LIKE":
		pattern, rest, ok := parseStringLiteral(strings.TrimSpace(expr))
		if !ok || strings.TrimSpace(rest) != "" {
			return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", expr)
		}
		out := &table{cols: t.cols}
		for _, r := range t.rows {
			if r[0] != nil && likeMatch(pattern, *r[0]) {
				out.rows = append(out.rows, r)
			}
		}
		return compatOutcome{res: out.result()}, nil
	case "WHERE":
		return sqlOutcome("SELECT * FROM (" + t.sql() + ") AS t WHERE " + rewriteForDuckDB(expr)), nil
	}
	return compatOutcome{res: t.result()}, nil
}

// showStatus is SHOW STATUS: a few of MySQL's status counters.
func (s *session) showStatus() *table {
	t := &table{cols: []column{{"Variable_name", sqltypes.VarChar}, {"Value", sqltypes.VarChar}}}
	add := func(name string, v int64) {
		t.rows = append(t.rows, []*string{strPtr(name), strPtr(strconv.FormatInt(v, 10))})
	}
	add("Questions", s.srv.questions.Load())
	add("Threads_connected", int64(s.srv.sessionCount()))
	add("Uptime", int64(time.Since(s.srv.started).Seconds()))
	return t
}

// processList is SHOW PROCESSLIST.
func (s *Server) processList() *table {
	t := &table{cols: []column{{"Id", sqltypes.Int64}, {"User", sqltypes.VarChar}, {"Host", sqltypes.VarChar},
		{"db", sqltypes.VarChar}, {"Command", sqltypes.VarChar}, {"Time", sqltypes.Int64},
		{"State", sqltypes.VarChar}, {"Info", sqltypes.VarChar}}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sess := range s.sessions {
		cmd := "Sleep"
		if sess.running() {
			cmd = "Query"
		}
		t.rows = append(t.rows, []*string{strPtr(strconv.FormatUint(uint64(id), 10)), strPtr(sess.userName()),
			strPtr(remoteHost(sess.c.RemoteAddr())), nil, strPtr(cmd), strPtr("0"), strPtr(""), nil})
	}
	return t
}

var collations = &table{
	cols: []column{{"Collation", sqltypes.VarChar}, {"Charset", sqltypes.VarChar}, {"Id", sqltypes.Int64},
		{"Default", sqltypes.VarChar}, {"Compiled", sqltypes.VarChar}, {"Sortlen", sqltypes.Int64}, {"Pad_attribute", sqltypes.VarChar}},
	rows: strRows(
		[]string{"ascii_general_ci", "ascii", "11", "Yes", "Yes", "1", "PAD SPACE"},
		[]string{"binary", "binary", "63", "Yes", "Yes", "1", "NO PAD"},
		[]string{"latin1_swedish_ci", "latin1", "8", "Yes", "Yes", "1", "PAD SPACE"},
		[]string{"utf8mb3_general_ci", "utf8mb3", "33", "Yes", "Yes", "1", "PAD SPACE"},
		[]string{"utf8mb4_0900_ai_ci", "utf8mb4", "255", "", "Yes", "0", "NO PAD"},
		[]string{"utf8mb4_bin", "utf8mb4", "46", "", "Yes", "1", "PAD SPACE"},
		[]string{"utf8mb4_general_ci", "utf8mb4", "45", "Yes", "Yes", "1", "PAD SPACE"},
	),
}

var charsets = &table{
	cols: []column{{"Charset", sqltypes.VarChar}, {"Description", sqltypes.VarChar},
		{"Default collation", sqltypes.VarChar}, {"Maxlen", sqltypes.Int64}},
	rows: strRows(
		[]string{"ascii", "US ASCII", "ascii_general_ci", "1"},
		[]string{"binary", "Binary pseudo charset", "binary", "1"},
		[]string{"latin1", "cp1252 West European", "latin1_swedish_ci", "1"},
		[]string{"utf8mb3", "UTF-8 Unicode", "utf8mb3_general_ci", "3"},
		[]string{"utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", "4"},
	),
}

var engines = &table{
	cols: []column{{"Engine", sqltypes.VarChar}, {"Support", sqltypes.VarChar}, {"Comment", sqltypes.VarChar},
		{"Transactions", sqltypes.VarChar}, {"XA", sqltypes.VarChar}, {"Savepoints", sqltypes.VarChar}},
	// Tables say ENGINE=InnoDB (see tableEngine); they are DuckDB's.
	rows: strRows([]string{tableEngine, "DEFAULT", "DuckDB tables: transactions, MVCC, no row locks", "YES", "NO", "NO"}),
}

// likeMatch reports whether s matches the SQL LIKE pattern, ignoring ASCII
// case: % matches any run, _ one character, and \ escapes either.
func likeMatch(pattern, s string) bool {
	p, t := strings.ToLower(pattern), strings.ToLower(s)
	// Iterative matching with backtracking to the last %.
	pi, ti := 0, 0
	starP, starT := -1, 0
	for ti < len(t) {
		if pi < len(p) {
			switch c := p[pi]; {
			case c == '%':
				starP, starT = pi, ti
				pi++
				continue
			case c == '\\' && pi+1 < len(p):
				if p[pi+1] == t[ti] {
					pi += 2
					ti++
					continue
				}
			case c == '_' || c == t[ti]:
				pi++
				ti++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starT++
		pi, ti = starP+1, starT
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}
