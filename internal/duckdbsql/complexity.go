package duckdbsql

import "strings"

// Complexity is what a statement's shape costs DuckDB to parse and bind,
// as far as its tokens tell: the measures whose cost grows faster than
// the text. Measure reads it in one pass of the lexer, so that a caller
// can refuse a statement before DuckDB parses it: neither DuckDB's parse
// nor its binding can be interrupted.
//
// Measured with DuckDB 1.5.6 on a 2-core machine, parsing alone
// (ExtractStatements) or prepared; long IN lists, column lists, VALUES
// rows, function arguments, GROUP BY lists, derived tables and CASE arms
// parse and bind in linear time, and DuckDB refuses any expression
// nested a little short of 1,000 levels within milliseconds:
//   - A run of operator characters: SELECT ++…+1, and any run of + and -
//     (+-+-, *+++, <=+++), which DuckDB's lexer takes apart one
//     character at a time, in about cubic time: 256 characters 8-12 ms,
//     512 66 ms, 768 240 ms, 1,024 550 ms, 2,048 4.3 s (parse). The same
//     run spaced out (+ + + 1), ~~~~, !!!! or NOT NOT parse in
//     microseconds.
//   - A chain of operators or nested function calls binds in about
//     cubic time: 1 + 1 + … of 128 terms 145 ms, 256 564 ms, 800 15 s;
//     'a' || 'a' || … 128 158 ms, 256 1.1 s; abs(abs(…)) 128 48 ms,
//     256 367 ms.
//   - Subqueries nested in expressions, (SELECT (SELECT …)), EXISTS
//     (SELECT …), bind in exponential time: 16 levels 26-39 ms, 20
//     400-585 ms, 24 6-9 s. Nested derived tables cost 1 ms at 64.
//   - A chain of AND or OR parses in quadratic time: 4,096 terms 35 ms,
//     8,192 136 ms, 16,384 490 ms, 32,768 1.9 s. UNION ALL chains and
//     lists of common table expressions grow faster than linearly too,
//     more slowly: 65,536 UNION ALLs 370 ms, 131,072 1.4 s; 131,072
//     CTEs 420 ms, 262,144 1.3 s.
type Complexity struct {
	// Depth is the deepest nesting of the statement's expressions, as
	// DuckDB builds their trees: each bracket ( [ {, and CASE … END, is
	// a level, and so is each operator of a chain (a + b + c is three
	// levels deep, as are - - - a and NOT NOT NOT a), until a comma or a
	// word that ends an expression (AND, OR, SELECT, WHERE, THEN, …).
	// An operator is a group of operator characters written together
	// (||, ->>, ::), or the words NOT, IS, IN, LIKE, ILIKE, GLOB,
	// SIMILAR, COLLATE and BETWEEN; a group longer than four characters,
	// longer than any operator of DuckDB's, counts each character.
	Depth int
	// Subqueries is the deepest nesting of subqueries within
	// expressions: (SELECT …), EXISTS (…), IN (…) and the like, a
	// bracket that begins with SELECT, WITH, VALUES, FROM or TABLE. A
	// derived table (a bracket after FROM, JOIN or LATERAL) is not one.
	Subqueries int
	// Terms is the most terms, in any one statement of the text, of the
	// chains DuckDB builds in more than linear time: each AND, OR,
	// UNION, EXCEPT and INTERSECT, and each common table expression (an
	// AS followed by a bracket or by MATERIALIZED or NOT, as a CTE's is).
	Terms int
}

// Measure returns sql's Complexity, in time linear in its length. SQL the
// lexer cannot read to its end (an unterminated string) is measured up
// to where the lexer stopped, which is as far as DuckDB's parser gets.
func Measure(sql string) Complexity {
	var (
		c Complexity
		// levels holds, for each open bracket or CASE (and the
		// statement itself at the bottom), the depth it starts at and
		// the operators of the chain it is in.
		levels = []level{{}}
		terms  int // terms in the current statement
		prevAS bool
		group  int // characters of the group of operator characters t ends
		prev   Token
		opened bool // t is the first token after an open bracket
	)
	_ = scan(sql, func(t Token) bool {
		l := &levels[len(levels)-1]
		if opened && !l.derived && (t.IsWord("SELECT") || t.IsWord("WITH") || t.IsWord("VALUES") || t.IsWord("FROM") || t.IsWord("TABLE")) {
			l.subqueries++
			c.Subqueries = max(c.Subqueries, l.subqueries)
		}
		opened = false
		if prevAS && (t.IsWord("MATERIALIZED") || t.IsWord("NOT")) {
			terms++ // WITH c AS [NOT] MATERIALIZED (…)
		}
		switch {
		case t.Kind == Punct && len(t.Text) == 1 && isOperatorByte(t.Text[0]):
			if group > 0 && prev.End == t.Pos {
				group++
				if group == 5 {
					l.chain += 4 // the group is not one operator after all
				} else if group > 5 {
					l.chain++
				}
			} else {
				group = 1
				l.chain++
			}
		case isOperatorWord(t):
			l.chain++
		case t.Is("(") || t.Is("[") || t.Is("{") || t.IsWord("CASE"):
			if prevAS && !t.IsWord("CASE") {
				terms++
			}
			levels = append(levels, level{depth: l.depth + l.chain + 1, isCase: t.IsWord("CASE"), subqueries: l.subqueries,
				derived: prev.IsWord("FROM") || prev.IsWord("JOIN") || prev.IsWord("LATERAL")})
			opened = true
		case t.Is(")") || t.Is("]") || t.Is("}"):
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
		case t.IsWord("END"):
			if len(levels) > 1 && levels[len(levels)-1].isCase {
				levels = levels[:len(levels)-1]
			}
		case t.Is(",") || t.Is(";"):
			l.chain = 0
			if t.Is(";") && len(levels) == 1 {
				terms = 0
			}
		case t.Kind == Ident && endsExpression[strings.ToUpper(t.Text)]:
			l.chain = 0
			switch strings.ToUpper(t.Text) {
			case "AND", "OR", "UNION", "EXCEPT", "INTERSECT":
				terms++
			}
		}
		if t.Kind != Punct || len(t.Text) != 1 || !isOperatorByte(t.Text[0]) {
			group = 0
		}
		top := levels[len(levels)-1]
		c.Depth = max(c.Depth, top.depth+top.chain)
		c.Terms = max(c.Terms, terms)
		prevAS = t.IsWord("AS")
		prev = t
		return true
	})
	return c
}

type level struct {
	depth, chain int
	isCase       bool
	// subqueries counts the subqueries the level is in, itself included.
	subqueries int
	derived    bool // a bracket after FROM, JOIN or LATERAL
}

// endsExpression holds the words that end an expression, or stand
// between expressions that DuckDB does not nest in one another (AND and
// OR make one flat list of their terms).
var endsExpression = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`AND OR SELECT FROM WHERE GROUP BY HAVING ORDER
		LIMIT OFFSET QUALIFY WINDOW ON USING WHEN THEN ELSE AS UNION EXCEPT
		INTERSECT VALUES SET RETURNING JOIN INTO WITH`) {
		endsExpression[w] = true
	}
}

// isOperatorWord reports whether t is a word DuckDB's grammar makes an
// operator of, whose chains nest as those of + do.
func isOperatorWord(t Token) bool {
	if t.Kind != Ident || len(t.Text) > 7 {
		return false
	}
	switch strings.ToUpper(t.Text) {
	case "NOT", "IS", "IN", "LIKE", "ILIKE", "GLOB", "SIMILAR", "COLLATE", "BETWEEN":
		return true
	}
	return false
}

// isOperatorByte reports whether ch is one of the characters
// PostgreSQL's lexer, and so DuckDB's, makes operators of, or the colon
// of a :: cast.
func isOperatorByte(ch byte) bool {
	switch ch {
	case '+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '#', '^', '&', '|', '`', '%', ':':
		return true
	}
	return false
}
