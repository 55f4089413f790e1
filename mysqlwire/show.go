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

// showColumns describes a table's columns as MySQL's SHOW COLUMNS does;
// DESCRIBE t answers the same way. m holds: whole, FULL, table, schema,
// filter kind, filter expression.
func (s *session) showColumns(ctx context.Context, m []string) (compatOutcome, error) {
	parts, ok := parseQualifiedName(m[2])
	if !ok {
		return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[2])
	}
	dbArg := m[3]
	if len(parts) == 2 {
		dbArg = engine.QuoteIdent(parts[0])
	}
	_, schemaExpr, err := s.schemaArg(ctx, dbArg)
	if err != nil {
		return compatOutcome{}, err
	}
	full := ""
	if m[1] != "" {
		full = `, NULL::VARCHAR AS "Collation", 'select,insert,update,references' AS "Privileges", '' AS "Comment"`
	}
	sql := fmt.Sprintf(`SELECT column_name AS "Field", data_type AS "Type", is_nullable AS "Null", '' AS "Key", column_default AS "Default", '' AS "Extra"%s`+
		` FROM information_schema.columns WHERE table_catalog = current_database() AND table_schema = %s AND table_name = %s`,
		full, schemaExpr, engine.QuoteString(parts[len(parts)-1]))
	return filterSQL(sql, "column_name", m[4], m[5], "ordinal_position")
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
	parts, ok := parseQualifiedName(m[1])
	if !ok {
		return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[1])
	}
	dbArg := m[2]
	if len(parts) == 2 {
		dbArg = engine.QuoteIdent(parts[0])
	}
	_, schemaExpr, err := s.schemaArg(ctx, dbArg)
	if err != nil {
		return compatOutcome{}, err
	}
	sql := fmt.Sprintf(showKeysSQL, schemaExpr, engine.QuoteString(parts[len(parts)-1]))
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

// showCreateTable returns DuckDB's CREATE statement of a table or view.
func (s *session) showCreateTable(ctx context.Context, m []string) (compatOutcome, error) {
	parts, ok := parseQualifiedName(m[1])
	if !ok {
		return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[1])
	}
	dbArg := ""
	if len(parts) == 2 {
		dbArg = engine.QuoteIdent(parts[0])
	}
	schema, schemaExpr, err := s.schemaArg(ctx, dbArg)
	if err != nil {
		return compatOutcome{}, err
	}
	name := parts[len(parts)-1]
	conn, err := s.engineConn(ctx)
	if err != nil {
		return compatOutcome{}, err
	}
	where := fmt.Sprintf("database_name = current_database() AND schema_name = %s", schemaExpr)
	rows, err := queryStrings(ctx, conn, fmt.Sprintf(
		`SELECT sql FROM duckdb_tables() WHERE %[1]s AND table_name = %[2]s UNION ALL SELECT sql FROM duckdb_views() WHERE %[1]s AND view_name = %[2]s`,
		where, engine.QuoteString(name)))
	if err != nil {
		return compatOutcome{}, err
	}
	if len(rows) == 0 {
		return compatOutcome{}, errorf(mysql.ERNoSuchTable, sqlStateNoSuchTable, "Table '%s.%s' doesn't exist", schema, name)
	}
	t := &table{cols: []column{{"Table", sqltypes.VarChar}, {"Create Table", sqltypes.VarChar}}, rows: [][]*string{{&name, rows[0][0]}}}
	return compatOutcome{res: t.result()}, nil
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
	rows: strRows([]string{"DuckDB", "DEFAULT", "DuckDB, an embedded analytical database", "YES", "NO", "NO"}),
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
