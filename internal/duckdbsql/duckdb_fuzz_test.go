package duckdbsql_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// parser is DuckDB's own parser, on a connection of an in-memory database
// (c), with a second, raw connection (raw, of its own in-memory database)
// for what the engine does not expose: the type of each statement of a
// script, prepared without running the ones before it. Both databases
// hold a table t, so that statements reading it bind and are planned.
type parser struct {
	c   *engine.Conn
	db  duckdb.Database
	raw duckdb.Connection
}

// parserTable is the table both of a parser's databases hold.
const parserTable = "CREATE TABLE t(i INTEGER, s VARCHAR)"

func newParser(tb testing.TB) *parser {
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		tb.Fatal(err)
	}
	p := &parser{c: c}
	tb.Cleanup(func() {
		c.Close()
		db.Close()
	})
	if _, err := c.Exec(ctx, parserTable); err != nil {
		tb.Fatal(err)
	}
	if duckdb.Open(":memory:", &p.db) == duckdb.StateError {
		tb.Fatal("open a raw DuckDB database: failed")
	}
	tb.Cleanup(func() { duckdb.Close(&p.db) })
	if duckdb.Connect(p.db, &p.raw) == duckdb.StateError {
		tb.Fatal("connect to the raw DuckDB database: failed")
	}
	tb.Cleanup(func() { duckdb.Disconnect(&p.raw) })
	var res duckdb.Result
	if duckdb.Query(p.raw, parserTable, &res) == duckdb.StateError {
		msg := duckdb.ResultError(&res)
		duckdb.DestroyResult(&res)
		tb.Fatalf("raw DuckDB database: %s", msg)
	}
	duckdb.DestroyResult(&res)
	return p
}

// types returns the statement type DuckDB gives each statement of sql
// when it prepares it (binding, not running it, nor the ones before it):
// StatementTypeInvalid for a statement that does not prepare. It is nil
// when DuckDB finds no statement.
func (p *parser) types(sql string) []duckdb.StatementType {
	var ext duckdb.ExtractedStatements
	n := duckdb.ExtractStatements(p.raw, sql, &ext)
	defer duckdb.DestroyExtracted(&ext)
	var out []duckdb.StatementType
	for i := duckdb.IdxT(0); i < n; i++ {
		var ps duckdb.PreparedStatement
		typ := duckdb.StatementTypeInvalid
		if duckdb.PrepareExtractedStatement(p.raw, ext, i, &ps) != duckdb.StateError {
			typ = duckdb.PreparedStatementType(ps)
		}
		duckdb.DestroyPrepare(&ps)
		out = append(out, typ)
	}
	return out
}

// plan is DuckDB's bound plan of sql's statements (json_serialize_plan),
// as duckdbsql reads it; nil when DuckDB cannot plan or serialize one of
// them, or sql is not UTF-8.
func (p *parser) plan(tb testing.TB, sql string) *duckdbsql.Plan {
	if !utf8.ValidString(sql) {
		return nil
	}
	js := p.scalar(tb, "SELECT json_serialize_plan($1::VARCHAR, skip_null := true, skip_empty := true)", sql)
	plan, err := duckdbsql.ReadPlan([]byte(js))
	if _, refused := errors.AsType[*duckdbsql.PlanError](err); refused {
		return nil
	}
	if err != nil {
		tb.Fatalf("read the plan of %q: %v", sql, err)
	}
	return plan
}

// scalar runs query, which gives one VARCHAR, with arg.
func (p *parser) scalar(tb testing.TB, query, arg string) string {
	rows, err := p.c.Query(context.Background(), query, arg)
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	if !rows.Next() {
		tb.Fatalf("%s: no row: %v", query, rows.Err())
	}
	return rows.RecordBatch().Column(0).(*array.String).Value(0)
}

// tree is DuckDB's parse tree of sql's statements (json_serialize_sql),
// each statement as ReadTree keeps it; nil when DuckDB cannot give one (a
// parse error, a statement that is not a SELECT, or text that is not
// UTF-8).
func (p *parser) tree(tb testing.TB, sql string) []json.RawMessage {
	if !utf8.ValidString(sql) {
		return nil // no VARCHAR can hold it; the engine's check refuses it
	}
	tree, err := duckdbsql.ReadTree([]byte(p.scalar(tb, "SELECT json_serialize_sql($1::VARCHAR)", sql)))
	if _, refused := errors.AsType[*duckdbsql.PlanError](err); refused {
		return nil
	}
	if err != nil {
		tb.Fatalf("read the tree of %q: %v", sql, err)
	}
	var out []json.RawMessage
	for _, st := range tree.Statements {
		out = append(out, st.Raw)
	}
	return out
}

var splitSeeds = []string{
	"SELECT 1", "SELECT 1; SELECT 2;", "SELECT ';'; SELECT '''';", `SELECT "a;b"; SELECT 1`,
	"SELECT $$;$$; SELECT $t$ $$ ; $t$", "SELECT E'\\';'; SELECT 2", "SELECT 1 -- ;\n; SELECT 2",
	"SELECT 1 /* /* ; */ ; */; SELECT 2", "SELECT 1 /* ; */", "/* a */ SELECT 1 --\r; SELECT 2",
	"SELECT $1, $2; SELECT ?; SELECT $x", "SELECT a$b$ FROM t; SELECT 1", "SELECT X'00';SELECT B'01'",
	"EXPLAIN SELECT 1; EXPLAIN (FORMAT json) SELECT 2", "CREATE TABLE t(i INT); INSERT INTO t VALUES (1)",
	";;SELECT 1;;", "SELECT 'ü;' || \"ä\"; SELECT 1", "SELECT 1::INT; SELECT 2 -- end", "SELECT 0;ÿ",
	"SELECT lower(s) FROM t; SELECT count(*) FROM range(3) -- ;", "INSERT INTO t SELECT i + 1, upper(s) FROM t; SET threads = 1",
}

// maxFuzzText bounds the texts FuzzSplit_DuckDB tries. DuckDB's parser
// takes time that grows much faster than the text on some of them (2,000
// unary pluses and a letter take it seconds to refuse), which the fuzzer
// would take for a hang, while the lexer's faults show in short texts.
const maxFuzzText = 256

// FuzzSplit_DuckDB holds Split to DuckDB's parser. The engine trusts a
// split of a non-admin's script only when it finds as many statements as
// DuckDB and each is one statement to DuckDB alone, and then checks each
// statement by its own text. So where they agree, each statement's text
// must be what DuckDB made of it within the whole script: the same kind
// (the statement type DuckDB prepares it as), the same functions and
// operators where DuckDB plans the script (json_serialize_plan, read by
// ReadPlan, as the engine's check reads it), and the same parse tree
// where DuckDB gives one (SELECTs). And where DuckDB parses a text, Split
// must not fail, nor find fewer statements; it may find more only as
// statements DuckDB drops (a statement of nothing but non-ASCII letters
// is one, in 1.5.6).
//
// Texts longer than maxFuzzText are skipped.
func FuzzSplit_DuckDB(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	p := newParser(f)
	f.Fuzz(func(t *testing.T, sql string) {
		if strings.IndexByte(sql, 0) >= 0 {
			return // DuckDB reads up to a NUL; the engine refuses such text
		}
		if len(sql) > maxFuzzText {
			return
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
		kinds := p.types(sql)
		for i, st := range stmts {
			if got := p.types(st.Text); len(got) != 1 || got[0] != kinds[i] {
				t.Fatalf("statement %d of %q: Split's text %q prepares as %v; within the whole script DuckDB prepares it as %v", i, sql, st.Text, got, kinds[i])
			}
		}
		if plan := p.plan(t, sql); plan != nil {
			var roots []string
			var calls []duckdbsql.Call
			for i, st := range stmts {
				one := p.plan(t, st.Text)
				if one == nil {
					t.Fatalf("statement %d of %q: DuckDB plans the whole script but not Split's text %q", i, sql, st.Text)
				}
				roots = append(roots, one.Roots...)
				calls = append(calls, one.Calls...)
			}
			if !reflect.DeepEqual(roots, plan.Roots) || !reflect.DeepEqual(callSet(calls), callSet(plan.Calls)) {
				t.Fatalf("%q: Split's statements plan to %v calling\n%+v\nthe whole script to %v calling\n%+v", sql, roots, calls, plan.Roots, plan.Calls)
			}
		}
		whole := p.tree(t, sql)
		if whole == nil {
			return
		}
		for i, st := range stmts {
			got := p.tree(t, st.Text)
			if len(got) != 1 {
				t.Fatalf("statement %d of %q: Split's text %q parses to %d statements", i, sql, st.Text, len(got))
			}
			if same, err := duckdbsql.SameTree(got[0], whole[i]); err != nil || !same {
				t.Fatalf("statement %d of %q: Split's text %q parses to\n%s\nwithin the whole script DuckDB parses\n%s (%v)", i, sql, st.Text, got[0], whole[i], err)
			}
		}
	})
}

// callSet is calls as sorted text: ReadPlan meets them in an order of its
// own (it walks JSON objects as maps).
func callSet(calls []duckdbsql.Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = fmt.Sprintf("%+v", c)
	}
	slices.Sort(out)
	return out
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
