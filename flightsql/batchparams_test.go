package flightsql

import (
	"strings"
	"testing"
)

func TestParseInsertValues(t *testing.T) {
	tests := []struct {
		sql        string
		wantOK     bool
		wantTable  string
		wantParts  []string
		wantCols   []string
		wantParams int
	}{
		{sql: "INSERT INTO t VALUES (?, ?)", wantOK: true, wantTable: "t", wantParts: []string{"t"}, wantParams: 2},
		{sql: "insert into t(a,b) values(?,?);", wantOK: true, wantTable: "t", wantParts: []string{"t"}, wantCols: []string{"a", "b"}, wantParams: 2},
		{sql: " -- load\n INSERT /* fast */ INTO \"My \"\"T\"\"\" (\"Col A\", b) VALUES ($1, $2) ; ", wantOK: true,
			wantTable: `"My ""T"""`, wantParts: []string{`My "T"`}, wantCols: []string{"Col A", "b"}, wantParams: 2},
		{sql: "INSERT INTO cat.s.t VALUES (?)", wantOK: true, wantTable: "cat.s.t", wantParts: []string{"cat", "s", "t"}, wantParams: 1},
		{sql: "INSERT INTO s.t VALUES (?)", wantOK: true, wantTable: "s.t", wantParts: []string{"s", "t"}, wantParams: 1},
		{sql: "INSERT INTO a.b.c.d VALUES (?)"},
		{sql: "INSERT INTO t VALUES (?, ? + 1)"},
		{sql: "INSERT INTO t VALUES (?, 'x')"},
		{sql: "INSERT INTO t VALUES (?), (?)"},
		{sql: "INSERT INTO t VALUES ($2, $1)"},
		{sql: "INSERT INTO t VALUES ($1, $1)"},
		{sql: "INSERT INTO t (a) VALUES (?, ?)"},
		{sql: "INSERT INTO t VALUES (?) ON CONFLICT DO NOTHING"},
		{sql: "INSERT INTO t VALUES (?) RETURNING *"},
		{sql: "INSERT OR REPLACE INTO t VALUES (?)"},
		{sql: "INSERT INTO t BY NAME SELECT ?"},
		{sql: "INSERT INTO t SELECT ?, ?"},
		{sql: "INSERT INTO t DEFAULT VALUES"},
		{sql: "INSERT INTO t AS x VALUES (?)"},
		{sql: "INSERT INTO t VALUES (?); DELETE FROM t"},
		{sql: "WITH x AS (SELECT 1) INSERT INTO t VALUES (?)"},
		{sql: "UPDATE t SET a = ?"},
		{sql: `INSERT INTO "" VALUES (?)`},
		{sql: `INSERT INTO "t VALUES (?)`},
		{sql: "INSERT INTO t VALUES (?) /* unterminated"},
		// Comments as DuckDB reads them: /* */ nests, and a line comment
		// ends at a carriage return too.
		{sql: "INSERT INTO t /* /* */ (b) -- */ (a)\n VALUES (?)", wantOK: true, wantTable: "t", wantParts: []string{"t"}, wantCols: []string{"a"}, wantParams: 1},
		{sql: "INSERT INTO t VALUES (?) --\r; DELETE FROM t"},
		{sql: "INSERT INTO t VALUES (?) /* /* */"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			got, ok := parseInsertValues(tt.sql)
			if ok != tt.wantOK {
				t.Fatalf("ok: got %v, want %v (%+v)", ok, tt.wantOK, got)
			}
			if !ok {
				return
			}
			if got.table != tt.wantTable || strings.Join(got.tableParts, "|") != strings.Join(tt.wantParts, "|") {
				t.Errorf("table: got %q %q, want %q %q", got.table, got.tableParts, tt.wantTable, tt.wantParts)
			}
			if strings.Join(got.columns, "|") != strings.Join(tt.wantCols, "|") {
				t.Errorf("columns: got %q, want %q", got.columns, tt.wantCols)
			}
			if got.params != tt.wantParams {
				t.Errorf("params: got %d, want %d", got.params, tt.wantParams)
			}
		})
	}
}

func FuzzParseInsertValues(f *testing.F) {
	for _, s := range []string{"INSERT INTO t VALUES (?, ?)", `insert into "a""b".c (x, "y") values ($1, $2);`, "INSERT INTO t VALUES (?) -- x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		ins, ok := parseInsertValues(sql)
		if !ok {
			return
		}
		if ins.params == 0 || len(ins.tableParts) == 0 || len(ins.tableParts) > 3 {
			t.Errorf("accepted %q as %+v", sql, ins)
		}
		if ins.columns != nil && len(ins.columns) != ins.params {
			t.Errorf("accepted %q with %d columns and %d params", sql, len(ins.columns), ins.params)
		}
	})
}
