package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/client"
)

// sqlKeywords are the words the shell completes besides names: DuckDB's
// statements and clauses, the ones people type.
var sqlKeywords = []string{
	"ALL", "ALTER", "ANALYZE", "AND", "ANTI", "ANY", "ARRAY", "AS", "ASC", "ASOF", "ATTACH",
	"BEGIN", "BETWEEN", "BIGINT", "BOOLEAN", "BY", "CASE", "CAST", "CHECKPOINT", "COLUMN",
	"COMMIT", "CONSTRAINT", "COPY", "CREATE", "CROSS", "CUBE", "CURRENT_DATE",
	"CURRENT_TIMESTAMP", "DATE", "DECIMAL", "DEFAULT", "DELETE", "DESC", "DESCRIBE",
	"DETACH", "DISTINCT", "DOUBLE", "DROP", "ELSE", "END", "EXCEPT", "EXCLUDE", "EXISTS",
	"EXPLAIN", "EXPORT", "FALSE", "FILTER", "FIRST", "FLOAT", "FOLLOWING", "FOR", "FOREIGN",
	"FROM", "FULL", "GROUP", "GROUPING", "HAVING", "IF", "ILIKE", "IMPORT", "IN", "INDEX",
	"INNER", "INSERT", "INSTALL", "INTEGER", "INTERSECT", "INTERVAL", "INTO", "IS", "JOIN",
	"KEY", "LAST", "LATERAL", "LEFT", "LIKE", "LIMIT", "LOAD", "MACRO", "NATURAL", "NOT",
	"NULL", "NULLS", "OFFSET", "ON", "OR", "ORDER", "OUTER", "OVER", "PARTITION", "PIVOT",
	"POSITIONAL", "PRAGMA", "PRECEDING", "PRIMARY", "QUALIFY", "RANGE", "RECURSIVE",
	"REFERENCES", "RENAME", "REPLACE", "RETURNING", "RIGHT", "ROLLBACK", "ROLLUP", "ROW",
	"ROWS", "SAMPLE", "SCHEMA", "SELECT", "SEMI", "SEQUENCE", "SET", "SHOW", "SIMILAR",
	"SUMMARIZE", "TABLE", "TABLES", "TEMP", "TEMPORARY", "THEN", "TIMESTAMP", "TO",
	"TRANSACTION", "TRUE", "UNBOUNDED", "UNION", "UNIQUE", "UNNEST", "UNPIVOT", "UPDATE",
	"USE", "USING", "VACUUM", "VALUES", "VARCHAR", "VIEW", "WHEN", "WHERE", "WINDOW",
	"WITH", "WITHIN",
}

// isKeyword reports whether name is one of sqlKeywords, in any case.
func isKeyword(name string) bool {
	_, ok := slices.BinarySearch(sqlKeywords, strings.ToUpper(name))
	return ok
}

// catalogTimeout bounds reading the catalog for a completion: a slow
// server makes Tab complete keywords only, not hang.
const catalogTimeout = 3 * time.Second

// catalog holds the server's tables and columns for completion. It is
// read at the first Tab, and again after a statement that may change it.
type catalog struct {
	c      *client.Client
	mu     sync.Mutex
	tables []tableInfo
	loaded bool
}

func newCatalog(c *client.Client) *catalog { return &catalog{c: c} }

// invalidate makes the next completion read the catalog again.
func (k *catalog) invalidate() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.loaded = false
}

// get returns the tables, reading them when needed. A failed read keeps
// what was read before, and is not tried again until invalidate.
func (k *catalog) get() []tableInfo {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.loaded {
		ctx, cancel := context.WithTimeout(context.Background(), catalogTimeout)
		defer cancel()
		if tables, err := listTables(ctx, k.c, &flightsql.GetTablesOpts{IncludeSchema: true}); err == nil {
			k.tables = tables
		}
		k.loaded = true
	}
	return k.tables
}

// complete returns the word before the cursor (a rune index into line)
// and the words that complete it.
func (k *catalog) complete(line string, cursor int) (word string, cands []string) {
	word = wordBefore(line, cursor)
	return word, completions(word, line, k.get())
}

// wordBefore is the name, or dotted name, that ends at the cursor.
func wordBefore(line string, cursor int) string {
	r := []rune(line)
	cursor = min(max(cursor, 0), len(r))
	i := cursor
	for i > 0 && isWordRune(r[i-1]) {
		i--
	}
	return string(r[i:cursor])
}

func isWordRune(r rune) bool {
	return r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// completions are the words of the catalog and the keywords that start
// with word, in any case. After a dot, they are the columns of the table
// or the tables of the schema before it. Otherwise the columns offered
// are those of the tables line names, or of every table when it names
// none.
func completions(word, line string, tables []tableInfo) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] && len(s) >= len(word) && strings.EqualFold(s[:len(word)], word) {
			seen[s] = true
			out = append(out, s)
		}
	}
	if i := strings.LastIndexByte(word, '.'); i >= 0 {
		qual := word[:i]
		for _, t := range tables {
			if strings.EqualFold(qual, t.name) || strings.EqualFold(qual, t.schema+"."+t.name) || strings.EqualFold(qual, t.catalog+"."+t.schema+"."+t.name) {
				for _, c := range t.columns {
					add(qual + "." + c.name)
				}
			}
			if strings.EqualFold(qual, t.schema) || strings.EqualFold(qual, t.catalog+"."+t.schema) {
				add(qual + "." + t.name)
			}
		}
		return out
	}
	named := map[string]bool{}
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return !isWordRune(r) }) {
		named[strings.ToLower(w)] = true
	}
	var cols []tableInfo
	for _, t := range tables {
		add(t.name)
		if named[strings.ToLower(t.name)] || named[strings.ToLower(t.schema+"."+t.name)] {
			cols = append(cols, t)
		}
	}
	if len(cols) == 0 {
		cols = tables
	}
	for _, t := range cols {
		for _, c := range t.columns {
			add(c.name)
		}
	}
	lower := word != "" && strings.ToLower(word) == word
	for _, kw := range sqlKeywords {
		if lower {
			kw = strings.ToLower(kw)
		}
		add(kw)
	}
	return out
}
