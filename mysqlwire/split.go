package mysqlwire

import (
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds the small SQL lexer the endpoint needs: splitting a
// multi-statement query into statements, finding where a statement's text
// starts after comments, and rewriting the MySQL spellings DuckDB reads
// differently. It knows DuckDB's quoting rules ('…' with '' doubling, E'…'
// with backslash escapes, "…", $tag$…$tag$, -- and /* */ comments) plus
// MySQL's backticks, backslash-escaped '…' literals, 0x literals and
// executable /*!…*/ comments, and nothing else: everything it does not
// have to understand passes through untouched.

// quoting is how a '…' literal reads. DuckDB, and MySQL under
// NO_BACKSLASH_ESCAPES, take only a doubled quote as an escape; MySQL's
// default also takes a backslash ('it\'s', 'a\nb'), and so does a session
// whose sql_mode lacks NO_BACKSLASH_ESCAPES (see session.quoting).
type quoting uint8

const (
	quoteStandard  quoting = iota // 'it''s'
	quoteBackslash                // 'it\'s' or 'it''s'
)

// splitStatement returns the first statement of sql (without its
// terminating semicolon) and the rest after it, reading literals with q.
// rest is "" when nothing but blanks, comments and semicolons follows.
func splitStatement(sql string, q quoting) (stmt, rest string) {
	end := scanQuoted(sql, q, nil)
	if end >= len(sql) {
		return sql, ""
	}
	stmt, rest = sql[:end], sql[end+1:]
	if isBlankSQL(rest) {
		rest = ""
	}
	return stmt, rest
}

// splitStatements splits sql into its non-blank statements, reading
// literals with q.
func splitStatements(sql string, q quoting) []string {
	var out []string
	for sql != "" {
		var stmt string
		stmt, sql = splitStatement(sql, q)
		if !isBlankSQL(stmt) {
			out = append(out, stmt)
		}
	}
	return out
}

// isBlankSQL reports whether s holds only white space, comments and
// semicolons.
func isBlankSQL(s string) bool {
	for {
		s = skipSpaceAndComments(s)
		if s == "" {
			return true
		}
		if s[0] != ';' {
			return false
		}
		s = s[1:]
	}
}

// hasComment reports whether sql, blank otherwise, holds a comment: MySQL
// answers such a query with an OK, and only an empty one with an error.
func hasComment(sql string) bool {
	s := strings.TrimLeft(sql, " \t\r\n\f\v;")
	return strings.HasPrefix(s, "--") || strings.HasPrefix(s, "/*")
}

// stripSQL returns the statement text without leading comments, leading and
// trailing white space and trailing semicolons. A statement that starts
// with a MySQL executable comment (/*!40101 SET NAMES utf8 */, or
// /*!50001 CREATE ALGORITHM=UNDEFINED */ /*!50001 VIEW v AS …*/) is MySQL's
// through and through: its executable comments are unwrapped (see
// execComments).
func stripSQL(s string) string {
	s = skipSpaceAndComments(s)
	if strings.HasPrefix(s, "/*!") {
		s = skipSpaceAndComments(execComments(s))
	}
	for {
		t := strings.TrimRight(s, " \t\r\n\f\v")
		t = strings.TrimSuffix(t, ";")
		if t == s {
			return s
		}
		s = t
	}
}

// mysqlVersionID is the server version as MySQL's executable comments
// compare it: 8.0.33 is 80033.
const mysqlVersionID = 80033

// execComments reads sql's comments as MySQL does. The body of an
// executable comment, /*! body */ or /*!NNNNN body */ with NNNNN up to
// mysqlVersionID, is SQL; one for a later version, MariaDB's /*M!NNNNNN …*/
// and every other comment are blanks. Literals and quoted names are left
// alone. sql is returned as is when it holds no comment.
func execComments(sql string) string {
	if !strings.Contains(sql, "/*") {
		return sql
	}
	var b strings.Builder
	b.Grow(len(sql))
	last, inBody := 0, false
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i, c, false)
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				j = len(sql) - i
			}
			i += j
		case inBody && c == '*' && strings.HasPrefix(sql[i:], "*/"):
			b.WriteString(sql[last:i])
			b.WriteByte(' ')
			i += 2
			last, inBody = i, false
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			b.WriteString(sql[last:i])
			b.WriteByte(' ')
			if !inBody && strings.HasPrefix(sql[i:], "/*!") {
				j := i + 3
				for j < len(sql) && j < i+9 && sql[j] >= '0' && sql[j] <= '9' {
					j++
				}
				if v, err := strconv.Atoi(sql[i+3 : j]); j == i+3 || err == nil && v <= mysqlVersionID {
					i, last, inBody = j, j, true
					continue
				}
			}
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			i += end + 4
			last = i
		default:
			i++
		}
	}
	b.WriteString(sql[last:])
	return b.String()
}

// skipSpaceAndComments drops leading white space and comments.
func skipSpaceAndComments(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n\f\v")
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return ""
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*") && !strings.HasPrefix(s, "/*!"):
			i := strings.Index(s[2:], "*/")
			if i < 0 {
				return ""
			}
			s = s[i+4:]
		default:
			return s
		}
	}
}

// tokenKind is what scanSQL reports to its callback.
type tokenKind uint8

const (
	tokBacktick  tokenKind = iota // a `quoted` identifier
	tokString                     // a '…' or "…" literal
	tokHexNumber                  // a 0x1F literal
)

// rewriteForDuckDB rewrites the MySQL spellings DuckDB would misread:
// `identifier` becomes "identifier", X'hex' becomes from_hex('hex') (a
// BLOB, as in MySQL; DuckDB would read a bit string), and a charset
// introducer before a literal (_binary X'…', _utf8mb4'…', as PyMySQL and
// Connector/J send) is dropped. Strings and comments are left alone.
func rewriteForDuckDB(sql string) string {
	return rewriteLiterals(sql, quoteStandard, nil)
}

// rewriteLiterals is rewriteForDuckDB for a statement whose '…' literals
// read with q. With quoteBackslash, a literal with a backslash escape is
// decoded and written again as DuckDB reads it (see writeDuckString).
// blobAt, when not nil, reports whether the value starting at byte i (a
// literal's opening quote, or a 0x literal) is bound for a BLOB column:
// such a value is written as its bytes, from_hex('…'), where DuckDB would
// cast a string to BLOB by its own escape rules.
func rewriteLiterals(sql string, q quoting, blobAt func(i int) bool) string {
	var b strings.Builder
	last := 0
	emit := func(upTo int) {
		if b.Len() == 0 {
			b.Grow(len(sql) + 16)
		}
		b.WriteString(sql[last:upTo])
	}
	scanQuoted(sql, q, func(kind tokenKind, start, end int) {
		switch kind {
		case tokBacktick:
			emit(start)
			inner := sql[start+1 : end]
			if end-1 > start && sql[end-1] == '`' {
				inner = sql[start+1 : end-1] // drop the closing backtick
			}
			inner = strings.ReplaceAll(inner, "``", "`")
			b.WriteByte('"')
			b.WriteString(strings.ReplaceAll(inner, `"`, `""`))
			b.WriteByte('"')
			last = end
		case tokHexNumber:
			if blobAt == nil || !blobAt(start) || start < last {
				return
			}
			emit(start)
			digits := sql[start+2 : end]
			if len(digits)%2 == 1 {
				digits = "0" + digits // MySQL pads 0xABC on the left
			}
			b.WriteString("from_hex('" + digits + "')")
			last = end
		case tokString:
			if sql[start] != '\'' {
				return
			}
			lit := start
			hex := start > 0 && sql[start-1]|0x20 == 'x' && (start == 1 || !isIdentByte(sql[start-2]))
			if hex {
				lit = start - 1
			}
			escaped := q == quoteBackslash && !hex && strings.IndexByte(sql[start:end], '\\') >= 0
			blob := blobAt != nil && blobAt(start)
			if q == quoteBackslash && !hex && start > 0 && sql[start-1]|0x20 == 'e' && (start == 1 || !isIdentByte(sql[start-2])) {
				return // E'…' is DuckDB's; MySQL has none
			}
			from := lit
			k, charset := introducerBefore(sql, lit)
			introduced := charset != ""
			switch {
			case introduced && k >= last:
				from = k
			case !hex && !escaped && !blob:
				return
			}
			if from < last {
				return
			}
			emit(from)
			terminated := end-1 > start && sql[end-1] == '\''
			switch {
			case hex && terminated:
				writeHexLiteral(&b, sql[start+1:end-1], charset == "binary" || blob)
			case (escaped || blob || charset == "binary") && terminated:
				body := sql[start+1 : end-1]
				if q == quoteBackslash {
					writeDuckString(&b, unescapeMySQL(body), charset == "binary" || blob)
				} else {
					writeDuckString(&b, []byte(strings.ReplaceAll(body, "''", "'")), blob)
				}
			default:
				b.WriteString(sql[lit:end])
			}
			last = end
		}
	})
	if last == 0 {
		return sql
	}
	b.WriteString(sql[last:])
	return b.String()
}

// unescapeMySQL decodes the text between the quotes of a '…' literal
// written with MySQL's backslash escapes: \0 \b \n \r \t \Z stand for
// NUL, backspace, newline, return, tab and Ctrl-Z; \% and \_ keep their
// backslash (for LIKE); any other \x is x; and a doubled quote is one.
func unescapeMySQL(body string) []byte {
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '\'' && i+1 < len(body) && body[i+1] == '\'':
			i++
		case c == '\\' && i+1 < len(body):
			i++
			switch c = body[i]; c {
			case '0':
				c = 0
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'Z':
				c = 0x1a
			case '%', '_':
				out = append(out, '\\')
			}
		}
		out = append(out, c)
	}
	return out
}

// writeDuckString writes raw as a DuckDB expression with its value: a
// '…' literal when raw is UTF-8 text (NUL bytes, which a DuckDB literal
// cannot hold, joined in as chr(0)), else, or when blob is set, its bytes
// as from_hex('…'), a BLOB.
func writeDuckString(b *strings.Builder, raw []byte, blob bool) {
	if blob || !utf8.Valid(raw) {
		b.WriteString("from_hex('")
		b.WriteString(hex.EncodeToString(raw))
		b.WriteString("')")
		return
	}
	parts := strings.Split(string(raw), "\x00")
	if len(parts) > 1 {
		b.WriteByte('(')
	}
	for i, p := range parts {
		if i > 0 {
			b.WriteString(" || chr(0) || ")
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(p, "'", "''"))
		b.WriteByte('\'')
	}
	if len(parts) > 1 {
		b.WriteByte(')')
	}
}

// writeHexLiteral writes MySQL's X'hex' for DuckDB. MySQL gives it the
// type its context wants, which DuckDB cannot: it becomes a BLOB
// (from_hex) when introduced by _binary or when its bytes are not plain
// text, and a string literal when they are UTF-8 text, which is how
// Connector/J sends string parameters under NO_BACKSLASH_ESCAPES.
func writeHexLiteral(b *strings.Builder, digits string, binary bool) {
	raw, err := hex.DecodeString(digits)
	if err == nil && !binary && isPlainText(raw) {
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(string(raw), "'", "''"))
		b.WriteByte('\'')
		return
	}
	b.WriteString("from_hex('")
	b.WriteString(digits)
	b.WriteString("')")
}

// isPlainText reports whether raw is UTF-8 without control characters
// other than tab and line breaks.
func isPlainText(raw []byte) bool {
	for _, c := range raw {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(raw)
}

// introducerBefore finds a MySQL charset introducer (_binary, _utf8mb4, …)
// ending just before the literal at i, and returns where it starts and its
// charset, or "".
func introducerBefore(sql string, i int) (int, string) {
	j := i
	for j > 0 && isSpaceByte(sql[j-1]) {
		j--
	}
	k := j
	for k > 0 && isIdentByte(sql[k-1]) {
		k--
	}
	if j-k < 2 || sql[k] != '_' {
		return 0, ""
	}
	switch cs := strings.ToLower(sql[k+1 : j]); cs {
	case "binary", "utf8", "utf8mb3", "utf8mb4", "latin1", "ascii":
		return k, cs
	}
	return 0, ""
}

// scanSQL walks sql and returns the index of the first top-level semicolon,
// or len(sql) when there is none, or when onToken is set, the end of the
// text. onToken, if not nil, is called with the bounds [start, end) of
// every backtick-quoted identifier and string literal, end including the
// closing quote when there is one. The scan never fails: an unterminated
// literal or comment runs to the end of the text.
func scanSQL(sql string, onToken func(kind tokenKind, start, end int)) int {
	return scanQuoted(sql, quoteStandard, onToken)
}

// scanQuoted is scanSQL reading '…' literals with q.
func scanQuoted(sql string, q quoting, onToken func(kind tokenKind, start, end int)) int {
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case c == ';' && onToken == nil:
			return i
		case c == '\'' || c == '"':
			escapes := c == '\'' && (q == quoteBackslash || i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i == 1 || !isIdentByte(sql[i-2])))
			end := skipQuoted(sql, i, c, escapes)
			if onToken != nil {
				onToken(tokString, i, end)
			}
			i = end
		case c == '`':
			end := skipQuoted(sql, i, '`', false)
			if onToken != nil {
				onToken(tokBacktick, i, end)
			}
			i = end
		case c == '-' && i+1 < n && sql[i+1] == '-':
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return n
			}
			i += j + 1
		case c == '/' && i+1 < n && sql[i+1] == '*':
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return n
			}
			i += j + 4
		case c == '$' && (i == 0 || !isIdentByte(sql[i-1])):
			i = skipDollarQuoted(sql, i)
		case c == '0' && i+2 < n && sql[i+1]|0x20 == 'x' && isHexDigit(sql[i+2]) && (i == 0 || !isIdentByte(sql[i-1])):
			j := i + 2
			for j < n && isHexDigit(sql[j]) {
				j++
			}
			if onToken != nil && (j == n || !isIdentByte(sql[j])) {
				onToken(tokHexNumber, i, j)
			}
			i = j
		default:
			i++
		}
	}
	return n
}

// skipQuoted returns the index just past the literal that opens at i with
// quote q. A doubled quote stands for itself; with escapes, so does a
// backslash-escaped one.
func skipQuoted(sql string, i int, q byte, escapes bool) int {
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			if escapes {
				j++
			}
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// skipDollarQuoted returns the index past a $tag$…$tag$ string opening at
// i, or i+1 when the dollar sign opens no such string (a $1 parameter).
func skipDollarQuoted(sql string, i int) int {
	j := i + 1
	for j < len(sql) && isIdentByte(sql[j]) {
		j++
	}
	if j >= len(sql) || sql[j] != '$' || (j > i+1 && sql[i+1] >= '0' && sql[i+1] <= '9') {
		return i + 1
	}
	tag := sql[i : j+1]
	k := strings.Index(sql[j+1:], tag)
	if k < 0 {
		return len(sql)
	}
	return j + 1 + k + len(tag)
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f'
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// splitTopLevel splits s at sep outside quotes and parentheses.
func splitTopLevel(s string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"', '`':
			i = skipQuoted(s, i, c, false) - 1
		case '(':
			depth++
		case ')':
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// parseStringLiteral reads the '…' or "…" literal at the start of s, with
// doubled quotes and no backslash escapes (NO_BACKSLASH_ESCAPES), and
// returns its value and the text after it.
func parseStringLiteral(s string) (val, rest string, ok bool) {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return "", s, false
	}
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", s, false
}

// unquoteWord strips one level of `…`, "…" or '…' quoting.
func unquoteWord(s string) string {
	if len(s) >= 2 {
		switch q := s[0]; q {
		case '`', '"', '\'':
			if s[len(s)-1] == q {
				return strings.ReplaceAll(s[1:len(s)-1], string([]byte{q, q}), string(q))
			}
		}
	}
	return s
}

// parseQualifiedName splits name or db.name, each part bare or quoted with
// backticks or double quotes.
func parseQualifiedName(s string) ([]string, bool) {
	var parts []string
	for {
		if s == "" {
			return nil, false
		}
		var part string
		switch q := s[0]; q {
		case '`', '"':
			end := skipQuoted(s, 0, q, false)
			if end > len(s) || s[end-1] != q || end < 2 {
				return nil, false
			}
			part, s = unquoteWord(s[:end]), s[end:]
		default:
			end := 0
			for end < len(s) && (isIdentByte(s[end]) || s[end] == '$') {
				end++
			}
			if end == 0 {
				return nil, false
			}
			part, s = s[:end], s[end:]
		}
		parts = append(parts, part)
		if s == "" {
			return parts, len(parts) <= 2
		}
		if s[0] != '.' {
			return nil, false
		}
		s = s[1:]
	}
}

// isSpaceByte reports whether c is white space between SQL tokens.
func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
