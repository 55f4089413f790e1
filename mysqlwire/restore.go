package mysqlwire

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// Restoring a dump's rows. mysqldump writes a table's rows as INSERT
// INTO `t` VALUES (…),(…),… statements of up to a megabyte, thousands of
// rows each. DuckDB binds every value of such a statement as an
// expression of its own: about 65,000 rows a second on the 2-core build
// machine, so a 600,000-row table took a minute to restore where MariaDB
// took 13 seconds. So a long INSERT whose values are all literals
// (numbers, strings, NULL, TRUE/FALSE, hex) goes in another way: the
// values are read here into an Arrow batch of strings (bytes for a BLOB
// column) and inserted through DuckDB's Arrow scan, which casts each
// column to its type as the literal would have been cast. Anything else
// (an expression, DEFAULT, ON DUPLICATE KEY, a column type that does not
// cast from text the same way, such as LIST or STRUCT) takes the ordinary
// path.

// fastInsertMinBytes is how long an INSERT must be to take the Arrow path:
// a short one gains less than the catalog lookup costs.
const fastInsertMinBytes = 16 << 10

// fastInsertRe matches INSERT INTO t [(cols)] VALUES: submatches table and
// column list; the match ends where the rows start.
var fastInsertRe = regexp.MustCompile("(?is)^INSERT\\s+INTO\\s+" +
	"((?:`[^`]*`|\"[^\"]*\"|[a-z0-9_$]+)(?:\\.(?:`[^`]*`|\"[^\"]*\"|[a-z0-9_$]+))?)" +
	"\\s*(\\([^()]*\\))?\\s*VALUES\\s*")

// valueKind is how a column takes a literal.
type valueKind uint8

const (
	kindText    valueKind = iota // VARCHAR, JSON, UUID, ENUM, dates and times: the literal's text
	kindNumber                   // integers, DECIMAL, FLOAT, DOUBLE, BOOLEAN: a number's or a string's text
	kindBlob                     // BLOB: a string's or a hex literal's bytes
	kindUnknown                  // anything else: not for this path
)

func kindOf(duckType string) valueKind {
	t := strings.ToUpper(duckType)
	switch {
	case t == "BLOB":
		return kindBlob
	case t == "VARCHAR" || t == "JSON" || t == "UUID" || strings.HasPrefix(t, "ENUM(") ||
		t == "DATE" || t == "TIME" || strings.HasPrefix(t, "TIMESTAMP"):
		return kindText
	case t == "BOOLEAN" || t == "TINYINT" || t == "SMALLINT" || t == "INTEGER" || t == "BIGINT" || t == "HUGEINT" ||
		t == "UTINYINT" || t == "USMALLINT" || t == "UINTEGER" || t == "UBIGINT" || t == "UHUGEINT" ||
		t == "FLOAT" || t == "DOUBLE" || strings.HasPrefix(t, "DECIMAL("):
		return kindNumber
	}
	return kindUnknown
}

// fastInsert runs a long INSERT … VALUES of literals through DuckDB's
// Arrow scan. handled is false when the statement is not one.
func (s *session) fastInsert(ctx context.Context, text string, q quoting) (out compatOutcome, handled bool, err error) {
	if len(text) < fastInsertMinBytes {
		return compatOutcome{}, false, nil
	}
	m := fastInsertRe.FindStringSubmatchIndex(text)
	if m == nil {
		return compatOutcome{}, false, nil
	}
	name, ok := parseQualifiedName(text[m[2]:m[3]])
	if !ok {
		return compatOutcome{}, false, nil
	}
	schema := ""
	if len(name) == 2 {
		schema = name[0]
	} else if schema, err = s.currentSchema(ctx); err != nil {
		return compatOutcome{}, true, err
	}
	table := name[len(name)-1]
	cols, err := s.tableColumns(ctx, schema, table)
	if err != nil || len(cols) == 0 {
		return compatOutcome{}, false, err // no such table: DuckDB says so
	}
	if m[4] >= 0 {
		byName := map[string]tableColumn{}
		for _, c := range cols {
			byName[strings.ToLower(c.name)] = c
		}
		var listed []tableColumn
		for _, c := range splitTopLevel(text[m[4]+1:m[5]-1], ',') {
			tc, ok := byName[strings.ToLower(unquoteWord(strings.TrimSpace(c)))]
			if !ok {
				return compatOutcome{}, false, nil
			}
			listed = append(listed, tc)
		}
		cols = listed
	}
	for _, c := range cols {
		if c.kind == kindUnknown {
			return compatOutcome{}, false, nil
		}
	}
	rec, ok := readValues(text[m[1]:], q, cols)
	if !ok {
		return compatOutcome{}, false, nil
	}
	defer rec.Release()
	if err := s.user.Authorize("INSERT", auth.AccessWrite); err != nil {
		return compatOutcome{}, true, errorf(mysql.ERSpecifiedAccessDenied, sqlStateSyntax, "Access denied; %v", err)
	}
	if err := s.beforeStatement(ctx, duckdb.StatementTypeInsert); err != nil {
		return compatOutcome{}, true, err
	}
	reader, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return compatOutcome{}, true, err
	}
	defer reader.Release()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return compatOutcome{}, true, err
	}
	n, err := conn.InsertArrow(ctx, engine.QuoteIdent(schema)+"."+engine.QuoteIdent(table), names, reader)
	if err != nil {
		return compatOutcome{}, true, err
	}
	return compatOutcome{res: &sqltypes.Result{RowsAffected: uint64(n)}}, true, nil
}

// tableColumn is a column of the table an INSERT fills.
type tableColumn struct {
	name string
	kind valueKind
}

// tableColumns looks up a table's columns in order; none when there is no
// such table.
func (s *session) tableColumns(ctx context.Context, schema, table string) ([]tableColumn, error) {
	conn, err := s.engineConn(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := queryStrings(ctx, conn, fmt.Sprintf(`SELECT column_name, data_type FROM duckdb_columns()
		WHERE database_name = current_database() AND lower(schema_name) = lower(%s) AND lower(table_name) = lower(%s) ORDER BY column_index`,
		engine.QuoteString(schema), engine.QuoteString(table)))
	if err != nil {
		return nil, err
	}
	cols := make([]tableColumn, 0, len(rows))
	for _, r := range rows {
		if r[0] == nil || r[1] == nil {
			return nil, nil
		}
		cols = append(cols, tableColumn{name: *r[0], kind: kindOf(*r[1])})
	}
	return cols, nil
}

// readValues reads the rows of an INSERT, (v, …), (v, …) up to the end of
// the text, into a batch of one string (or, for a BLOB, binary) column per
// table column. ok is false at anything but a literal, or a row of the
// wrong width.
func readValues(s string, q quoting, cols []tableColumn) (rec arrow.RecordBatch, ok bool) {
	mem := memory.NewGoAllocator()
	fields := make([]arrow.Field, len(cols))
	builders := make([]array.Builder, len(cols))
	for i, c := range cols {
		typ := arrow.DataType(arrow.BinaryTypes.String)
		if c.kind == kindBlob {
			typ = arrow.BinaryTypes.Binary
		}
		fields[i] = arrow.Field{Name: c.name, Type: typ, Nullable: true}
		builders[i] = array.NewBuilder(mem, typ)
	}
	defer func() {
		for _, b := range builders {
			b.Release()
		}
	}()
	r := valueReader{s: s, q: q}
	rows := 0
	for {
		r.skipSpace()
		if !r.consume('(') {
			return nil, false
		}
		for i := range cols {
			if i > 0 && !r.consume(',') {
				return nil, false
			}
			if !r.value(builders[i], cols[i].kind) {
				return nil, false
			}
		}
		if !r.consume(')') {
			return nil, false
		}
		rows++
		if !r.consume(',') {
			break
		}
	}
	r.skipSpace()
	for r.consume(';') {
	}
	if r.i != len(r.s) {
		return nil, false
	}
	arrs := make([]arrow.Array, len(builders))
	for i, b := range builders {
		arrs[i] = b.NewArray()
	}
	rec = array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(rows))
	for _, a := range arrs {
		a.Release()
	}
	return rec, true
}

// valueReader reads the literals of an INSERT's rows.
type valueReader struct {
	s   string
	i   int
	q   quoting
	buf []byte
}

func (r *valueReader) skipSpace() {
	for r.i < len(r.s) && isSpaceByte(r.s[r.i]) {
		r.i++
	}
}

// consume skips blanks and c, if c is next.
func (r *valueReader) consume(c byte) bool {
	r.skipSpace()
	if r.i < len(r.s) && r.s[r.i] == c {
		r.i++
		return true
	}
	return false
}

// value reads one literal into b, as a column of kind takes it.
func (r *valueReader) value(b array.Builder, kind valueKind) bool {
	r.skipSpace()
	start := r.i
	for r.i < len(r.s) && isIdentByte(r.s[r.i]) {
		r.i++
	}
	word := r.s[start:r.i]
	binary := false
	switch {
	case strings.EqualFold(word, "NULL"):
		b.AppendNull()
		return true
	case strings.EqualFold(word, "TRUE") || strings.EqualFold(word, "FALSE"):
		if kind != kindNumber {
			return false
		}
		b.(*array.StringBuilder).Append(strings.ToLower(word))
		return true
	case strings.EqualFold(word, "_binary"):
		binary = true
		r.skipSpace()
	case len(word) > 1 && word[0] == '_':
		if _, cs := introducerBefore(word+"'", len(word)); cs == "" {
			return false
		}
		r.skipSpace()
	case (word == "x" || word == "X") && r.i < len(r.s) && r.s[r.i] == '\'':
		return r.hex(b, kind, r.quotedHex())
	case len(word) > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X'):
		return r.hex(b, kind, word[2:])
	case word != "" && word[0] >= '0' && word[0] <= '9' || word == "" && r.i < len(r.s) && (r.s[r.i] == '-' || r.s[r.i] == '+' || r.s[r.i] == '.'):
		r.i = start
		return r.number(b, kind)
	case word != "":
		return false
	}
	if r.i >= len(r.s) || r.s[r.i] != '\'' {
		return false
	}
	val, ok := r.quoted()
	if !ok {
		return false
	}
	switch kind {
	case kindBlob:
		b.(*array.BinaryBuilder).Append(val)
	default:
		if binary || !utf8.Valid(val) {
			return false
		}
		b.(*array.StringBuilder).BinaryBuilder.Append(val)
	}
	return true
}

// number reads a numeric literal.
func (r *valueReader) number(b array.Builder, kind valueKind) bool {
	start := r.i
	if r.s[r.i] == '-' || r.s[r.i] == '+' {
		r.i++
	}
	digits := 0
	for r.i < len(r.s) && (r.s[r.i] >= '0' && r.s[r.i] <= '9' || r.s[r.i] == '.') {
		if r.s[r.i] != '.' {
			digits++
		}
		r.i++
	}
	if digits == 0 {
		return false
	}
	if r.i < len(r.s) && (r.s[r.i] == 'e' || r.s[r.i] == 'E') {
		r.i++
		if r.i < len(r.s) && (r.s[r.i] == '-' || r.s[r.i] == '+') {
			r.i++
		}
		for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
			r.i++
		}
	}
	if r.i < len(r.s) && isIdentByte(r.s[r.i]) || kind == kindBlob {
		return false
	}
	b.(*array.StringBuilder).Append(r.s[start:r.i])
	return true
}

// quoted reads a '…' literal, escapes decoded as the session writes them.
func (r *valueReader) quoted() ([]byte, bool) {
	end := skipQuoted(r.s, r.i, '\'', r.q == quoteBackslash)
	if end > len(r.s) || end-r.i < 2 || r.s[end-1] != '\'' {
		return nil, false
	}
	body := r.s[r.i+1 : end-1]
	r.i = end
	switch {
	case r.q == quoteBackslash && strings.IndexByte(body, '\\') >= 0:
		return unescapeMySQL(body), true
	case strings.Contains(body, "''"):
		return []byte(strings.ReplaceAll(body, "''", "'")), true
	}
	return []byte(body), true
}

// quotedHex reads the digits of X'…'.
func (r *valueReader) quotedHex() string {
	end := strings.IndexByte(r.s[r.i+1:], '\'')
	if end < 0 {
		return "?"
	}
	digits := r.s[r.i+1 : r.i+1+end]
	r.i += end + 2
	return digits
}

// hex appends the value of a hex literal: its bytes to a BLOB, its text
// to a text column.
func (r *valueReader) hex(b array.Builder, kind valueKind, digits string) bool {
	if len(digits)%2 == 1 {
		digits = "0" + digits
	}
	val := make([]byte, len(digits)/2)
	for i := range val {
		hi, lo := unhex(digits[2*i]), unhex(digits[2*i+1])
		if hi < 0 || lo < 0 {
			return false
		}
		val[i] = byte(hi<<4 | lo)
	}
	switch {
	case kind == kindBlob:
		b.(*array.BinaryBuilder).Append(val)
	case kind == kindText && utf8.Valid(val):
		b.(*array.StringBuilder).BinaryBuilder.Append(val)
	default:
		return false
	}
	return true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}
