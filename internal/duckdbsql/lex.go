package duckdbsql

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a Token.
type Kind int

// The kinds of tokens. White space and comments are not tokens.
const (
	Ident  Kind = iota + 1 // a name or keyword, as written
	Quoted                 // a "quoted name"
	String                 // a 'string', with or without a prefix (E'…', X'…', …)
	Dollar                 // a $tag$…$tag$ string
	Number                 // 42, 1.5, 1e6
	Param                  // ?, $1, $name
	Punct                  // one character of punctuation or of an operator
)

// Token is one lexical unit of SQL: its text is sql[Pos:End].
type Token struct {
	Kind     Kind
	Pos, End int
	// Text is the token as written.
	Text string
	// Value is a name's or a quoted name's name, or a string's value
	// (for a plain '…' or E'…' string; a prefixed or dollar-quoted
	// string's value is its text between the quotes, as written).
	Value string
}

// Is reports whether t is the punctuation p.
func (t Token) Is(p string) bool { return t.Kind == Punct && t.Text == p }

// IsWord reports whether t is the unquoted word w, in any case.
func (t Token) IsWord(w string) bool { return t.Kind == Ident && strings.EqualFold(t.Text, w) }

// Lex splits sql into tokens, skipping white space and comments. It fails
// on an unterminated string, name or comment, as DuckDB does.
func Lex(sql string) ([]Token, error) {
	var toks []Token
	err := scan(sql, func(t Token) bool { toks = append(toks, t); return true })
	return toks, err
}

// scan calls emit with each token of sql in turn, until it returns false.
func scan(sql string, emit func(Token) bool) error {
	i := 0
	for i < len(sql) {
		ch := sql[i]
		start := i
		var t Token
		switch {
		case isSpace(ch):
			i++
			continue
		case strings.HasPrefix(sql[i:], "--"):
			// A line comment ends at a newline or a carriage return.
			j := strings.IndexAny(sql[i:], "\n\r")
			if j < 0 {
				return nil
			}
			i += j + 1
			continue
		case strings.HasPrefix(sql[i:], "/*"):
			n, err := blockComment(sql[i:])
			if err != nil {
				return err
			}
			i += n
			continue
		case ch == '\'':
			v, n, err := quoted(sql[i:], '\'', false)
			if err != nil {
				return err
			}
			i += n
			t = Token{Kind: String, Value: v}
		case ch == '"':
			v, n, err := quoted(sql[i:], '"', false)
			if err != nil {
				return err
			}
			i += n
			t = Token{Kind: Quoted, Value: v}
		case ch == '?':
			i++
			t = Token{Kind: Param}
		case ch == '$':
			n, kind, err := dollar(sql[i:])
			if err != nil {
				return err
			}
			i += n
			t = Token{Kind: kind}
			if kind == Dollar {
				tag := strings.IndexByte(sql[start+1:], '$') + 2
				t.Value = sql[start+tag : i-tag]
			}
		case ch >= '0' && ch <= '9' || ch == '.' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9':
			i += number(sql[i:])
			t = Token{Kind: Number}
		case isNameStart(sql[i:]):
			i += nameLen(sql[i:])
			word := sql[start:i]
			if i < len(sql) && sql[i] == '\'' {
				// E'…', X'…', B'…', N'…' and a type's literal (DATE'…'):
				// a string right after a word. Only E'…' takes
				// backslash escapes.
				v, n, err := quoted(sql[i:], '\'', strings.EqualFold(word, "e"))
				if err != nil {
					return err
				}
				if !strings.EqualFold(word, "e") {
					// A word before a plain string is a name of its own.
					if !emit(Token{Kind: Ident, Pos: start, End: i, Text: word, Value: word}) {
						return nil
					}
					start = i
				}
				i += n
				t = Token{Kind: String, Value: v}
				break
			}
			t = Token{Kind: Ident, Value: word}
		default:
			_, n := utf8.DecodeRuneInString(sql[i:])
			i += n
			t = Token{Kind: Punct}
		}
		t.Pos, t.End, t.Text = start, i, sql[start:i]
		if !emit(t) {
			return nil
		}
	}
	return nil
}

func isSpace(ch byte) bool {
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v'
}

// blockComment returns the length of the /* */ comment at the start of s;
// comments nest, as in DuckDB.
func blockComment(s string) (int, error) {
	depth := 0
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(s[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i, nil
			}
		default:
			i++
		}
	}
	return 0, fmt.Errorf("unterminated /* comment")
}

// quoted reads a literal quoted by q at the start of s, a doubled q
// standing for one, and with backslash escapes when escapes is set. It
// returns the value and the literal's length.
func quoted(s string, q byte, escapes bool) (string, int, error) {
	// Most literals hold no escape and no doubled quote: their value is
	// their text between the quotes.
	for i := 1; i < len(s); i++ {
		if escapes && s[i] == '\\' {
			break
		}
		if s[i] == q {
			if i+1 < len(s) && s[i+1] == q {
				break
			}
			return s[1:i], i + 1, nil
		}
	}
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
	what := "string"
	if q == '"' {
		what = "quoted name"
	}
	return "", 0, fmt.Errorf("unterminated %s", what)
}

// dollar reads a $1 or $name parameter or a $tag$…$tag$ string at the
// start of s. A tag is a name without dollar signs, or nothing ($$…$$).
func dollar(s string) (int, Kind, error) {
	j := 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j > 1 {
		return j, Param, nil
	}
	tag := 0
	if isNameStart(s[1:]) {
		for 1+tag < len(s) && s[1+tag] != '$' && isNameByte(s[1+tag]) {
			tag++
		}
	}
	if 1+tag >= len(s) || s[1+tag] != '$' {
		if tag == 0 {
			return 1, Punct, nil
		}
		// $name: a named parameter, which may go on with more name
		// characters (dollar signs included).
		return 1 + nameLen(s[1:]), Param, nil
	}
	delim := s[:tag+2]
	end := strings.Index(s[len(delim):], delim)
	if end < 0 {
		return 0, 0, fmt.Errorf("unterminated %s string", delim)
	}
	return len(delim) + end + len(delim), Dollar, nil
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

// isNameByte reports whether ch may go on a name, apart from '$' (which
// may, but ends a dollar quote's tag) and multi-byte characters.
func isNameByte(ch byte) bool {
	return ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch >= utf8.RuneSelf
}

// nameLen is the length of the name at the start of s: name characters
// and dollar signs.
func nameLen(s string) int {
	i := 0
	for i < len(s) {
		ch := s[i]
		if isNameByte(ch) && ch < utf8.RuneSelf || ch == '$' {
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
