package mysqlwire

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/engine"
)

// MySQL DDL, as a dump file or a MySQL tool writes it, on DuckDB.
//
// A CREATE statement runs on DuckDB as written whenever DuckDB can run it.
// Only when DuckDB cannot (backquotes aside, which the lexer rewrites:
// ENGINE=…, int(11), AUTO_INCREMENT, KEY lines, longtext, …) is it read
// with vitess's MySQL parser and written again as DuckDB DDL:
//
//   - types as in mysqlTypeToDuck (tinyint(1) is BOOLEAN, datetime
//     TIMESTAMP, timestamp TIMESTAMPTZ, *text, char(n) and set VARCHAR,
//     *blob, binary and bit(n) BLOB, year SMALLINT, a longtext with CHECK
//     (json_valid(c)), MariaDB's json, is JSON, …);
//   - NOT NULL, DEFAULT (current_timestamp() and the like as DuckDB's
//     functions) and COMMENT (as COMMENT ON) are kept; ON UPDATE, CHARACTER
//     SET and COLLATE are dropped;
//   - AUTO_INCREMENT becomes a sequence, <table>_<column>_seq, starting at
//     the table's AUTO_INCREMENT=N, as the column's DEFAULT nextval(…): it
//     numbers rows inserted without the column (not those inserted with
//     NULL or 0), and values inserted explicitly do not move it on;
//   - PRIMARY KEY, UNIQUE, CHECK and FOREIGN KEY are kept, a foreign key's
//     ON DELETE/ON UPDATE action dropped (DuckDB has none); KEY and INDEX
//     lines become CREATE INDEX (named <table>_<name> when the schema has
//     an index of that name already), except the one InnoDB keeps for a
//     foreign key, on its columns; FULLTEXT and SPATIAL ones are dropped;
//   - table options (ENGINE, CHARSET, COLLATE, ROW_FORMAT, …) and
//     PARTITION BY are dropped, COMMENT='…' kept as COMMENT ON TABLE.
//
// A view (CREATE ALGORITHM=… DEFINER=… SQL SECURITY … VIEW) keeps its name,
// columns and query, printed for DuckDB as information_schema queries are.
//
// With foreign_key_checks=0, as every dump file sets it, a table's foreign
// keys cannot be created as MySQL would: DuckDB checks every row as it is
// inserted, and a dump inserts in alphabetical order, a referencing table
// before the table it references. So the table is created without them,
// and when the session sets foreign_key_checks back to 1 (the dump's last
// lines do), each such table is rebuilt with its foreign keys, in one
// transaction: renamed aside, created again, its rows copied, the old one
// dropped, its indexes created again. Rows that break a foreign key then
// make that SET fail, and the tables stay without them; so do the tables
// of a session that ends with foreign_key_checks still 0.
//
// CREATE DATABASE is CREATE SCHEMA (charset options dropped), DROP
// DATABASE is DROP SCHEMA … CASCADE, ALTER DATABASE and ALTER TABLE …
// DISABLE KEYS / ENABLE KEYS do nothing.

// ddlRules answer the DDL statements that need no translation of a table.
var ddlRules = []compatRule{
	rule(`CREATE\s+DATABASE\s+(IF\s+NOT\s+EXISTS\s+)?(\S+)(?:\s+.*)?`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
		return s.createSchema(m[1] != "", m[2])
	}),
	rule(`CREATE\s+SCHEMA\s+(IF\s+NOT\s+EXISTS\s+)?(\S+)\s+(?:DEFAULT\s+)?(?:CHARACTER\s+SET|CHARSET|COLLATE)\b.*`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
		return s.createSchema(m[1] != "", m[2])
	}),
	rule(`DROP\s+DATABASE\s+(IF\s+EXISTS\s+)?(\S+)`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
		parts, ok := parseQualifiedName(m[2])
		if !ok || len(parts) != 1 {
			return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[2])
		}
		ifExists := ""
		if m[1] != "" {
			ifExists = "IF EXISTS "
		}
		return sqlOutcome("DROP SCHEMA " + ifExists + engine.QuoteIdent(parts[0]) + " CASCADE"), nil
	}),
	rule(`DROP\s+(TABLE|VIEW)\s+(IF\s+EXISTS\s+)?(.+?)(\s+(?:RESTRICT|CASCADE))?`, (*session).dropTables),
	rule(`ALTER\s+(?:DATABASE|SCHEMA)\b.*`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
		return okOutcome(), nil
	}),
	rule(`ALTER\s+TABLE\s+(\S+)\s+(?:DISABLE|ENABLE)\s+KEYS`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
		name, ok := parseQualifiedName(m[1])
		if !ok {
			return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[1])
		}
		if err := s.checkTablesExist(ctx, [][]string{name}); err != nil {
			return compatOutcome{}, err
		}
		return okOutcome(), nil
	}),
}

// dropTables is DROP TABLE|VIEW [IF EXISTS] name, … [RESTRICT|CASCADE].
// MySQL looks an unqualified name up in the current database only; DuckDB
// would fall back to the main schema (its search path always ends there),
// so that DROP TABLE IF EXISTS t in a dump restored into db drops main.t
// when db has none. So, out of main, each name is qualified with the
// current schema. Several names are dropped one after the other, all or
// none.
func (s *session) dropTables(ctx context.Context, m []string) (compatOutcome, error) {
	schema, err := s.currentSchema(ctx)
	if err != nil {
		return compatOutcome{}, err
	}
	var stmts []string
	for _, item := range splitTopLevel(m[3], ',') {
		name, ok := parseQualifiedName(strings.TrimSpace(item))
		if !ok {
			return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", strings.TrimSpace(item))
		}
		if len(name) == 1 && !strings.EqualFold(schema, "main") {
			name = []string{schema, name[0]}
		}
		stmt := "DROP " + strings.ToUpper(m[1]) + " "
		if m[2] != "" {
			stmt += "IF EXISTS "
		}
		stmts = append(stmts, stmt+joinQualified(name)+strings.ToUpper(m[4]))
	}
	if len(stmts) == 1 {
		return sqlOutcome(stmts[0]), nil
	}
	if err := s.execAll(ctx, stmts); err != nil {
		return compatOutcome{}, err
	}
	return okOutcome(), nil
}

// joinQualified quotes name or schema.name for DuckDB.
func joinQualified(name []string) string {
	q := make([]string, len(name))
	for i, n := range name {
		q[i] = engine.QuoteIdent(n)
	}
	return strings.Join(q, ".")
}

func (s *session) createSchema(ifNotExists bool, name string) (compatOutcome, error) {
	parts, ok := parseQualifiedName(name)
	if !ok || len(parts) != 1 {
		return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", name)
	}
	sql := "CREATE SCHEMA "
	if ifNotExists {
		sql += "IF NOT EXISTS "
	}
	return sqlOutcome(sql + engine.QuoteIdent(parts[0])), nil
}

// compatDDL answers CREATE, DROP and ALTER: text is the statement,
// mysqlText the same with its executable comments' bodies. A statement no
// rule answers runs on DuckDB; a CREATE DuckDB cannot run is translated.
func (s *session) compatDDL(ctx context.Context, word, text, mysqlText string) (compatOutcome, bool, error) {
	for _, r := range ddlRules {
		if m := r.re.FindStringSubmatch(mysqlText); m != nil {
			out, err := r.run(s, ctx, m)
			return out, true, err
		}
	}
	duck := duckSQL(text)
	if word != "CREATE" {
		return sqlOutcome(duck), true, nil
	}
	var ddl *sqlparser.DDL
	if !s.foreignKeyChecks() {
		// A table with foreign keys must be translated to have them
		// deferred, even when DuckDB could create it.
		if d, ok := parseMySQLDDL(mysqlText); ok && d.TableSpec != nil && hasForeignKeys(d.TableSpec) {
			ddl = d
		}
	}
	if ddl == nil {
		conn, err := s.engineConn(ctx)
		if err != nil {
			return compatOutcome{}, true, err
		}
		stmt, duckErr := conn.Prepare(ctx, duck)
		if duckErr == nil {
			stmt.Close()
			return sqlOutcome(duck), true, nil
		}
		d, ok := parseMySQLDDL(mysqlText)
		if !ok || d.Action != sqlparser.CreateStr || d.TableSpec == nil && d.ViewSpec == nil {
			return sqlOutcome(duck), true, nil // DuckDB's error, from the statement as written
		}
		ddl = d
	}
	var (
		stmts []string
		err   error
	)
	if ddl.ViewSpec != nil {
		stmts = []string{mysqlViewToDuck(ddl)}
	} else {
		stmts, err = s.translateCreateTable(ctx, ddl)
	}
	if err != nil {
		return compatOutcome{}, true, err
	}
	if err := s.execAll(ctx, stmts); err != nil {
		return compatOutcome{}, true, err
	}
	return okOutcome(), true, nil
}

// parseMySQLDDL parses a CREATE statement as MySQL. MariaDB's type
// spellings vitess does not know are read as their MySQL equivalents
// first: year(4) as year, uuid as char(36), inet4 and inet6 as
// varchar(15) and varchar(39).
func parseMySQLDDL(sql string) (*sqlparser.DDL, bool) {
	sql = mariaTypesRe.ReplaceAllStringFunc(sql, func(m string) string {
		sub := mariaTypesRe.FindStringSubmatch(m)
		typ := "year" // year(4)
		switch strings.ToLower(sub[2]) {
		case "uuid":
			typ = "char(36)"
		case "inet4":
			typ = "varchar(15)"
		case "inet6":
			typ = "varchar(39)"
		}
		return sub[1] + typ
	})
	stmt, err := sqlparser.ParseWithOptions(context.Background(), escapeBackslashes(sql), sqlparser.ParserOptions{AnsiQuotes: true})
	if err != nil {
		return nil, false
	}
	d, ok := stmt.(*sqlparser.DDL)
	return d, ok
}

// mariaTypesRe finds a MariaDB-only type right after a column's quoted
// name, as SHOW CREATE TABLE prints it.
var mariaTypesRe = regexp.MustCompile("(?i)((?:^|[(,])\\s*(?:`[^`]*`|\"[^\"]*\")\\s+)(year\\s*\\(\\s*\\d+\\s*\\)|(?:uuid|inet4|inet6)\\b)")

func hasForeignKeys(spec *sqlparser.TableSpec) bool {
	for _, c := range spec.Columns {
		if c.Type.ForeignKeyDef != nil {
			return true
		}
	}
	for _, c := range spec.Constraints {
		if _, ok := c.Details.(*sqlparser.ForeignKeyDefinition); ok {
			return true
		}
	}
	return false
}

// vitess's column key options, in the order of its (unexported) constants.
const (
	colKeyPrimary    sqlparser.ColumnKeyOption = 1
	colKeySpatial    sqlparser.ColumnKeyOption = 2
	colKeyUnique     sqlparser.ColumnKeyOption = 3
	colKeyUniqueKey  sqlparser.ColumnKeyOption = 4
	colKeyIndex      sqlparser.ColumnKeyOption = 5
	colKeyFulltext   sqlparser.ColumnKeyOption = 6
	maxDuckPrecision                           = 38
)

// translateCreateTable writes a MySQL CREATE TABLE as the DuckDB statements that
// make the same table. With foreign_key_checks=0 the foreign keys are left
// out and the table is put on the session's deferred list.
func (s *session) translateCreateTable(ctx context.Context, d *sqlparser.DDL) ([]string, error) {
	spec := d.TableSpec
	schema := d.Table.DbQualifier.String()
	name := d.Table.Name.String()
	qname := engine.QuoteIdent(name)
	if schema != "" {
		qname = engine.QuoteIdent(schema) + "." + qname
	}

	// Columns that MariaDB's json type makes longtext with a json_valid
	// check, and the other checks.
	jsonCols := map[string]bool{}
	var checks []string
	seen := map[*sqlparser.ConstraintDefinition]bool{}
	var fks []*sqlparser.ForeignKeyDefinition
	addConstraint := func(c *sqlparser.ConstraintDefinition) {
		if c == nil || seen[c] {
			return
		}
		seen[c] = true
		switch det := c.Details.(type) {
		case *sqlparser.CheckConstraintDefinition:
			if col, ok := jsonValidColumn(det.Expr); ok {
				jsonCols[strings.ToLower(col)] = true
				return
			}
			if det.Enforced {
				checks = append(checks, "CHECK ("+mysqlExprToDuck(det.Expr)+")")
			}
		case *sqlparser.ForeignKeyDefinition:
			fks = append(fks, det)
		}
	}
	for _, c := range spec.Constraints {
		addConstraint(c)
	}
	for _, c := range spec.Columns {
		addConstraint(c.Type.Constraint)
	}

	autoStart := "1"
	var tableComment string
	for _, o := range spec.TableOpts {
		switch strings.ToUpper(o.Name) {
		case "AUTO_INCREMENT":
			if _, err := strconv.ParseUint(o.Value, 10, 64); err == nil {
				autoStart = o.Value
			}
		case "COMMENT":
			tableComment = o.Value
		}
	}

	var (
		defs, pre, post []string
		indexes         []string // post statements creating indexes
	)
	for _, c := range spec.Columns {
		ct := &c.Type
		col := c.Name.String()
		typ, err := mysqlTypeToDuck(ct, jsonCols[strings.ToLower(col)])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", col, err)
		}
		def := engine.QuoteIdent(col) + " " + typ
		switch {
		case bool(ct.Autoincrement):
			seq := name + "_" + col + "_seq"
			qseq := engine.QuoteIdent(seq)
			if schema != "" {
				qseq = engine.QuoteIdent(schema) + "." + qseq
			}
			verb := "CREATE OR REPLACE SEQUENCE "
			if d.IfNotExists {
				verb = "CREATE SEQUENCE IF NOT EXISTS "
			}
			if d.Temporary {
				verb = "CREATE OR REPLACE TEMPORARY SEQUENCE "
			}
			pre = append(pre, verb+qseq+" START WITH "+autoStart)
			def += " DEFAULT nextval(" + engine.QuoteString(qseq) + ")"
		case ct.Default != nil:
			if dv, ok := mysqlDefaultToDuck(ct.Default, typ); ok {
				def += " DEFAULT " + dv
			}
		}
		if ct.NotNull {
			def += " NOT NULL"
		}
		switch ct.KeyOpt {
		case colKeyPrimary:
			def += " PRIMARY KEY"
		case colKeyUnique, colKeyUniqueKey:
			def += " UNIQUE"
		case colKeyIndex:
			indexes = append(indexes, createIndexSQL(name, qname, col, []string{col}))
		}
		if ct.ForeignKeyDef != nil {
			fk := *ct.ForeignKeyDef
			if len(fk.Source) == 0 {
				fk.Source = sqlparser.Columns{c.Name}
			}
			fks = append(fks, &fk)
		}
		defs = append(defs, def)
		if ct.Comment != nil && len(ct.Comment.Val) > 0 {
			post = append(post, "COMMENT ON COLUMN "+qname+"."+engine.QuoteIdent(col)+" IS "+engine.QuoteString(string(ct.Comment.Val)))
		}
	}
	fkIndex := map[string]bool{} // a foreign key's columns
	for _, fk := range fks {
		var cols []string
		for _, c := range fk.Source {
			cols = append(cols, c.String())
		}
		fkIndex[strings.ToLower(strings.Join(cols, "\x00"))] = true
	}
	for _, idx := range spec.Indexes {
		var cols []string
		for _, ic := range idx.Columns {
			cols = append(cols, ic.Column.String())
		}
		switch {
		case idx.Info.Primary:
			defs = append(defs, "PRIMARY KEY ("+quoteIdentList(cols)+")")
		case idx.Info.Unique:
			defs = append(defs, "UNIQUE ("+quoteIdentList(cols)+")")
		case idx.Info.Fulltext || idx.Info.Spatial || idx.Info.Vector:
			// DuckDB has no such index.
		case fkIndex[strings.ToLower(strings.Join(cols, "\x00"))]:
			// The index InnoDB keeps for a foreign key (SHOW CREATE TABLE
			// lists it as a KEY); DuckDB's foreign key has its own.
		default:
			indexes = append(indexes, createIndexSQL(name, qname, idx.Info.Name.String(), cols))
		}
	}
	defs = append(defs, checks...)
	var fkDefs []string
	var refs [][]string
	for _, fk := range fks {
		var src, dst []string
		for _, c := range fk.Source {
			src = append(src, c.String())
		}
		for _, c := range fk.ReferencedColumns {
			dst = append(dst, c.String())
		}
		ref := engine.QuoteIdent(fk.ReferencedTable.Name.String())
		refName := []string{fk.ReferencedTable.Name.String()}
		if q := fk.ReferencedTable.DbQualifier.String(); q != "" {
			ref = engine.QuoteIdent(q) + "." + ref
			refName = []string{q, fk.ReferencedTable.Name.String()}
		}
		fkDef := "FOREIGN KEY (" + quoteIdentList(src) + ") REFERENCES " + ref
		if len(dst) > 0 {
			fkDef += " (" + quoteIdentList(dst) + ")"
		}
		fkDefs = append(fkDefs, fkDef)
		refs = append(refs, refName)
	}
	if tableComment != "" {
		post = append(post, "COMMENT ON TABLE "+qname+" IS "+engine.QuoteString(tableComment))
	}

	create := "CREATE "
	if d.Temporary {
		create += "TEMPORARY "
	}
	create += "TABLE "
	if d.IfNotExists {
		create += "IF NOT EXISTS "
	}
	create += qname + " (\n\t"
	withFKs := create + strings.Join(append(append([]string(nil), defs...), fkDefs...), ",\n\t") + "\n)"
	stmt := withFKs
	if len(fkDefs) > 0 && !s.foreignKeyChecks() {
		stmt = create + strings.Join(defs, ",\n\t") + "\n)"
		resolved, err := s.resolveSchema(ctx, schema)
		if err != nil {
			return nil, err
		}
		s.deferForeignKeys(deferredTable{schema: resolved, name: name, create: withFKs, refs: refs, comments: post})
	}

	indexes, err := s.uniqueIndexNames(ctx, schema, name, indexes)
	if err != nil {
		return nil, err
	}
	out := append(pre, stmt)
	out = append(out, indexes...)
	return append(out, post...), nil
}

// createIndexSQL is CREATE INDEX for a MySQL KEY; the name is fixed by
// uniqueIndexNames.
func createIndexSQL(table, qtable, name string, cols []string) string {
	if name == "" {
		name = cols[0]
	}
	return "CREATE INDEX " + engine.QuoteIdent(name) + " ON " + qtable + " (" + quoteIdentList(cols) + ")"
}

var createIndexRe = regexp.MustCompile(`^CREATE INDEX ("(?:[^"]|"")*") ON `)

// uniqueIndexNames renames the indexes of a new table whose names the
// schema has already (MySQL's index names are per table, DuckDB's per
// schema) to <table>_<name>.
func (s *session) uniqueIndexNames(ctx context.Context, schema, table string, stmts []string) ([]string, error) {
	if len(stmts) == 0 {
		return nil, nil
	}
	schemaExpr := "current_schema()"
	if schema != "" {
		schemaExpr = engine.QuoteString(schema)
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := queryStrings(ctx, conn, "SELECT lower(index_name) FROM duckdb_indexes() WHERE database_name = current_database() AND lower(schema_name) = lower("+schemaExpr+")")
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for _, r := range rows {
		if r[0] != nil {
			taken[*r[0]] = true
		}
	}
	out := make([]string, len(stmts))
	for i, st := range stmts {
		m := createIndexRe.FindStringSubmatch(st)
		name := unquoteWord(m[1])
		if taken[strings.ToLower(name)] {
			name = table + "_" + name
			st = "CREATE INDEX " + engine.QuoteIdent(name) + st[len(m[0])-len(" ON "):]
		}
		taken[strings.ToLower(name)] = true
		out[i] = st
	}
	return out, nil
}

// jsonValidColumn reports whether e is json_valid(col), MariaDB's mark of
// a json column.
func jsonValidColumn(e sqlparser.Expr) (string, bool) {
	f, ok := e.(*sqlparser.FuncExpr)
	if !ok || f.Name.Lowered() != "json_valid" || len(f.Exprs) != 1 {
		return "", false
	}
	ae, ok := f.Exprs[0].(*sqlparser.AliasedExpr)
	if !ok {
		return "", false
	}
	col, ok := ae.Expr.(*sqlparser.ColName)
	if !ok {
		return "", false
	}
	return col.Name.String(), true
}

// mysqlTypeToDuck maps a MySQL column type to DuckDB's.
func mysqlTypeToDuck(ct *sqlparser.ColumnType, isJSON bool) (string, error) {
	length := -1
	if ct.Length != nil {
		if n, err := strconv.Atoi(string(ct.Length.Val)); err == nil {
			length = n
		}
	}
	scale := 0
	if ct.Scale != nil {
		scale, _ = strconv.Atoi(string(ct.Scale.Val))
	}
	unsigned := bool(ct.Unsigned)
	pick := func(signed, uns string) string {
		if unsigned {
			return uns
		}
		return signed
	}
	switch t := strings.ToLower(ct.Type); t {
	case "bool", "boolean":
		return "BOOLEAN", nil
	case "tinyint", "int1":
		if length == 1 && !unsigned {
			return "BOOLEAN", nil
		}
		return pick("TINYINT", "UTINYINT"), nil
	case "smallint", "int2":
		return pick("SMALLINT", "USMALLINT"), nil
	case "mediumint", "int", "integer", "int3", "int4", "middleint":
		return pick("INTEGER", "UINTEGER"), nil
	case "bigint", "int8", "serial":
		return pick("BIGINT", "UBIGINT"), nil
	case "decimal", "numeric", "dec", "fixed":
		p := 10
		if length > 0 {
			p = length
		}
		if p > maxDuckPrecision {
			return "DOUBLE", nil // DuckDB's decimals stop at 38 digits
		}
		return fmt.Sprintf("DECIMAL(%d,%d)", p, min(scale, p)), nil
	case "float", "float4":
		if length > 24 && ct.Scale == nil {
			return "DOUBLE", nil // float(p) with p > 24 is a double
		}
		return "REAL", nil
	case "double", "double precision", "real", "float8":
		return "DOUBLE", nil
	case "char", "varchar", "nchar", "nvarchar", "national char", "national varchar", "character", "character varying",
		"national character", "national character varying", "tinytext", "text", "mediumtext", "longtext", "long", "long varchar", "set":
		if isJSON {
			return "JSON", nil
		}
		return "VARCHAR", nil
	case "json":
		return "JSON", nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "long varbinary", "char byte":
		return "BLOB", nil
	case "bit":
		return "BLOB", nil // mysqldump writes a bit(n) as its bytes
	case "date":
		return "DATE", nil
	case "time":
		return "TIME", nil
	case "datetime":
		return "TIMESTAMP", nil
	case "timestamp":
		return "TIMESTAMPTZ", nil
	case "year":
		return "SMALLINT", nil
	case "enum":
		vals := make([]string, len(ct.EnumValues))
		for i, v := range ct.EnumValues {
			vals[i] = engine.QuoteString(v)
		}
		return "ENUM(" + strings.Join(vals, ", ") + ")", nil
	default:
		return "", fmt.Errorf("quiver has no type for MySQL's %s", ct.Type)
	}
}

// mysqlDefaultToDuck writes a column's MySQL DEFAULT for DuckDB; ok is false when
// there is none to write (DEFAULT NULL, or a zero date DuckDB cannot hold).
func mysqlDefaultToDuck(e sqlparser.Expr, typ string) (string, bool) {
	switch v := e.(type) {
	case *sqlparser.NullVal:
		return "", false
	case *sqlparser.SQLVal:
		switch v.Type {
		case sqlparser.StrVal:
			s := string(v.Val)
			if strings.HasPrefix(s, "0000-00-00") {
				return "", false
			}
			if typ == "BOOLEAN" {
				if on, ok := parseBool(s); ok {
					return strconv.FormatBool(on), true
				}
			}
			if typ == "BLOB" {
				return "from_hex(" + engine.QuoteString(fmt.Sprintf("%x", v.Val)) + ")", true
			}
			return engine.QuoteString(s), true
		case sqlparser.IntVal, sqlparser.FloatVal:
			if typ == "BOOLEAN" {
				return strconv.FormatBool(string(v.Val) != "0"), true
			}
			return string(v.Val), true
		case sqlparser.HexNum, sqlparser.HexVal:
			digits := strings.TrimPrefix(strings.TrimPrefix(string(v.Val), "0x"), "0X")
			return "from_hex(" + engine.QuoteString(digits) + ")", true
		}
	case *sqlparser.FuncExpr:
		switch v.Name.Lowered() {
		case "current_timestamp", "now", "localtime", "localtimestamp", "sysdate":
			if typ == "TIMESTAMP" {
				return "CAST(current_timestamp AS TIMESTAMP)", true
			}
			return "current_timestamp", true
		case "curdate", "current_date":
			return "current_date", true
		case "curtime", "current_time":
			return "current_time", true
		case "uuid":
			return "uuid()", true
		}
	}
	return "(" + mysqlExprToDuck(e) + ")", true
}

// mysqlExprToDuck prints a MySQL expression for DuckDB.
func mysqlExprToDuck(e sqlparser.SQLNode) string {
	f := &duckFormatter{}
	buf := sqlparser.NewTrackedBuffer(f.format)
	buf.Myprintf("%v", e)
	return buf.String()
}

// mysqlViewToDuck writes a MySQL CREATE VIEW for DuckDB, without its
// ALGORITHM, DEFINER, SQL SECURITY and CHECK OPTION.
func mysqlViewToDuck(d *sqlparser.DDL) string {
	v := d.ViewSpec
	sql := "CREATE "
	if d.OrReplace {
		sql += "OR REPLACE "
	}
	sql += "VIEW "
	if q := v.ViewName.DbQualifier.String(); q != "" {
		sql += engine.QuoteIdent(q) + "."
	}
	sql += engine.QuoteIdent(v.ViewName.Name.String())
	if len(v.Columns) > 0 {
		var cols []string
		for _, c := range v.Columns {
			cols = append(cols, c.String())
		}
		sql += " (" + quoteIdentList(cols) + ")"
	}
	return sql + " AS " + mysqlExprToDuck(v.ViewExpr)
}

func quoteIdentList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = engine.QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// resolveSchema returns schema, or the current schema when it is "".
func (s *session) resolveSchema(ctx context.Context, schema string) (string, error) {
	if schema != "" {
		return schema, nil
	}
	return s.currentSchema(ctx)
}

// execAll runs DuckDB statements one after the other, all or none: in the
// session's transaction, or in one of their own. Each is authorized as if
// the client had sent it.
func (s *session) execAll(ctx context.Context, stmts []string) error {
	conn, err := s.engineConn(ctx)
	if err != nil {
		return err
	}
	if !s.autocommit && !s.inTxn {
		if err := s.beforeStatement(ctx, duckdb.StatementTypeCreate); err != nil {
			return err
		}
	}
	own := !s.inTxn && len(stmts) > 1
	if own {
		if _, err := conn.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
			return err
		}
	}
	s.dirty = true // as for any DDL (afterStatement)
	for _, sql := range stmts {
		if err := s.execOne(ctx, conn, sql); err != nil {
			if own {
				if _, rbErr := conn.Exec(ctx, "ROLLBACK"); rbErr != nil {
					err = errors.Join(err, rbErr)
				}
			}
			return err
		}
	}
	if own {
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			return err
		}
	}
	return nil
}

// execOne prepares, authorizes and runs one statement.
func (s *session) execOne(ctx context.Context, conn *engine.Conn, sql string) error {
	stmt, err := conn.Prepare(ctx, sql)
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := s.authorize(stmt); err != nil {
		return err
	}
	_, err = stmt.Exec(ctx)
	return err
}
