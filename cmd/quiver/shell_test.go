package main

import (
	"slices"
	"strings"
	"testing"
)

func TestInputComplete(t *testing.T) {
	for _, tt := range []struct {
		input string
		want  bool
	}{
		{"", true},
		{"   ", true},
		{"-- a comment", true},
		{".tables", true},
		{"  .schema trips", true},
		{"SELECT 1;", true},
		{"SELECT 1;  -- done", true},
		{"SELECT 1\n;", true},
		{"SELECT 1; SELECT 2;", true},
		{"SELECT 'it''s';", true},
		{"SELECT 1", false},
		{"SELECT 1; SELECT 2", false},
		{"SELECT ';'", false},
		{"SELECT 'a;\nb", false},
		{`SELECT "odd;name`, false},
		{`SELECT "odd;name" FROM t`, false},
		{"SELECT 1 -- ;", false},
		{"SELECT 1 /* ; */", false},
		{"SELECT 1 /* ; ", false},
		{"SELECT $$;$$", false},
		{"SELECT $tag$ ; $tag$", false},
		{"SELECT $tag$ ; $tag$;", true},
		{"SELECT E'\\';", false},
		{"SELECT E'\\'';", true},
		{".5;", true},
	} {
		if got := inputComplete([]rune(tt.input)); got != tt.want {
			t.Errorf("inputComplete(%q) = %v, want %v", tt.input, got, tt.want)
		}
	}
}

func TestDotCommand(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{".tables", []string{".tables"}},
		{"  .mode   csv ", []string{".mode", "csv"}},
		{".schema main.trips", []string{".schema", "main.trips"}},
		{"SELECT 1;", nil},
		{".5 + 1;", nil},
		{".", nil},
		{".tables\nSELECT 1;", nil},
	} {
		got, ok := dotCommand(tt.line)
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("dotCommand(%q) = %q, %v, want %q", tt.line, got, ok, tt.want)
		}
	}
}

func TestSQLBuffer_Take(t *testing.T) {
	type stmt struct {
		text string
		line int
	}
	for _, tt := range []struct {
		name  string
		lines []string
		// want is what each line's take returns (nil: nothing yet).
		want [][]stmt
	}{
		{
			name:  "one line",
			lines: []string{"SELECT 1;"},
			want:  [][]stmt{{{"SELECT 1", 1}}},
		},
		{
			name:  "spans lines",
			lines: []string{"SELECT", "  1", ";"},
			want:  [][]stmt{nil, nil, {{"SELECT\n  1", 1}}},
		},
		{
			name:  "two on a line",
			lines: []string{"SELECT 1; SELECT 2;"},
			want:  [][]stmt{{{"SELECT 1", 1}, {"SELECT 2", 1}}},
		},
		{
			name:  "comments around",
			lines: []string{"-- first", "/* a */ SELECT 1; -- after", "", "SELECT", "2;"},
			want:  [][]stmt{nil, {{"SELECT 1", 2}}, nil, nil, {{"SELECT\n2", 4}}},
		},
		{
			name:  "semicolon in a string",
			lines: []string{"SELECT 'a;", "b';"},
			want:  [][]stmt{nil, {{"SELECT 'a;\nb'", 1}}},
		},
		{
			name:  "semicolon in a dollar-quoted string",
			lines: []string{"SELECT $$;", ";$$ AS s;"},
			want:  [][]stmt{nil, {{"SELECT $$;\n;$$ AS s", 1}}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b sqlBuffer
			for i, line := range tt.lines {
				b.add(line)
				got, ok := b.take()
				var gotS []stmt
				for _, s := range got {
					gotS = append(gotS, stmt{s.text, s.line})
				}
				if ok != (tt.want[i] != nil) || !slices.Equal(gotS, tt.want[i]) {
					t.Errorf("after line %d (%q): got %+v, %v, want %+v", i+1, line, gotS, ok, tt.want[i])
				}
			}
			if !b.empty() {
				t.Errorf("the buffer holds %q at the end, want nothing", b.text)
			}
		})
	}
}

func TestSQLBuffer_Rest(t *testing.T) {
	for _, tt := range []struct {
		name, input string
		want        []string
		wantErr     string
	}{
		{"no semicolon", "SELECT 1; SELECT 2", []string{"SELECT 1", "SELECT 2"}, ""},
		{"open string", "SELECT 'x", nil, "line 1: the input ends inside a statement: unterminated string"},
		{"open comment", "SELECT 1 /* x", nil, "line 1: the input ends inside a statement: unterminated /* comment"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b sqlBuffer
			b.add(tt.input)
			got, err := b.rest()
			var texts []string
			for _, s := range got {
				texts = append(texts, s.text)
			}
			if !slices.Equal(texts, tt.want) {
				t.Errorf("statements: got %q, want %q", texts, tt.want)
			}
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Errorf("error: got %q, want %q", gotErr, tt.wantErr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestSQLBuffer_LinesAfterDotCommands(t *testing.T) {
	var b sqlBuffer
	if got := b.skipLines(".mode csv"); got != 1 {
		t.Errorf("dot-command line: got %d, want 1", got)
	}
	b.add("")
	b.add("SELECT nope;")
	got, _ := b.take()
	if len(got) != 1 || got[0].line != 3 {
		t.Errorf("statement: got %+v, want one at line 3", got)
	}
	if line := b.skipLines(".tables"); line != 4 {
		t.Errorf("second dot-command line: got %d, want 4", line)
	}
}

func TestCompletions(t *testing.T) {
	tables := []tableInfo{
		{catalog: "memory", schema: "main", name: "voyages", columns: []columnInfo{{name: "fare_amount"}, {name: "voyage_id"}}},
		{catalog: "memory", schema: "main", name: "ports", columns: []columnInfo{{name: "port_id"}, {name: "name"}}},
		{catalog: "lake", schema: "sea", name: "tides", columns: []columnInfo{{name: "height"}}},
	}
	for _, tt := range []struct {
		name, line string
		cursor     int // -1: the end of line
		wantWord   string
		want       []string
	}{
		{"column anywhere", "SELECT fare_a", -1, "fare_a", []string{"fare_amount"}},
		{"table", "SELECT * FROM voy", -1, "voy", []string{"voyages", "voyage_id"}},
		{"keyword upper", "SEL", -1, "SEL", []string{"SELECT"}},
		{"keyword lower", "sel", -1, "sel", []string{"select"}},
		{"keyword and column", "SELECT * FROM ports WHERE na", -1, "na", []string{"name", "natural"}},
		{"columns of the tables named", "SELECT po FROM ports", len("SELECT po"), "po", []string{"ports", "port_id", "positional"}},
		{"columns of every table when none is named", "SELECT he", -1, "he", []string{"height"}},
		{"column after its table", "SELECT voyages.fa", -1, "voyages.fa", []string{"voyages.fare_amount"}},
		{"column after schema.table", "SELECT sea.tides.h", -1, "sea.tides.h", []string{"sea.tides.height"}},
		{"table after its schema", "SELECT * FROM main.p", -1, "main.p", []string{"main.ports"}},
		{"in any case", "SELECT * FROM VOYAGES.FA", -1, "VOYAGES.FA", []string{"VOYAGES.fare_amount"}},
		{"inside a call", "SELECT count(fare_", -1, "fare_", []string{"fare_amount"}},
		{"nothing matches", "SELECT zzz", -1, "zzz", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cursor := tt.cursor
			if cursor < 0 {
				cursor = len([]rune(tt.line))
			}
			word := wordBefore(tt.line, cursor)
			got := completions(word, tt.line, tables)
			if word != tt.wantWord || !slices.Equal(got, tt.want) {
				t.Errorf("completing %q at %d: got %q %q, want %q %q", tt.line, cursor, word, got, tt.wantWord, tt.want)
			}
		})
	}
}

func TestSQLKeywords_Sorted(t *testing.T) {
	if !slices.IsSorted(sqlKeywords) {
		t.Error("sqlKeywords is not sorted: isKeyword's binary search misses words")
	}
	for _, w := range []string{"select", "FROM", "Where"} {
		if !isKeyword(w) {
			t.Errorf("isKeyword(%q) = false, want true", w)
		}
	}
}

func TestSplitTableName(t *testing.T) {
	for _, tt := range []struct {
		in, schema, table, err string
	}{
		{"trips", "", "trips", ""},
		{"main.trips", "main", "trips", ""},
		{`"My Schema"."odd.name"`, "My Schema", "odd.name", ""},
		{"a.b.c", "", "", "bad table name a.b.c: want table or schema.table"},
		{"main.", "", "", "bad table name main.: want table or schema.table"},
		{"'x'", "", "", "bad table name 'x': want table or schema.table"},
	} {
		s, tb, err := splitTableName(tt.in)
		if s != tt.schema || tb != tt.table || errString(err) != tt.err {
			t.Errorf("splitTableName(%q) = %q, %q, %v, want %q, %q, %q", tt.in, s, tb, err, tt.schema, tt.table, tt.err)
		}
	}
}

func TestQuoteName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"trips", "trips"},
		{"fare_amount", "fare_amount"},
		{"Trips", `"Trips"`},
		{"select", `"select"`},
		{"two words", `"two words"`},
		{`q"uote`, `"q""uote"`},
		{"1st", `"1st"`},
	} {
		if got := quoteName(tt.in); got != tt.want {
			t.Errorf("quoteName(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestLikeLiteral(t *testing.T) {
	if got, want := likeLiteral(`a_b%c\d`), `a\_b\%c\\d`; got != want {
		t.Errorf("likeLiteral: got %s, want %s", got, want)
	}
	if strings.Contains(likeLiteral("plain"), `\`) {
		t.Error("likeLiteral escapes a plain name")
	}
}

func TestTransactionVerb(t *testing.T) {
	for _, tt := range []struct {
		sql     string
		want    txnVerb
		wantErr string
	}{
		{"BEGIN", txnBegin, ""},
		{"begin transaction", txnBegin, ""},
		{"/* x */ START TRANSACTION", txnBegin, ""},
		{"COMMIT", txnCommit, ""},
		{"end work", txnCommit, ""},
		{"ROLLBACK", txnRollback, ""},
		{"abort", txnRollback, ""},
		{"SELECT 1", txnNone, ""},
		{"START", txnNone, ""},
		{"BEGIN TRANSACTION READ ONLY", txnNone, "the shell runs BEGIN alone (or with TRANSACTION)"},
		{"ROLLBACK TO SAVEPOINT a", txnNone, "the shell runs ROLLBACK alone (or with TRANSACTION)"},
	} {
		got, err := transactionVerb(tt.sql)
		if got != tt.want || !strings.HasPrefix(errString(err), tt.wantErr) || (tt.wantErr == "") != (err == nil) {
			t.Errorf("transactionVerb(%q) = %v, %v, want %v, %q", tt.sql, got, err, tt.want, tt.wantErr)
		}
	}
}
