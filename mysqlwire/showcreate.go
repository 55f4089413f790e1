package mysqlwire

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/quiverdata/quiver/engine"
)

// SHOW CREATE TABLE and SHOW CREATE VIEW print a table as MySQL 8 does, so
// that tools which parse the statement (SQLAlchemy's reflection) or replay
// it (mysqldump, into MySQL or MariaDB) read a MySQL table:
//
//	CREATE TABLE `orders` (
//	  `order_id` bigint NOT NULL,
//	  `status` longtext NOT NULL,
//	  `tags` json DEFAULT NULL,
//	  PRIMARY KEY (`order_id`),
//	  KEY `orders_customer_id_customer_id_fkey` (`customer_id`),
//	  CONSTRAINT `orders_customer_id_customer_id_fkey` FOREIGN KEY (`customer_id`) REFERENCES `customers` (`customer_id`)
//	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci
//
// Everything comes from INFORMATION_SCHEMA (infoschema.go), so the two
// agree: types from mysqlTypes, keys and indexes from STATISTICS, foreign
// keys from KEY_COLUMN_USAGE, checks from CHECK_CONSTRAINTS.
//
// Names are quoted as MySQL quotes them under the sql_mode the client sees
// (see showDialect): in double quotes while sql_mode has ANSI_QUOTES, which
// quiver's default has and SQLAlchemy reads; in backquotes for a client that
// set a sql_mode without it, as mysqldump does before it dumps.
//
// The table's collation is the one quiver reports everywhere
// (defaultCollation, @@collation_database): utf8mb4_general_ci, which
// MySQL and MariaDB both know. MySQL 8's own default, utf8mb4_0900_ai_ci,
// fails a restore into MariaDB before 11.4.

// sqlDialect is how SHOW CREATE spells names and strings for a session.
type sqlDialect struct {
	quote            byte // '`', or '"' under ANSI_QUOTES
	backslashEscapes bool // backslashes in strings are escapes: no NO_BACKSLASH_ESCAPES
}

// showDialect is the dialect of the sql_mode the client asked for: the one
// it set, or quiver's default (which has ANSI_QUOTES and
// NO_BACKSLASH_ESCAPES). DuckDB reads both quotes either way.
func (s *session) showDialect() sqlDialect {
	mode := systemVars[systemVarIndex["sql_mode"]].value
	if v, set := s.vars["sql_mode"]; set {
		mode = ""
		if v != nil {
			mode = *v
		}
	}
	d := sqlDialect{quote: '`', backslashEscapes: true}
	for _, m := range strings.Split(strings.ToUpper(mode), ",") {
		switch strings.TrimSpace(m) {
		case "ANSI_QUOTES", "ANSI":
			d.quote = '"'
		case "NO_BACKSLASH_ESCAPES":
			d.backslashEscapes = false
		}
	}
	return d
}

// ident quotes a name.
func (d sqlDialect) ident(name string) string {
	q := string(d.quote)
	return q + strings.ReplaceAll(name, q, q+q) + q
}

// idents quotes names and joins them with sep.
func (d sqlDialect) idents(names []string, sep string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = d.ident(n)
	}
	return strings.Join(out, sep)
}

// literal quotes a string as MySQL's SHOW CREATE does: ' doubled, and
// with backslash escapes NUL, newline, carriage return and \ escaped.
func (d sqlDialect) literal(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			b.WriteString("''")
		case !d.backslashEscapes:
			b.WriteByte(c)
		case c == 0:
			b.WriteString(`\0`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// mysqlString quotes s as a string literal of the MySQL queries this file
// hands to translateInfoSchemaQuery.
func mysqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// infoSchemaRows runs a MySQL query over INFORMATION_SCHEMA and returns its
// rows as text.
func infoSchemaRows(ctx context.Context, conn *engine.Conn, query string) ([][]*string, error) {
	sql, ok := translateInfoSchemaQuery(query)
	if !ok {
		return nil, fmt.Errorf("translate information_schema query: %.80s", query)
	}
	return queryStrings(ctx, conn, sql)
}

// str is a cell's text, "" for NULL.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

var showCreateViewRe = regexp.MustCompile(`(?i)^SHOW\s+CREATE\s+VIEW\b`)

// erWrongObject is ER_WRONG_OBJECT: SHOW CREATE VIEW of a table.
const erWrongObject = 1347

// showCreateTable is SHOW CREATE TABLE and SHOW CREATE VIEW. m holds:
// whole, name.
func (s *session) showCreateTable(ctx context.Context, m []string) (compatOutcome, error) {
	parts, ok := parseQualifiedName(m[1])
	if !ok {
		return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[1])
	}
	schema, err := s.currentSchema(ctx)
	if err != nil {
		return compatOutcome{}, err
	}
	if len(parts) == 2 {
		schema = parts[0]
	}
	name := parts[len(parts)-1]
	conn, err := s.engineConn(ctx)
	if err != nil {
		return compatOutcome{}, err
	}
	where := " WHERE TABLE_SCHEMA = " + mysqlString(schema) + " AND TABLE_NAME = " + mysqlString(name)
	tables, err := infoSchemaRows(ctx, conn, "SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT FROM INFORMATION_SCHEMA.TABLES"+where)
	if err != nil {
		return compatOutcome{}, err
	}
	if len(tables) == 0 {
		return compatOutcome{}, errorf(mysql.ERNoSuchTable, sqlStateNoSuchTable, "Table '%s.%s' doesn't exist", schema, name)
	}
	name = str(tables[0][0]) // as the catalog spells it
	d := s.showDialect()
	if str(tables[0][1]) == "VIEW" {
		views, err := infoSchemaRows(ctx, conn, "SELECT VIEW_DEFINITION, DEFINER FROM INFORMATION_SCHEMA.VIEWS"+where)
		if err != nil {
			return compatOutcome{}, err
		}
		if len(views) == 0 {
			return compatOutcome{}, errorf(mysql.ERNoSuchTable, sqlStateNoSuchTable, "Table '%s.%s' doesn't exist", schema, name)
		}
		create := createView(d, name, str(views[0][0]), str(views[0][1]))
		t := &table{cols: []column{{"View", sqltypes.VarChar}, {"Create View", sqltypes.VarChar},
			{"character_set_client", sqltypes.VarChar}, {"collation_connection", sqltypes.VarChar}},
			rows: [][]*string{{&name, &create, strPtr("utf8mb4"), strPtr(defaultCollation)}}}
		return compatOutcome{res: t.result()}, nil
	}
	if showCreateViewRe.MatchString(m[0]) {
		return compatOutcome{}, errorf(erWrongObject, mysql.SSUnknownSQLState, "'%s.%s' is not VIEW", schema, name)
	}
	create, err := createTable(ctx, conn, d, schema, name, str(tables[0][2]))
	if err != nil {
		return compatOutcome{}, err
	}
	t := &table{cols: []column{{"Table", sqltypes.VarChar}, {"Create Table", sqltypes.VarChar}}, rows: [][]*string{{&name, &create}}}
	return compatOutcome{res: t.result()}, nil
}

// createTable builds the CREATE TABLE statement of schema.name.
func createTable(ctx context.Context, conn *engine.Conn, d sqlDialect, schema, name, comment string) (string, error) {
	where := " WHERE TABLE_SCHEMA = " + mysqlString(schema) + " AND TABLE_NAME = " + mysqlString(name)
	cols, err := infoSchemaRows(ctx, conn, "SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA, COLUMN_COMMENT "+
		"FROM INFORMATION_SCHEMA.COLUMNS"+where+" ORDER BY ORDINAL_POSITION")
	if err != nil {
		return "", err
	}
	// Primary key first, then unique keys, then the others: InnoDB's order.
	keys, err := infoSchemaRows(ctx, conn, "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM INFORMATION_SCHEMA.STATISTICS"+where+
		" ORDER BY INDEX_NAME <> 'PRIMARY', NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX")
	if err != nil {
		return "", err
	}
	fks, err := infoSchemaRows(ctx, conn, "SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "+
		"FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE"+where+" AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION")
	if err != nil {
		return "", err
	}
	checks, err := infoSchemaRows(ctx, conn, "SELECT c.CONSTRAINT_NAME, c.CHECK_CLAUSE FROM INFORMATION_SCHEMA.CHECK_CONSTRAINTS AS c "+
		"JOIN INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS t ON t.CONSTRAINT_SCHEMA = c.CONSTRAINT_SCHEMA AND t.CONSTRAINT_NAME = c.CONSTRAINT_NAME "+
		"WHERE t.CONSTRAINT_TYPE = 'CHECK' AND t.TABLE_SCHEMA = "+mysqlString(schema)+" AND t.TABLE_NAME = "+mysqlString(name)+
		" ORDER BY c.CONSTRAINT_NAME")
	if err != nil {
		return "", err
	}

	var lines []string
	for _, c := range cols {
		lines = append(lines, columnDefinition(d, str(c[0]), str(c[1]), str(c[2]), str(c[3]) == "YES", c[4], str(c[5]), str(c[6])))
	}
	for i := 0; i < len(keys); {
		keyName, nonUnique := str(keys[i][0]), str(keys[i][1])
		var cols []string
		for ; i < len(keys) && str(keys[i][0]) == keyName; i++ {
			cols = append(cols, str(keys[i][2]))
		}
		switch {
		case keyName == "PRIMARY":
			lines = append(lines, "  PRIMARY KEY ("+d.idents(cols, ",")+")")
		case nonUnique == "0":
			lines = append(lines, "  UNIQUE KEY "+d.ident(keyName)+" ("+d.idents(cols, ",")+")")
		default:
			lines = append(lines, "  KEY "+d.ident(keyName)+" ("+d.idents(cols, ",")+")")
		}
	}
	for i := 0; i < len(fks); {
		fkName, refSchema, refTable := str(fks[i][0]), str(fks[i][2]), str(fks[i][3])
		var local, foreign []string
		for ; i < len(fks) && str(fks[i][0]) == fkName; i++ {
			local = append(local, str(fks[i][1]))
			foreign = append(foreign, str(fks[i][4]))
		}
		ref := d.ident(refTable)
		if !strings.EqualFold(refSchema, schema) {
			ref = d.ident(refSchema) + "." + ref
		}
		lines = append(lines, "  CONSTRAINT "+d.ident(fkName)+" FOREIGN KEY ("+d.idents(local, ", ")+") REFERENCES "+
			ref+" ("+d.idents(foreign, ", ")+")")
	}
	for _, c := range checks {
		lines = append(lines, "  CONSTRAINT "+d.ident(str(c[0]))+" CHECK ("+str(c[1])+")")
	}

	var b strings.Builder
	b.WriteString("CREATE TABLE " + d.ident(name) + " (\n")
	b.WriteString(strings.Join(lines, ",\n"))
	b.WriteString("\n) ENGINE=" + tableEngine)
	next, err := nextAutoIncrement(ctx, conn, schema, name)
	if err != nil {
		return "", err
	}
	if next > 1 {
		fmt.Fprintf(&b, " AUTO_INCREMENT=%d", next)
	}
	b.WriteString(" DEFAULT CHARSET=utf8mb4 COLLATE=" + defaultCollation)
	if comment != "" {
		b.WriteString(" COMMENT=" + d.literal(comment))
	}
	return b.String(), nil
}

// nextAutoIncrement is the value the table's AUTO_INCREMENT column (a
// DEFAULT nextval('seq'), as a restore of MySQL DDL makes it) hands out
// next, as MySQL's table option AUTO_INCREMENT=N says, so a dump restores
// the counter too; 0 when the table has no such column.
func nextAutoIncrement(ctx context.Context, conn *engine.Conn, schema, table string) (int64, error) {
	rows, err := queryStrings(ctx, conn, `SELECT column_default FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = `+engine.QuoteString(schema)+
		` AND table_name = `+engine.QuoteString(table)+` AND column_default ILIKE 'nextval(%' LIMIT 1`)
	if err != nil || len(rows) == 0 || rows[0][0] == nil {
		return 0, err
	}
	seqSchema, seq, ok := sequenceOf(*rows[0][0])
	if !ok {
		return 0, nil
	}
	if seqSchema == "" {
		seqSchema = schema
	}
	rows, err = queryStrings(ctx, conn, `SELECT coalesce(last_value + increment_by, start_value)::VARCHAR FROM duckdb_sequences()
WHERE database_name = current_database() AND schema_name = `+engine.QuoteString(seqSchema)+` AND sequence_name = `+engine.QuoteString(seq))
	if err != nil || len(rows) == 0 || rows[0][0] == nil {
		return 0, err
	}
	var n int64
	if _, err := fmt.Sscan(*rows[0][0], &n); err != nil {
		return 0, nil
	}
	return n, nil
}

// sequenceOf reads the sequence a default nextval('…') draws from: its
// schema (empty when not given) and name.
func sequenceOf(dflt string) (schema, name string, ok bool) {
	lit, ok := strings.CutPrefix(strings.TrimSpace(dflt), "nextval('")
	if !ok {
		return "", "", false
	}
	lit, ok = strings.CutSuffix(lit, "')")
	if !ok {
		return "", "", false
	}
	lit = strings.ReplaceAll(lit, "''", "'")
	var parts []string
	for lit != "" {
		var part string
		if strings.HasPrefix(lit, `"`) {
			end := 1
			for end < len(lit) {
				if lit[end] == '"' {
					if end+1 < len(lit) && lit[end+1] == '"' {
						end += 2
						continue
					}
					break
				}
				end++
			}
			if end >= len(lit) {
				return "", "", false
			}
			part, lit = strings.ReplaceAll(lit[1:end], `""`, `"`), lit[end+1:]
		} else {
			i := strings.IndexByte(lit, '.')
			if i < 0 {
				i = len(lit)
			}
			part, lit = lit[:i], lit[i:]
		}
		parts = append(parts, part)
		if lit == "" {
			break
		}
		if lit[0] != '.' {
			return "", "", false
		}
		lit = lit[1:]
	}
	switch len(parts) {
	case 1:
		return "", parts[0], true
	case 2:
		return parts[0], parts[1], true
	case 3:
		return parts[1], parts[2], true
	}
	return "", "", false
}

// columnDefinition is one column's line of CREATE TABLE, from its row of
// INFORMATION_SCHEMA.COLUMNS, with MySQL's rules for DEFAULT: a column
// that may be NULL and has no default says DEFAULT NULL, unless it is a
// longtext or longblob, which have no literal defaults (their defaults are
// expressions, as is any default that is not a literal).
func columnDefinition(d sqlDialect, name, colType, dataType string, nullable bool, dflt *string, extra, comment string) string {
	var b strings.Builder
	b.WriteString("  " + d.ident(name) + " " + colType)
	switch {
	case !nullable:
		b.WriteString(" NOT NULL")
	case dataType == "timestamp":
		b.WriteString(" NULL") // a TIMESTAMP is NOT NULL unless it says NULL
	}
	noLiteral := dataType == "longtext" || dataType == "longblob" || dataType == "json"
	switch {
	case extra == "auto_increment":
		b.WriteString(" AUTO_INCREMENT")
	case dflt != nil && extra == "DEFAULT_GENERATED" && strings.HasPrefix(*dflt, "CURRENT_TIMESTAMP"):
		b.WriteString(" DEFAULT " + *dflt)
	case dflt != nil && extra == "DEFAULT_GENERATED":
		b.WriteString(" DEFAULT (" + *dflt + ")")
	case dflt != nil && noLiteral:
		introducer := "_utf8mb4"
		if dataType == "longblob" {
			introducer = "_binary"
		}
		b.WriteString(" DEFAULT (" + introducer + d.literal(*dflt) + ")")
	case dflt != nil:
		b.WriteString(" DEFAULT " + d.literal(*dflt))
	case nullable && dataType != "longtext" && dataType != "longblob":
		b.WriteString(" DEFAULT NULL")
	}
	if comment != "" {
		b.WriteString(" COMMENT " + d.literal(comment))
	}
	return b.String()
}

// createView builds SHOW CREATE VIEW's statement. The query is DuckDB's,
// its quoted names requoted for the dialect.
func createView(d sqlDialect, name, query, definer string) string {
	user, host, _ := strings.Cut(definer, "@")
	return "CREATE ALGORITHM=UNDEFINED DEFINER=" + d.ident(user) + "@" + d.ident(host) + " SQL SECURITY DEFINER VIEW " +
		d.ident(name) + " AS " + requote(query, d.quote)
}

// requote rewrites the "quoted" names of DuckDB SQL with quote.
func requote(sql string, quote byte) string {
	if quote == '"' {
		return sql
	}
	var b strings.Builder
	last := 0
	scanSQL(sql, func(kind tokenKind, start, end int) {
		if kind != tokString || sql[start] != '"' || end-start < 2 || sql[end-1] != '"' {
			return
		}
		b.WriteString(sql[last:start])
		name := strings.ReplaceAll(sql[start+1:end-1], `""`, `"`)
		b.WriteString(sqlDialect{quote: quote}.ident(name))
		last = end
	})
	b.WriteString(sql[last:])
	return b.String()
}
