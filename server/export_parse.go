package server

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/quiverdata/quiver/engine"
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
	toks, err := lexSQL(sql)
	if err != nil {
		return nil, err
	}
	for len(toks) > 0 && toks[len(toks)-1].is(";") {
		toks = toks[:len(toks)-1]
	}
	p := &copyParser{sql: sql, toks: toks}
	if !p.keyword("COPY") {
		return nil, errors.New("not a COPY statement")
	}
	c := &copyStmt{}
	if p.peek().is("(") {
		open := p.next()
		end, err := p.skipParens()
		if err != nil {
			return nil, err
		}
		c.query = sql[open.end:end.pos]
	} else {
		start := p.peek()
		if err := p.tableName(); err != nil {
			return nil, err
		}
		c.table = sql[start.pos:p.toks[p.i-1].end]
	}
	switch {
	case p.keyword("FROM"):
		c.from = true
		return c, nil
	case !p.keyword("TO"):
		return nil, fmt.Errorf("want TO after %s", p.what(c))
	}
	t := p.next()
	if t.kind != tokString {
		return nil, errors.New("the target of COPY … TO must be a plain string literal, such as '/srv/exports/orders.parquet'")
	}
	c.target = t.value
	p.keyword("WITH")
	if p.peek().is("(") {
		p.next()
		if c.options, err = p.options(); err != nil {
			return nil, err
		}
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, fmt.Errorf("unexpected %q after the target: write COPY's options in parentheses, as in (FORMAT parquet, COMPRESSION zstd)", t.text)
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
	return token{kind: tokEOF, pos: len(p.sql), end: len(p.sql)}
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
	if t := p.peek(); t.kind == tokIdent && strings.EqualFold(t.text, kw) {
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
		case t.kind == tokEOF:
			return t, errors.New("unbalanced parentheses")
		case t.is("("):
			depth++
		case t.is(")"):
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
		if t := p.next(); t.kind != tokIdent && t.kind != tokQuoted {
			return fmt.Errorf("want a table name or a query in parentheses after COPY, got %q", t.text)
		}
		if !p.peek().is(".") {
			break
		}
		p.next()
	}
	if !p.peek().is("(") {
		return nil
	}
	p.next()
	for {
		if t := p.next(); t.kind != tokIdent && t.kind != tokQuoted {
			return fmt.Errorf("want a column name in COPY's column list, got %q", t.text)
		}
		switch t := p.next(); {
		case t.is(")"):
			return nil
		case !t.is(","):
			return fmt.Errorf("want , or ) in COPY's column list, got %q", t.text)
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
		if name.kind != tokIdent && name.kind != tokQuoted {
			return nil, fmt.Errorf("want an option name, got %q", name.text)
		}
		o := copyOption{name: strings.ToUpper(name.value)}
		start := p.peek()
		switch t := p.peek(); {
		case t.is(",") || t.is(")"):
		case t.is("("):
			p.next()
			if err := p.valueList(); err != nil {
				return nil, fmt.Errorf("option %s: %w", o.name, err)
			}
		case t.is("-"):
			p.next()
			if n := p.next(); n.kind != tokNumber {
				return nil, fmt.Errorf("option %s: want a number after -, got %q", o.name, n.text)
			}
		case t.isValue() || t.is("*"):
			p.next()
		default:
			return nil, fmt.Errorf("option %s: want a name, string or number as its value, got %q", o.name, t.text)
		}
		if p.peek().pos > start.pos {
			o.value = p.sql[start.pos:p.toks[p.i-1].end]
		}
		out = append(out, o)
		switch t := p.next(); {
		case t.is(")"):
			return out, nil
		case !t.is(","):
			return nil, fmt.Errorf("want , or ) after option %s, got %q", o.name, t.text)
		}
	}
}

func (p *copyParser) valueList() error {
	for {
		if t := p.next(); !t.isValue() {
			return fmt.Errorf("want a name, string or number in the list, got %q", t.text)
		}
		switch t := p.next(); {
		case t.is(")"):
			return nil
		case !t.is(","):
			return fmt.Errorf("want , or ) in the list, got %q", t.text)
		}
	}
}

// tokKind is the kind of an SQL token.
type tokKind int

const (
	tokEOF     tokKind = iota
	tokIdent           // a name or keyword
	tokQuoted          // a "quoted name"
	tokString          // a 'string'
	tokNumber          // 42, 1.5, 1e6
	tokParam           // ?, $1, $name
	tokPunct           // one character of punctuation or an operator
	tokSpecial         // E'…', X'…', $$…$$ and other literals an export does not take
)

// token is one SQL token: its text as written, at sql[pos:end], and for
// names, quoted names and strings its value.
type token struct {
	kind     tokKind
	text     string
	value    string
	pos, end int
}

func (t token) is(punct string) bool { return t.kind == tokPunct && t.text == punct }

func (t token) isValue() bool {
	return t.kind == tokIdent || t.kind == tokQuoted || t.kind == tokString || t.kind == tokNumber
}

// lexSQL splits sql into tokens, skipping white space and comments, the
// way DuckDB's (PostgreSQL's) lexer does for what an export reads:
// single-quoted strings and double-quoted names (a doubled quote inside
// stands for one), -- and nested /* */ comments, E'…' strings with
// backslash escapes, and $tag$…$tag$ strings.
func lexSQL(sql string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(sql) {
		ch := sql[i]
		start := i
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v':
			i++
			continue
		case strings.HasPrefix(sql[i:], "--"):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
			continue
		case strings.HasPrefix(sql[i:], "/*"):
			depth := 0
			for {
				switch {
				case i >= len(sql):
					return nil, errors.New("unterminated /* comment")
				case strings.HasPrefix(sql[i:], "/*"):
					depth++
					i += 2
				case strings.HasPrefix(sql[i:], "*/"):
					depth--
					i += 2
				default:
					i++
				}
				if depth == 0 {
					break
				}
			}
			continue
		case ch == '\'':
			v, n, err := quoted(sql[i:], '\'', false)
			if err != nil {
				return nil, err
			}
			i += n
			toks = append(toks, token{kind: tokString, value: v})
		case ch == '"':
			v, n, err := quoted(sql[i:], '"', false)
			if err != nil {
				return nil, err
			}
			i += n
			toks = append(toks, token{kind: tokQuoted, value: v})
		case ch == '?':
			i++
			toks = append(toks, token{kind: tokParam})
		case ch == '$':
			n, kind, err := dollar(sql[i:])
			if err != nil {
				return nil, err
			}
			i += n
			toks = append(toks, token{kind: kind})
		case ch >= '0' && ch <= '9' || ch == '.' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9':
			i += number(sql[i:])
			toks = append(toks, token{kind: tokNumber})
		case isNameStart(sql[i:]):
			i += nameLen(sql[i:])
			word := sql[start:i]
			if i < len(sql) && sql[i] == '\'' {
				// E'…', X'…', B'…', N'…' and the like: a string literal
				// with a prefix.
				_, n, err := quoted(sql[i:], '\'', strings.EqualFold(word, "e"))
				if err != nil {
					return nil, err
				}
				i += n
				toks = append(toks, token{kind: tokSpecial})
				break
			}
			toks = append(toks, token{kind: tokIdent, value: word})
		default:
			_, n := utf8.DecodeRuneInString(sql[i:])
			i += n
			toks = append(toks, token{kind: tokPunct})
		}
		t := &toks[len(toks)-1]
		t.pos, t.end, t.text = start, i, sql[start:i]
	}
	return toks, nil
}

// quoted reads a literal quoted by q at the start of s, a doubled q
// standing for one, and with backslash escapes when escapes is set. It
// returns the value and the literal's length.
func quoted(s string, q byte, escapes bool) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case escapes && s[i] == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case s[i] != q:
			b.WriteByte(s[i])
		case i+1 < len(s) && s[i+1] == q:
			b.WriteByte(q)
			i++
		default:
			return b.String(), i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unterminated %c literal", q)
}

// dollar reads a $1 or $name parameter or a $tag$…$tag$ string at the
// start of s.
func dollar(s string) (int, tokKind, error) {
	j := 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j > 1 {
		return j, tokParam, nil
	}
	n := 0
	if isNameStart(s[1:]) {
		n = nameLen(s[1:])
	}
	if 1+n >= len(s) || s[1+n] != '$' {
		if n == 0 {
			return 1, tokPunct, nil
		}
		return 1 + n, tokParam, nil
	}
	tag := s[:n+2]
	end := strings.Index(s[len(tag):], tag)
	if end < 0 {
		return 0, 0, fmt.Errorf("unterminated %s string", tag)
	}
	return len(tag) + end + len(tag), tokSpecial, nil
}

func number(s string) int {
	i := 0
	digits := func() {
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
			i++
		}
	}
	digits()
	if i < len(s) && s[i] == '.' {
		i++
		digits()
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			i = j
			digits()
		}
	}
	return i
}

func isNameStart(s string) bool {
	if s == "" {
		return false
	}
	ch := s[0]
	return ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= utf8.RuneSelf
}

func nameLen(s string) int {
	i := 0
	for i < len(s) {
		ch := s[i]
		if ch == '_' || ch == '$' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' {
			i++
			continue
		}
		if ch >= utf8.RuneSelf {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			continue
		}
		break
	}
	return i
}
