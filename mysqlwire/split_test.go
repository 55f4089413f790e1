package mysqlwire

import (
	"strings"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		sql  string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1;", []string{"SELECT 1"}},
		{"SELECT 1; SELECT 2;  ", []string{"SELECT 1", " SELECT 2"}},
		{"SELECT ';'; SELECT \";\"", []string{"SELECT ';'", " SELECT \";\""}},
		{"SELECT 'it''s;'; SELECT 2", []string{"SELECT 'it''s;'", " SELECT 2"}},
		{"SELECT E'a\\';b'; SELECT 2", []string{"SELECT E'a\\';b'", " SELECT 2"}},
		{"SELECT 'a\\'; SELECT 2", []string{"SELECT 'a\\'", " SELECT 2"}},
		{"SELECT `a;b` FROM t; SELECT 2", []string{"SELECT `a;b` FROM t", " SELECT 2"}},
		{"SELECT 1 -- c;\n; SELECT 2", []string{"SELECT 1 -- c;\n", " SELECT 2"}},
		{"SELECT /* ; */ 1;;; SELECT 2", []string{"SELECT /* ; */ 1", " SELECT 2"}},
		{"SELECT $$a;b$$; SELECT $x$;$x$", []string{"SELECT $$a;b$$", " SELECT $x$;$x$"}},
		{"SELECT $1; SELECT 2", []string{"SELECT $1", " SELECT 2"}},
		{"-- only a comment\n;  ", nil},
		{"SELECT 'unterminated; SELECT 2", []string{"SELECT 'unterminated; SELECT 2"}},
	}
	for _, tt := range tests {
		got := splitStatements(tt.sql, quoteStandard)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitStatements(%q) = %q, want %q", tt.sql, got, tt.want)
		}
	}
}

func TestSplitStatement_Rest(t *testing.T) {
	stmt, rest := splitStatement("SELECT 1; -- bye\n ;", quoteStandard)
	if stmt != "SELECT 1" || rest != "" {
		t.Errorf("got %q, %q; want the statement and no rest", stmt, rest)
	}
	stmt, rest = splitStatement("SELECT 1; SELECT 2", quoteStandard)
	if stmt != "SELECT 1" || rest != " SELECT 2" {
		t.Errorf("got %q, %q", stmt, rest)
	}
}

func TestStripSQL(t *testing.T) {
	tests := map[string]string{
		"  SELECT 1 ; ":                          "SELECT 1",
		"/* mysql-connector */SELECT @@x":        "SELECT @@x",
		"-- c\n/* d */ SHOW TABLES;;":            "SHOW TABLES",
		"/*!40101 SET NAMES utf8 */":             "SET NAMES utf8",
		"/*!40101 SET a=1 */ /* x */":            "SET a=1",
		"SELECT 1 /* trailing */":                "SELECT 1 /* trailing */",
		"/* unterminated":                        "",
		"\n\t select\t@@version_comment limit 1": "select\t@@version_comment limit 1",
	}
	for in, want := range tests {
		if got := stripSQL(in); got != want {
			t.Errorf("stripSQL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRewriteForDuckDB(t *testing.T) {
	tests := map[string]string{
		"SELECT `a` FROM `t`":                    `SELECT "a" FROM "t"`,
		"SELECT `a``b`, `x\"y`":                  `SELECT "a` + "`" + `b", "x""y"`,
		"SELECT '`not`' AS `c`":                  `SELECT '` + "`not`" + `' AS "c"`,
		"SELECT 1 -- `c`\n, `d`":                 "SELECT 1 -- `c`\n" + `, "d"`,
		"SELECT \"`q`\"":                         "SELECT \"`q`\"",
		"SELECT `open":                           `SELECT "open"`,
		"no backticks at all":                    "no backticks at all",
		"INSERT INTO t VALUES (_binary X'00ff')": "INSERT INTO t VALUES (from_hex('00ff'))",
		"SELECT x'41', X'', ax'41', x'0041'":     "SELECT 'A', '', ax'41', from_hex('0041')",
		"SELECT x'69742773205c', _binary x'41'":  "SELECT 'it''s \\', from_hex('41')",
		"SELECT _utf8mb4'abc', _binary 'x'":      "SELECT 'abc', 'x'",
		`SELECT my_binary 'x', 'x''y', E'\\x'`:   `SELECT my_binary 'x', 'x''y', E'\\x'`,
		`SELECT '_binary X''41''' -- x'41'`:      `SELECT '_binary X''41''' -- x'41'`,
	}
	for in, want := range tests {
		if got := rewriteForDuckDB(in); got != want {
			t.Errorf("rewriteForDuckDB(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSplitStatement(f *testing.F) {
	for _, s := range []string{"SELECT 1; SELECT 2", "SELECT 'a;b'", "SELECT $t$;$t$;", "/* ; */;", "`a;`;", "E'\\';'",
		"/*!40101 SET x='*/' */", "(1,'it\\'s',_binary '\\0',X'41',0x1F,NULL)", "SELECT 'a\\'; SELECT 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		stmt, rest := splitStatement(sql, quoteStandard)
		if len(stmt) > len(sql) || (rest != "" && !strings.HasSuffix(sql, rest)) {
			t.Fatalf("splitStatement(%q) = %q, %q", sql, stmt, rest)
		}
		_ = splitStatements(sql, quoteBackslash)
		_ = rewriteForDuckDB(sql)
		_ = rewriteLiterals(sql, quoteBackslash, func(i int) bool { return i%2 == 0 })
		_ = stripSQL(sql)
		_ = execComments(sql)
		if rec, ok := readValues(sql, quoteBackslash, []tableColumn{{"a", kindNumber}, {"b", kindText}, {"c", kindBlob}}); ok {
			rec.Release()
		}
	})
}
