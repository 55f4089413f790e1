package duckdbsql

import "strings"

// Statement is one statement of a script: Text is sql[Pos:End], from the
// end of the statement before it (or the start) through its own
// semicolon, if it has one, so that the statements of a script, put back
// together, are the script. Empty statements (nothing but white space and
// comments before a semicolon) join the statement before them, or the
// first one.
type Statement struct {
	Pos, End int
	Text     string
	// Tokens are the statement's tokens, without its semicolon.
	Tokens []Token
}

// Split splits sql into its statements at top-level semicolons. It fails
// where Lex fails.
func Split(sql string) ([]Statement, error) {
	toks, err := Lex(sql)
	if err != nil {
		return nil, err
	}
	var out []Statement
	cur := Statement{}
	flush := func(end int) {
		cur.End = end
		if len(cur.Tokens) == 0 {
			// Nothing but space, comments and a semicolon: part of the
			// statement before, or of the next one when there is none.
			if n := len(out); n > 0 {
				out[n-1].End = end
			}
			if len(out) > 0 {
				cur = Statement{Pos: end}
				return
			}
			cur.End = cur.Pos // keep the start; the next statement takes it
			return
		}
		out = append(out, cur)
		cur = Statement{Pos: end}
	}
	for _, t := range toks {
		if t.Is(";") {
			flush(t.End)
			continue
		}
		cur.Tokens = append(cur.Tokens, t)
	}
	if len(cur.Tokens) > 0 {
		flush(len(sql))
	} else if n := len(out); n > 0 {
		out[n-1].End = len(sql)
	}
	for i := range out {
		out[i].Text = sql[out[i].Pos:out[i].End]
	}
	return out, nil
}

// LeadingWords returns up to n leading tokens of sql, upper-cased words
// and punctuation as written, skipping white space and comments. A text
// that does not lex gives the words before the fault.
func LeadingWords(sql string, n int) []string {
	var words []string
	toks, _ := lexUpTo(sql, n)
	for _, t := range toks {
		switch t.Kind {
		case Ident:
			words = append(words, strings.ToUpper(t.Text))
		default:
			words = append(words, t.Text)
		}
	}
	return words
}

// lexUpTo lexes at most n tokens of sql.
func lexUpTo(sql string, n int) ([]Token, error) {
	var toks []Token
	err := scan(sql, func(t Token) bool {
		toks = append(toks, t)
		return len(toks) < n
	})
	return toks, err
}

// Explained is a reading of the statement an EXPLAIN explains.
type Explained struct {
	// Text is the explained statement.
	Text string
	// Analyze is set for EXPLAIN ANALYZE, which runs the statement.
	Analyze bool
}

// ExplainTargets returns the statement an EXPLAIN explains, as text, by
// each reading the text allows. sql must be one statement starting with
// EXPLAIN; ok is false otherwise.
//
// DuckDB writes options two ways: EXPLAIN ANALYZE stmt, and EXPLAIN
// (option, …) stmt. A parenthesis after EXPLAIN may also open the
// statement itself (EXPLAIN (SELECT 1) UNION SELECT 2), so both readings
// are returned when both are possible; the caller keeps those DuckDB's
// parser takes as one statement.
func ExplainTargets(sql string) (readings []Explained, ok bool) {
	toks, err := Lex(sql)
	if err != nil || len(toks) < 2 || !toks[0].IsWord("EXPLAIN") {
		return nil, false
	}
	i, analyze := 1, false
	if toks[i].IsWord("ANALYZE") || toks[i].IsWord("ANALYSE") {
		analyze = true
		i++
	}
	if i >= len(toks) {
		return nil, false
	}
	readings = append(readings, Explained{Text: sql[toks[i].Pos:], Analyze: analyze})
	if !toks[i].Is("(") {
		return readings, true
	}
	depth, j := 0, i
	for ; j < len(toks); j++ {
		if toks[j].Is("(") {
			depth++
		} else if toks[j].Is(")") {
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if j+1 >= len(toks) {
		return readings, true
	}
	opts := Explained{Text: sql[toks[j+1].Pos:], Analyze: analyze}
	for _, t := range toks[i+1 : j] {
		// Read as options, the group may ask for ANALYZE.
		opts.Analyze = opts.Analyze || t.IsWord("ANALYZE") || t.IsWord("ANALYSE")
	}
	return append(readings, opts), true
}
