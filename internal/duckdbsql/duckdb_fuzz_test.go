package duckdbsql_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// parser is DuckDB's own parser, on a connection of an in-memory database.
type parser struct {
	c *engine.Conn
}

func newParser(tb testing.TB) *parser {
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Close()
		db.Close()
	})
	return &parser{c: c}
}

// tree is DuckDB's parse tree of sql's statements (json_serialize_sql),
// without the statements' byte offsets; nil when DuckDB cannot give one
// (a parse error, a statement that is not a SELECT, or text that is not
// UTF-8).
func (p *parser) tree(tb testing.TB, sql string) []any {
	if !utf8.ValidString(sql) {
		return nil // no VARCHAR can hold it; the engine's check refuses it
	}
	rows, err := p.c.Query(context.Background(), "SELECT json_serialize_sql($1::VARCHAR)", sql)
	if err != nil {
		tb.Fatalf("json_serialize_sql: %v", err)
	}
	defer rows.Close()
	if !rows.Next() {
		tb.Fatalf("json_serialize_sql: no row: %v", rows.Err())
	}
	var top map[string]any
	if err := json.Unmarshal([]byte(rows.RecordBatch().Column(0).(*array.String).Value(0)), &top); err != nil {
		tb.Fatal(err)
	}
	if failed, _ := top["error"].(bool); failed {
		return nil
	}
	stmts, _ := top["statements"].([]any)
	return withoutLocations(stmts).([]any)
}

func withoutLocations(v any) any {
	switch v := v.(type) {
	case []any:
		for i := range v {
			v[i] = withoutLocations(v[i])
		}
	case map[string]any:
		delete(v, "query_location")
		for k, x := range v {
			v[k] = withoutLocations(x)
		}
	}
	return v
}

var splitSeeds = []string{
	"SELECT 1", "SELECT 1; SELECT 2;", "SELECT ';'; SELECT '''';", `SELECT "a;b"; SELECT 1`,
	"SELECT $$;$$; SELECT $t$ $$ ; $t$", "SELECT E'\\';'; SELECT 2", "SELECT 1 -- ;\n; SELECT 2",
	"SELECT 1 /* /* ; */ ; */; SELECT 2", "SELECT 1 /* ; */", "/* a */ SELECT 1 --\r; SELECT 2",
	"SELECT $1, $2; SELECT ?; SELECT $x", "SELECT a$b$ FROM t; SELECT 1", "SELECT X'00';SELECT B'01'",
	"EXPLAIN SELECT 1; EXPLAIN (FORMAT json) SELECT 2", "CREATE TABLE t(i INT); INSERT INTO t VALUES (1)",
	";;SELECT 1;;", "SELECT 'ü;' || \"ä\"; SELECT 1", "SELECT 1::INT; SELECT 2 -- end", "SELECT 0;ÿ",
}

// FuzzSplit_DuckDB holds Split to DuckDB's parser. The engine trusts a
// split of a non-admin's script only when it finds as many statements as
// DuckDB and each is one statement to DuckDB alone; then each must parse
// to what DuckDB made of it within the whole script (compared as parse
// trees where DuckDB gives them, for SELECTs). And where DuckDB parses a
// text, Split must not fail, nor find fewer statements; it may find more
// only as statements DuckDB drops (a statement of nothing but non-ASCII
// letters is one, in 1.5.6).
func FuzzSplit_DuckDB(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	p := newParser(f)
	f.Fuzz(func(t *testing.T, sql string) {
		if strings.IndexByte(sql, 0) >= 0 {
			return // DuckDB reads up to a NUL; the engine refuses such text
		}
		n := p.c.CountStatements(sql)
		if n == 0 {
			return // DuckDB refuses the text: nothing runs
		}
		stmts, err := duckdbsql.Split(sql)
		if err != nil {
			t.Fatalf("DuckDB finds %d statements in %q; Split fails: %v", n, sql, err)
		}
		counted, dropped := 0, 0
		for _, st := range stmts {
			switch m := p.c.CountStatements(st.Text); m {
			case 0:
				dropped++
			default:
				counted += m
			}
		}
		if len(stmts)-dropped != n || counted != n {
			t.Fatalf("DuckDB finds %d statements in %q; Split finds %d (%d dropped by DuckDB alone, %d statements to DuckDB in all): %+v",
				n, sql, len(stmts), dropped, counted, stmts)
		}
		if len(stmts) != n {
			return // the engine refuses this split
		}
		whole := p.tree(t, sql)
		if whole == nil {
			return
		}
		for i, st := range stmts {
			got := p.tree(t, st.Text)
			if len(got) != 1 || !reflect.DeepEqual(got[0], whole[i]) {
				t.Fatalf("statement %d of %q: Split's text %q parses to\n%v\nwithin the whole script DuckDB parses\n%v", i, sql, st.Text, got, whole[i])
			}
		}
	})
}

func TestSplit_DuckDBSeeds(t *testing.T) {
	p := newParser(t)
	for _, sql := range splitSeeds {
		stmts, err := duckdbsql.Split(sql)
		if err != nil {
			t.Errorf("Split(%q): %v", sql, err)
			continue
		}
		if n := p.c.CountStatements(sql); n != 0 && n != len(stmts) && sql != "SELECT 0;ÿ" {
			t.Errorf("Split(%q) finds %d statements, DuckDB %d", sql, len(stmts), n)
		}
	}
}
