package server

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// copyStmt is a COPY statement as an export reads it. DuckDB's parser
// gives no syntax tree of a COPY (json_serialize_sql serializes SELECTs
// only), so parseCopy reads its outline from tokens, and the export is
// run from a statement rebuilt out of the parts it understood: the query
// (which DuckDB's parser must accept alone as one SELECT, see
// checkQuery), the checked target, and the options it allows. Whatever
// the tokens were meant to say, what runs is that rebuilt statement.
type copyStmt struct {
	// from is COPY … FROM, which reads a file into a table.
	from bool
	// query is the query of COPY (query) TO, as written; table the table
	// of COPY table [(columns)] TO, as written.
	query, table string
	// target is the file, its string literal decoded.
	target  string
	options []copyOption
}

// copyOption is one option of COPY's option list.
type copyOption struct {
	name  string // upper case
	value string // as written; empty for an option without one (HEADER)
}

// exportFormats are the formats an export writes, each a COPY function
// linked into quiver's DuckDB.
var exportFormats = []string{"parquet", "csv", "json"}

// exportOptions are the options an export passes on to DuckDB's COPY:
// each changes how the one file is encoded, never where or how many
// files are written.
var exportOptions = map[string]bool{
	"FORMAT": true, "COMPRESSION": true, "COMPRESSION_LEVEL": true,
	"ROW_GROUP_SIZE": true, "ROW_GROUP_SIZE_BYTES": true, "PARQUET_VERSION": true,
	"HEADER": true, "DELIMITER": true, "DELIM": true, "SEP": true, "QUOTE": true,
	"ESCAPE": true, "NULLSTR": true, "FORCE_QUOTE": true, "DATEFORMAT": true,
	"TIMESTAMPFORMAT": true, "ARRAY": true, "PRESERVE_ORDER": true,
}

// fileLayoutOptions are COPY options that write several files or a
// directory, or decide how an existing file is replaced: quiver writes
// one file, through a temporary name, itself.
var fileLayoutOptions = map[string]bool{
	"PARTITION_BY": true, "PER_THREAD_OUTPUT": true, "FILE_SIZE_BYTES": true,
	"ROW_GROUPS_PER_FILE": true, "FILENAME_PATTERN": true, "FILE_EXTENSION": true,
	"OVERWRITE": true, "OVERWRITE_OR_IGNORE": true, "APPEND": true,
	"USE_TMP_FILE": true, "RETURN_FILES": true, "RETURN_STATS": true,
	"WRITE_PARTITION_COLUMNS": true,
}

// parseCopy reads the outline of one COPY statement. A COPY … FROM is
// returned with from set and nothing else read.
func parseCopy(sql string) (*copyStmt, error) {
	toks, err := duckdbsql.Lex(sql)
	if err != nil {
		return nil, err
	}
	for len(toks) > 0 && toks[len(toks)-1].Is(";") {
		toks = toks[:len(toks)-1]
	}
	p := &copyParser{sql: sql, toks: toks}
	if !p.keyword("COPY") {
		return nil, errors.New("not a COPY statement")
	}
	c := &copyStmt{}
	if p.peek().Is("(") {
		open := p.next()
		end, err := p.skipParens()
		if err != nil {
			return nil, err
		}
		c.query = sql[open.End:end.Pos]
	} else {
		start := p.peek()
		if err := p.tableName(); err != nil {
			return nil, err
		}
		c.table = sql[start.Pos:p.toks[p.i-1].End]
	}
	switch {
	case p.keyword("FROM"):
		c.from = true
		return c, nil
	case !p.keyword("TO"):
		return nil, fmt.Errorf("want TO after %s", p.what(c))
	}
	t := p.next()
	if !isPlainString(t) {
		return nil, errors.New("the target of COPY … TO must be a plain string literal, such as '/srv/exports/orders.parquet'")
	}
	c.target = t.Value
	p.keyword("WITH")
	if p.peek().Is("(") {
		p.next()
		if c.options, err = p.options(); err != nil {
			return nil, err
		}
	}
	if t := p.peek(); t.Kind != 0 {
		return nil, fmt.Errorf("unexpected %q after the target: write COPY's options in parentheses, as in (FORMAT parquet, COMPRESSION zstd)", t.Text)
	}
	return c, nil
}

// format is the export's format: its FORMAT option, or DuckDB's guess
// from the target's extension.
func (c *copyStmt) format() (string, error) {
	for _, o := range c.options {
		if o.name != "FORMAT" {
			continue
		}
		f := strings.ToLower(strings.Trim(o.value, `'"`))
		for _, ok := range exportFormats {
			if f == ok {
				return f, nil
			}
		}
		return "", fmt.Errorf("FORMAT %s: an export writes %s", o.value, strings.Join(exportFormats, ", "))
	}
	name := strings.ToLower(path.Base(c.target))
	for _, z := range []string{".gz", ".gzip", ".zst", ".zstd"} {
		name = strings.TrimSuffix(name, z)
	}
	switch path.Ext(name) {
	case ".parquet", ".pq":
		return "parquet", nil
	case ".json", ".jsonl", ".ndjson":
		return "json", nil
	}
	return "csv", nil
}

// checkOptions refuses an option that is not one an export takes.
func (c *copyStmt) checkOptions() error {
	for _, o := range c.options {
		switch {
		case fileLayoutOptions[o.name]:
			return fmt.Errorf("option %s is not allowed in an export: an export writes one file, through a temporary file it renames into place", o.name)
		case !exportOptions[o.name]:
			return fmt.Errorf("option %s is not one an export takes (it takes %s)", o.name, strings.Join(slices.Sorted(maps.Keys(exportOptions)), ", "))
		}
	}
	return nil
}

// rebuild is the COPY statement that runs the export: the query or table
// as written, the checked file, the format and the allowed options, and
// USE_TMP_FILE, so DuckDB writes a temporary file next to the target and
// renames it into place only once it is complete. The query sits on lines
// of its own so that a trailing -- comment cannot swallow the parenthesis.
func (c *copyStmt) rebuild(file, format string) string {
	if c.table != "" {
		return c.rebuildFrom(c.table, file, format)
	}
	return c.rebuildFrom("(\n"+c.query+"\n)", file, format)
}

// rebuildFrom is rebuild's COPY of src, a table or a parenthesised query.
func (c *copyStmt) rebuildFrom(src, file, format string) string {
	var b strings.Builder
	b.WriteString("COPY " + src)
	b.WriteString(" TO " + engine.QuoteString(file) + " (FORMAT " + format)
	for _, o := range c.options {
		if o.name == "FORMAT" {
			continue
		}
		b.WriteString(", " + o.name)
		if o.value != "" {
			b.WriteString(" " + o.value)
		}
	}
	b.WriteString(", USE_TMP_FILE true)")
	return b.String()
}

type copyParser struct {
	sql  string
	toks []token
	i    int
}

func (p *copyParser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{Pos: len(p.sql), End: len(p.sql)}
}

func (p *copyParser) next() token {
	t := p.peek()
	if p.i < len(p.toks) {
		p.i++
	}
	return t
}

// keyword consumes the next token if it is the unquoted keyword kw.
func (p *copyParser) keyword(kw string) bool {
	if t := p.peek(); t.IsWord(kw) {
		p.i++
		return true
	}
	return false
}

func (p *copyParser) what(c *copyStmt) string {
	if c.table != "" {
		return "the table " + c.table
	}
	return "the query"
}

// skipParens consumes tokens up to the parenthesis that closes the one
// just consumed and returns it.
func (p *copyParser) skipParens() (token, error) {
	depth := 1
	for {
		t := p.next()
		switch {
		case t.Kind == 0:
			return t, errors.New("unbalanced parentheses")
		case t.Is("("):
			depth++
		case t.Is(")"):
			if depth--; depth == 0 {
				return t, nil
			}
		}
	}
}

// tableName consumes a possibly qualified table name and an optional
// column list: names and quoted names only.
func (p *copyParser) tableName() error {
	for {
		if t := p.next(); !isName(t) {
			return fmt.Errorf("want a table name or a query in parentheses after COPY, got %q", t.Text)
		}
		if !p.peek().Is(".") {
			break
		}
		p.next()
	}
	if !p.peek().Is("(") {
		return nil
	}
	p.next()
	for {
		if t := p.next(); !isName(t) {
			return fmt.Errorf("want a column name in COPY's column list, got %q", t.Text)
		}
		switch t := p.next(); {
		case t.Is(")"):
			return nil
		case !t.Is(","):
			return fmt.Errorf("want , or ) in COPY's column list, got %q", t.Text)
		}
	}
}

// options reads NAME [value] items up to the closing parenthesis. A value
// is one name, string or number (a negative one too), * or a
// parenthesized list of them; it is kept as written.
func (p *copyParser) options() ([]copyOption, error) {
	var out []copyOption
	for {
		name := p.next()
		if !isName(name) {
			return nil, fmt.Errorf("want an option name, got %q", name.Text)
		}
		o := copyOption{name: strings.ToUpper(name.Value)}
		start := p.peek()
		switch t := p.peek(); {
		case t.Is(",") || t.Is(")"):
		case t.Is("("):
			p.next()
			if err := p.valueList(); err != nil {
				return nil, fmt.Errorf("option %s: %w", o.name, err)
			}
		case t.Is("-"):
			p.next()
			if n := p.next(); n.Kind != duckdbsql.Number {
				return nil, fmt.Errorf("option %s: want a number after -, got %q", o.name, n.Text)
			}
		case isValue(t) || t.Is("*"):
			p.next()
		default:
			return nil, fmt.Errorf("option %s: want a name, string or number as its value, got %q", o.name, t.Text)
		}
		if p.peek().Pos > start.Pos {
			o.value = p.sql[start.Pos:p.toks[p.i-1].End]
		}
		out = append(out, o)
		switch t := p.next(); {
		case t.Is(")"):
			return out, nil
		case !t.Is(","):
			return nil, fmt.Errorf("want , or ) after option %s, got %q", o.name, t.Text)
		}
	}
}

func (p *copyParser) valueList() error {
	for {
		if t := p.next(); !isValue(t) {
			return fmt.Errorf("want a name, string or number in the list, got %q", t.Text)
		}
		switch t := p.next(); {
		case t.Is(")"):
			return nil
		case !t.Is(","):
			return fmt.Errorf("want , or ) in the list, got %q", t.Text)
		}
	}
}

// token is one SQL token, as DuckDB's lexer reads it (internal/duckdbsql).
// The zero token, of no kind, ends the statement.
type token = duckdbsql.Token

// isValue reports whether t is a value an option takes as written: a
// name, a quoted name, a plain '…' string or a number. Prefixed strings
// (E'…', X'…') and dollar-quoted ones are not.
func isValue(t token) bool {
	return t.Kind == duckdbsql.Ident || t.Kind == duckdbsql.Quoted || isPlainString(t) || t.Kind == duckdbsql.Number
}

// isPlainString reports whether t is a '…' string without a prefix.
func isPlainString(t token) bool {
	return t.Kind == duckdbsql.String && strings.HasPrefix(t.Text, "'")
}

// isName reports whether t is a name or a quoted name.
func isName(t token) bool { return t.Kind == duckdbsql.Ident || t.Kind == duckdbsql.Quoted }
