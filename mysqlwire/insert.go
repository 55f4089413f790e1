package mysqlwire

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/quiverdata/quiver/engine"
)

// Literals written with backslash escapes, the way mysqldump writes a
// dump's rows: INSERT INTO `t` VALUES (1,'it\'s','\0\\\'…'),(…). A BLOB
// column gets its bytes as an escaped string too ('\0…' when mysqldump
// reads the server's status without NO_BACKSLASH_ESCAPES, or 0x… with
// --hex-blob), and there DuckDB would read a string by its own rules (a
// backslash starts \xHH, a non-ASCII character is an error). So an INSERT
// whose values need it is matched to its table's columns, and a value for
// a BLOB column is written as its bytes.

// rewriteBackslashes rewrites the statement text of a session whose
// literals carry backslash escapes for DuckDB. rewritten is false when no
// literal needed it.
func (s *session) rewriteBackslashes(ctx context.Context, text string) (out string, rewritten bool, err error) {
	var blobAt func(int) bool
	if insertRe.MatchString(text) && needsBlobCheck(text) {
		if blobAt, err = s.insertBlobValues(ctx, text); err != nil {
			return "", false, err
		}
	} else if strings.IndexByte(text, '\\') < 0 {
		return text, false, nil
	}
	out = rewriteLiterals(text, quoteBackslash, blobAt)
	return out, out != text, nil
}

// insertRe matches INSERT … INTO t [(cols)] VALUES and REPLACE INTO …:
// submatches table and column list; the match ends where the rows start.
var insertRe = regexp.MustCompile("(?is)^(?:INSERT|REPLACE)(?:\\s+(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE))*\\s+(?:INTO\\s+)?" +
	"((?:`[^`]*`|\"[^\"]*\"|[a-z0-9_$]+)(?:\\.(?:`[^`]*`|\"[^\"]*\"|[a-z0-9_$]+))?)" +
	"\\s*(\\([^()]*\\))?\\s*VALUES?\\s*")

// needsBlobCheck reports whether an INSERT has a value DuckDB could read
// differently in a BLOB column: a literal with a backslash or a byte that
// is not printable ASCII, or a 0x literal.
func needsBlobCheck(text string) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; c == '\\' || c >= 0x80 || c < 0x20 && c != '\n' && c != '\t' && c != '\r' || c == '0' && i+1 < len(text) && text[i+1]|0x20 == 'x' {
			return true
		}
	}
	return false
}

// insertBlobValues returns, for an INSERT … VALUES statement, a function
// that reports whether the value starting at byte i is one of the table's
// BLOB columns; nil when the table has none.
func (s *session) insertBlobValues(ctx context.Context, text string) (func(int) bool, error) {
	m := insertRe.FindStringSubmatchIndex(text)
	name, ok := parseQualifiedName(text[m[2]:m[3]])
	if !ok {
		return nil, nil
	}
	cols, err := s.blobColumns(ctx, name)
	if err != nil || cols == nil {
		return nil, err
	}
	var isBlob []bool // by position in the rows
	if m[4] >= 0 {
		byName := map[string]bool{}
		for _, c := range cols {
			byName[c.name] = c.blob
		}
		for _, c := range splitTopLevel(text[m[4]+1:m[5]-1], ',') {
			isBlob = append(isBlob, byName[strings.ToLower(unquoteWord(strings.TrimSpace(c)))])
		}
	} else {
		for _, c := range cols {
			isBlob = append(isBlob, c.blob)
		}
	}
	starts := map[int]bool{}
	depth, col := 0, 0
	for i := m[1]; i < len(text); i++ {
		switch c := text[i]; c {
		case '(':
			depth++
			if depth == 1 {
				col = 0
			}
		case ')':
			depth--
		case ',':
			if depth == 1 {
				col++
			}
		case '\'', '"', '`':
			end := skipQuoted(text, i, c, c == '\'')
			if c == '\'' && depth == 1 && col < len(isBlob) && isBlob[col] {
				starts[i] = true
			}
			i = end - 1
		case '0':
			if depth == 1 && col < len(isBlob) && isBlob[col] && i+1 < len(text) && text[i+1]|0x20 == 'x' {
				starts[i] = true
			}
		}
	}
	return func(i int) bool { return starts[i] }, nil
}

// blobColumn is a column of the table an INSERT fills.
type blobColumn struct {
	name string // lower-cased
	blob bool
}

// blobColumns looks up a table's columns in order. It returns nil when the
// table has no BLOB column, or is unknown.
func (s *session) blobColumns(ctx context.Context, name []string) ([]blobColumn, error) {
	schema := "current_schema()"
	if len(name) == 2 {
		schema = engine.QuoteString(name[0])
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := queryStrings(ctx, conn, fmt.Sprintf(`SELECT lower(column_name), CASE WHEN data_type = 'BLOB' THEN 1 ELSE 0 END FROM duckdb_columns()
		WHERE database_name = current_database() AND lower(schema_name) = lower(%s) AND lower(table_name) = lower(%s) ORDER BY column_index`,
		schema, engine.QuoteString(name[len(name)-1])))
	if err != nil {
		return nil, err
	}
	var out []blobColumn
	anyBlob := false
	for _, r := range rows {
		c := blobColumn{name: *r[0], blob: r[1] != nil && *r[1] == "1"}
		out = append(out, c)
		anyBlob = anyBlob || c.blob
	}
	if !anyBlob {
		return nil, nil
	}
	return out, nil
}
