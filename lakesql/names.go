package lakesql

import (
	"strings"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// A name is a dotted SQL name as written: lake.quiver.events has three
// parts. Parts are unquoted; quoted parts keep their case.
type name struct {
	parts  []string
	quoted []bool
	// stmt is the index of the statement it appears in, in a script.
	stmt int
	// pos is the byte offset of its first part.
	pos int
}

// token is one lexical unit of SQL that matters for finding names.
type token struct {
	kind   byte // 'w' word, 'q' quoted identifier, '.', ';', '(', 'o' other
	text   string
	pos    int
	quoted bool
}

// tokens reads sql with DuckDB's lexical rules (duckdbsql) as words,
// quoted identifiers, dots, semicolons and parentheses. String literals,
// parameters and numbers become 'o' tokens, so a table name inside a
// string is never taken for a reference; comments are skipped. Text that
// does not lex (an unterminated string or comment) has no tokens: DuckDB
// refuses it too, so it names no lake table.
func tokens(sql string) []token {
	toks, err := duckdbsql.Lex(sql)
	if err != nil {
		return nil
	}
	out := make([]token, 0, len(toks))
	for _, t := range toks {
		switch {
		case t.Kind == duckdbsql.Ident:
			out = append(out, token{kind: 'w', text: t.Text, pos: t.Pos})
		case t.Kind == duckdbsql.Quoted:
			out = append(out, token{kind: 'q', text: t.Value, pos: t.Pos, quoted: true})
		case t.Is(".") || t.Is(";") || t.Is("("):
			out = append(out, token{kind: t.Text[0], text: t.Text, pos: t.Pos})
		default:
			out = append(out, token{kind: 'o', text: t.Text, pos: t.Pos})
		}
	}
	return out
}

// statement is the tokens of one statement of a script.
type statement []token

// statements splits tokens at top-level semicolons.
func statements(toks []token) []statement {
	var out []statement
	start := 0
	for i, t := range toks {
		if t.kind == ';' {
			if i > start {
				out = append(out, toks[start:i])
			}
			start = i + 1
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

// names returns the dotted names of a statement, in order.
func (s statement) names(stmt int) []name {
	var out []name
	for i := 0; i < len(s); i++ {
		if !isIdent(s[i]) || (i > 0 && s[i-1].kind == '.') {
			continue
		}
		n := name{stmt: stmt, pos: s[i].pos}
		j := i
		for {
			n.parts = append(n.parts, s[j].text)
			n.quoted = append(n.quoted, s[j].quoted)
			if j+2 < len(s) && s[j+1].kind == '.' && isIdent(s[j+2]) {
				j += 2
				continue
			}
			break
		}
		out = append(out, n)
		i = j
	}
	return out
}

func isIdent(t token) bool { return t.kind == 'w' || t.kind == 'q' }

// keyword is the statement's first word, upper-cased.
func (s statement) keyword() string {
	if len(s) == 0 || s[0].kind != 'w' {
		return ""
	}
	return strings.ToUpper(s[0].text)
}

// writeTargets returns the names a writing statement writes to: those
// between its first keyword and the start of its body (AS, SELECT,
// VALUES, SET, WHERE, a parenthesis…). Reading statements have none.
func (s statement) writeTargets(stmt int) []name {
	switch s.keyword() {
	case "INSERT", "UPDATE", "DELETE", "MERGE", "TRUNCATE", "CREATE", "DROP", "ALTER", "COMMENT", "DETACH":
	case "COPY":
		// COPY t FROM 'file' writes; COPY t TO 'file' reads.
		for _, t := range s {
			if t.kind == 'w' && strings.EqualFold(t.text, "FROM") {
				goto write
			}
		}
		return nil
	default:
		return nil
	}
write:
	end := len(s)
	for i, t := range s {
		if i == 0 {
			continue
		}
		if t.kind == '(' || t.kind == 'o' {
			end = i
			break
		}
		if t.kind == 'w' && stopWords[strings.ToUpper(t.text)] {
			end = i
			break
		}
	}
	var out []name
	for _, n := range s[:end].names(stmt) {
		if len(n.parts) == 1 && !n.quoted[0] && targetKeywords[strings.ToUpper(n.parts[0])] {
			continue
		}
		out = append(out, n)
	}
	return out
}

// stopWords end the target part of a writing statement.
var stopWords = map[string]bool{
	"AS": true, "SELECT": true, "VALUES": true, "SET": true, "WHERE": true, "WITH": true,
	"USING": true, "DEFAULT": true, "RETURNING": true, "BY": true, "TO": true, "IS": true,
	"RENAME": true, "ADD": true, "ALTER": true,
}

// targetKeywords are the words that may come between a writing statement's
// first keyword and its target.
var targetKeywords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "TRUNCATE": true, "CREATE": true,
	"DROP": true, "ALTER": true, "COMMENT": true, "DETACH": true, "COPY": true,
	"OR": true, "REPLACE": true, "IGNORE": true, "TEMP": true, "TEMPORARY": true, "PERSISTENT": true,
	"TABLE": true, "VIEW": true, "SCHEMA": true, "SEQUENCE": true, "MACRO": true, "FUNCTION": true,
	"TYPE": true, "INDEX": true, "UNIQUE": true, "IF": true, "NOT": true, "EXISTS": true, "INTO": true,
	"ONLY": true, "ON": true, "COLUMN": true, "DATABASE": true, "CASCADE": true, "RESTRICT": true,
	"SECRET": true, "MATERIALIZED": true, "FROM": true,
}
