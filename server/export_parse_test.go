package server

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCopy(t *testing.T) {
	cases := []struct {
		sql  string
		want *copyStmt
		err  string
	}{
		{sql: "COPY (SELECT 1) TO '/x/a.parquet'", want: &copyStmt{query: "SELECT 1", target: "/x/a.parquet"}},
		{sql: "copy (select ')' AS p, \"(\" FROM t) to 'it''s.csv' with (format csv, header, delimiter '|');",
			want: &copyStmt{query: "select ')' AS p, \"(\" FROM t", target: "it's.csv",
				options: []copyOption{{"FORMAT", "csv"}, {"HEADER", ""}, {"DELIMITER", "'|'"}}}},
		{sql: "/* a */ COPY (SELECT (1) -- )\n) TO 'a.json' (FORMAT 'json', FORCE_QUOTE (a, \"b\"), COMPRESSION_LEVEL -3)",
			want: &copyStmt{query: "SELECT (1) -- )\n", target: "a.json",
				options: []copyOption{{"FORMAT", "'json'"}, {"FORCE_QUOTE", "(a, \"b\")"}, {"COMPRESSION_LEVEL", "-3"}}}},
		{sql: "COPY (SELECT $$ ) $$, E'\\')', /* /* ) */ */ 1) TO 'b'",
			want: &copyStmt{query: "SELECT $$ ) $$, E'\\')', /* /* ) */ */ 1", target: "b"}},
		{sql: "COPY main.\"my table\" (a, b) TO 't.parquet'", want: &copyStmt{table: "main.\"my table\" (a, b)", target: "t.parquet"}},
		{sql: "COPY t FROM 'x.csv' (HEADER)", want: &copyStmt{from: true, table: "t"}},
		{sql: "COPY (SELECT 1) TO E'/x'", err: "plain string literal"},
		{sql: "COPY (SELECT 1) TO 'x' FORMAT csv", err: "in parentheses"},
		{sql: "COPY (SELECT 1 TO 'x'", err: "unbalanced"},
		{sql: "COPY (SELECT 1) TO 'x' (FORMAT ?)", err: "option FORMAT"},
		{sql: "COPY (SELECT 1) TO 'x' (KV_METADATA {a: 1})", err: "option KV_METADATA"},
		{sql: "COPY (SELECT 'x) TO 'y'", err: "unterminated"},
		{sql: "SELECT 1", err: "not a COPY"},
	}
	for _, tc := range cases {
		t.Run(tc.sql, func(t *testing.T) {
			got, err := parseCopy(tc.sql)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCopyStmt_Checks(t *testing.T) {
	cases := []struct {
		sql, format, err string
	}{
		{"COPY (SELECT 1) TO 'a.parquet'", "parquet", ""},
		{"COPY (SELECT 1) TO 'a.ndjson.gz'", "json", ""},
		{"COPY (SELECT 1) TO 'a.txt'", "csv", ""},
		{"COPY (SELECT 1) TO 'a.csv' (FORMAT PARQUET, COMPRESSION zstd)", "parquet", ""},
		{"COPY (SELECT 1) TO 'a' (FORMAT duckdb)", "", "an export writes parquet, csv, json"},
		{"COPY (SELECT 1) TO 'a' (PER_THREAD_OUTPUT true)", "", "not allowed in an export"},
		{"COPY (SELECT 1) TO 'a' (USE_TMP_FILE false)", "", "not allowed in an export"},
		{"COPY (SELECT 1) TO 'a' (SOMETHING 1)", "", "not one an export takes"},
	}
	for _, tc := range cases {
		t.Run(tc.sql, func(t *testing.T) {
			c, err := parseCopy(tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			format, err := c.format()
			if err == nil {
				err = c.checkOptions()
			}
			switch {
			case tc.err == "" && (err != nil || format != tc.format):
				t.Errorf("got %q, %v; want %s", format, err, tc.format)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v; want an error saying %q", err, tc.err)
			}
		})
	}
}

// FuzzParseCopy checks that the COPY an export rebuilds reads back as the
// same export, to the checked file and not to anything the input named.
func FuzzParseCopy(f *testing.F) {
	for _, s := range []string{
		"COPY (SELECT 1) TO '/x/a.parquet' (FORMAT parquet, COMPRESSION zstd)",
		"COPY t (a) TO 'a.csv' WITH (HEADER, DELIMITER '|')",
		"COPY (SELECT ')' -- x\n) TO 'it''s' (FORCE_QUOTE *)",
		"COPY (SELECT $q$ ) $q$ /* ( */) TO 'b' (ROW_GROUP_SIZE 1e5)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		c, err := parseCopy(sql)
		if err != nil || c.from || c.checkOptions() != nil {
			return
		}
		const file = "/root/checked.parquet"
		again, err := parseCopy(c.rebuild(file, "parquet"))
		if err != nil {
			t.Fatalf("rebuilt %q: %v", c.rebuild(file, "parquet"), err)
		}
		if again.target != file || again.table != c.table || (c.table == "" && again.query != "\n"+c.query+"\n") {
			t.Fatalf("rebuilt %q reads as %+v, want the export %+v to %s", c.rebuild(file, "parquet"), again, c, file)
		}
	})
}

func TestExplainsCopy(t *testing.T) {
	for sql, want := range map[string][2]bool{
		"EXPLAIN COPY t TO 'x'":                                {false, true},
		"explain analyze copy t to 'x'":                        {true, true},
		"/* c */ EXPLAIN (FORMAT json, ANALYZE) COPY t TO 'x'": {true, true},
		"EXPLAIN (ANALYZE false) COPY t TO 'x'":                {true, true},
		"EXPLAIN ANALYZE SELECT 1":                             {true, false},
		"EXPLAIN SELECT 'COPY'":                                {false, false},
		"EXPLAIN ANALYZE SELECT 'unterminated":                 {true, true},
	} {
		if a, c := explainsCopy(sql); a != want[0] || c != want[1] {
			t.Errorf("explainsCopy(%q): got analyze %v, copy %v; want %v", sql, a, c, want)
		}
	}
}
