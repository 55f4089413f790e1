package engine

import (
	"testing"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// FuzzReadsFiles runs the lexer-based checks of a non-admin's statement on
// any SQL: they run before DuckDB sees it, so none may panic, and a call
// of a reader by name is found whatever follows it.
func FuzzReadsFiles(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM t, 'x.csv'", "((())", ")))", "COPY t FROM 'x'", "DESCRIBE 'a'",
		"SELECT (a, (SELECT 1 FROM (x), 'y'))", "INSERT INTO query (a) VALUES (1, 'a/b')",
		`SELECT * FROM "read_csv"('x') WHERE a IN (1, 2)`, "PIVOT t ON a; SHOW t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		toks, err := duckdbsql.Lex(sql)
		if err != nil {
			return
		}
		readsFilesDirectly(toks)
		readsFilesAsStatement(toks)
		bindsWhatItReads(toks)
		bindCall(toks)
		call, err := duckdbsql.Lex("SELECT * FROM read_csv('x'); " + sql)
		if err != nil {
			return
		}
		if name, _, ok := bindCall(call); !ok || name != "read_csv" {
			t.Errorf("bindCall of a script that calls read_csv first = %q, %v; want read_csv", name, ok)
		}
		if !readsFilesDirectly(call) {
			t.Errorf("readsFilesDirectly of a script that calls read_csv = false")
		}
	})
}
