package flightsql

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// minColumnarRows is the fewest parameter rows worth an Arrow scan; below
// it, binding row by row is as cheap.
const minColumnarRows = 2

// execParamBatches runs a prepared INSERT over many parameter rows as one
// columnar statement, when that is certain to mean the same as executing
// it once per row: for INSERT INTO t [(cols)] VALUES (?, …, ?) with only
// plain parameters, the rows become an Arrow scan and run as
// INSERT INTO t [(cols)] SELECT * FROM scan. ok is false when the
// statement is not of that shape; the caller then binds row by row.
//
// The statement is one INSERT, so it is all-or-nothing without a
// transaction of its own. c must already hold the caller's authorization
// for sql.
func (s *Server) execParamBatches(ctx context.Context, c *engine.Conn, sql string, params []arrow.RecordBatch) (n int64, ok bool, err error) {
	rows := 0
	for _, rec := range params {
		rows += int(rec.NumRows())
	}
	if rows < minColumnarRows {
		return 0, false, nil
	}
	ins, ok := parseInsertValues(sql)
	if !ok || ins.params != int(params[0].NumCols()) {
		return 0, false, nil
	}
	if current, err := inCurrentCatalog(ctx, c, ins.tableParts); err != nil || !current {
		return 0, false, nil
	}
	// Positional names: parameter schemas carry "1", "2", … or repeated
	// names, which a scan's columns may not.
	fields := make([]arrow.Field, ins.params)
	for i, f := range params[0].Schema().Fields() {
		fields[i] = arrow.Field{Name: fmt.Sprintf("p%d", i+1), Type: f.Type, Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	recs := make([]arrow.RecordBatch, 0, len(params))
	defer func() { releaseRecs(recs) }()
	for _, rec := range params {
		for i, col := range rec.Columns() {
			if !arrow.TypeEqual(col.DataType(), fields[i].Type) {
				return 0, false, nil // batches of different types: leave them to the row path
			}
		}
		recs = append(recs, array.NewRecordBatch(schema, rec.Columns(), rec.NumRows()))
	}
	rdr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		return 0, false, nil
	}
	defer rdr.Release()
	n, err = c.InsertArrow(ctx, ins.table, ins.columns, rdr)
	if err != nil {
		return 0, true, toStatus(err)
	}
	paramBatchesColumnar.Inc()
	return n, true, nil
}

// inCurrentCatalog reports whether a table name, as parts, resolves to
// the connection's current catalog. DuckDB's Arrow scan registers its view
// through the current catalog, and a transaction that already wrote to
// another one fails that registration and is aborted; so batches for
// tables elsewhere take the row path.
func inCurrentCatalog(ctx context.Context, c *engine.Conn, parts []string) (bool, error) {
	var sql string
	var args []any
	switch len(parts) {
	case 1:
		return true, nil
	case 2: // schema.table in the current catalog, else catalog.table
		sql, args = "SELECT count(*) FROM duckdb_schemas() WHERE database_name = current_database() AND lower(schema_name) = lower(?)", []any{parts[0]}
	default:
		sql, args = "SELECT count(*) FROM (SELECT 1) WHERE lower(current_database()) = lower(?)", []any{parts[0]}
	}
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	return rows.RecordBatch().Column(0).ValueStr(0) != "0", nil
}

// insertValues is a parsed INSERT INTO t [(cols)] VALUES (?, …).
type insertValues struct {
	table      string   // as written: quoted or bare, possibly qualified
	tableParts []string // the table's name parts, unquoted
	columns    []string // unquoted; nil when the statement names none
	params     int
}

// parseInsertValues recognises, conservatively, a single-row INSERT whose
// values are all plain parameters: ? or $1, $2, … in order. Anything else
// (expressions, several rows, ON CONFLICT, RETURNING, BY NAME, DEFAULT)
// is not recognised. The text is read by DuckDB's lexical rules (nested
// comments, a line comment ending at a carriage return too), so that the
// table and columns read are those DuckDB prepared.
func parseInsertValues(sql string) (insertValues, bool) {
	var out insertValues
	toks, err := duckdbsql.Lex(sql)
	if err != nil {
		return out, false
	}
	lx := &tokens{toks: toks}
	if !lx.keyword("INSERT") || !lx.keyword("INTO") {
		return out, false
	}
	// The table: up to three dot-separated identifiers.
	var parts []string
	for {
		raw, name, ok := lx.ident()
		if !ok {
			return out, false
		}
		parts = append(parts, raw)
		out.tableParts = append(out.tableParts, name)
		if !lx.punct(".") {
			break
		}
		if len(parts) == 3 {
			return out, false
		}
	}
	out.table = strings.Join(parts, ".")
	if lx.punct("(") {
		for {
			_, name, ok := lx.ident()
			if !ok {
				return out, false
			}
			out.columns = append(out.columns, name)
			if lx.punct(")") {
				break
			}
			if !lx.punct(",") {
				return out, false
			}
		}
	}
	if !lx.keyword("VALUES") || !lx.punct("(") {
		return out, false
	}
	for {
		if !lx.param(out.params + 1) {
			return out, false
		}
		out.params++
		if lx.punct(")") {
			break
		}
		if !lx.punct(",") {
			return out, false
		}
	}
	lx.punct(";")
	if lx.i != len(lx.toks) {
		return out, false
	}
	if out.columns != nil && len(out.columns) != out.params {
		return out, false
	}
	return out, true
}

// tokens is a cursor over the tokens of a statement, for
// parseInsertValues: each reader consumes a token only when it matches.
type tokens struct {
	toks []duckdbsql.Token
	i    int
}

// next is the token at the cursor; ok is false at the end.
func (l *tokens) next() (duckdbsql.Token, bool) {
	if l.i >= len(l.toks) {
		return duckdbsql.Token{}, false
	}
	return l.toks[l.i], true
}

func (l *tokens) punct(p string) bool {
	if t, ok := l.next(); ok && t.Is(p) {
		l.i++
		return true
	}
	return false
}

func (l *tokens) keyword(kw string) bool {
	if t, ok := l.next(); ok && t.IsWord(kw) {
		l.i++
		return true
	}
	return false
}

// reserved words that end a table name and must not be taken for one.
var reserved = map[string]bool{"VALUES": true, "SELECT": true, "DEFAULT": true, "BY": true, "OR": true, "FROM": true}

// ident reads a bare or double-quoted identifier and returns it as written
// and as a name.
func (l *tokens) ident() (raw, name string, ok bool) {
	t, ok := l.next()
	switch {
	case !ok:
		return "", "", false
	case t.Kind == duckdbsql.Quoted && t.Value != "":
	case t.Kind == duckdbsql.Ident && !reserved[strings.ToUpper(t.Text)]:
		t.Value = t.Text
	default:
		return "", "", false
	}
	l.i++
	return t.Text, t.Value, true
}

// param reads ? or $n where n is the parameter's position.
func (l *tokens) param(pos int) bool {
	t, ok := l.next()
	if !ok || t.Kind != duckdbsql.Param {
		return false
	}
	if t.Text != "?" {
		digits := strings.TrimPrefix(t.Text, "$")
		if n, err := strconv.Atoi(digits); err != nil || n != pos || strings.TrimLeft(digits, "0123456789") != "" {
			return false
		}
	}
	l.i++
	return true
}
