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
		terms  int      // terms in the current statement
		prev   wordRole // what the token before t is, as a word
		prevAt int      // where the token before t ends
		group  int      // characters of the group of operator characters t ends
		opened bool     // t is the first token after an open bracket
		buf    [maxKeyword]byte
	)
	_ = scan(sql, func(t Token) bool {
		l := &levels[len(levels)-1]
		var role wordRole
		var punct byte
		switch {
		case t.Kind == Ident && len(t.Text) <= maxKeyword:
			for i := 0; i < len(t.Text); i++ {
				ch := t.Text[i]
				if 'a' <= ch && ch <= 'z' {
					ch -= 'a' - 'A'
				}
				buf[i] = ch
			}
			role = keywords[string(buf[:len(t.Text)])]
		case t.Kind == Punct && len(t.Text) == 1:
			punct = t.Text[0]
		}
		if opened && !l.derived && role&roleQuery != 0 {
			l.subqueries++
			c.Subqueries = max(c.Subqueries, l.subqueries)
		}
		opened = false
		if prev&roleAS != 0 && role&roleCTE != 0 {
			terms++ // WITH c AS [NOT] MATERIALIZED (…)
		}
		switch {
		case punct != 0 && isOperatorByte(punct):
			if group > 0 && prevAt == t.Pos {
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
		case role&roleOperator != 0:
			l.chain++
		case punct == '(' || punct == '[' || punct == '{' || role&roleCase != 0:
			if prev&roleAS != 0 && punct != 0 {
				terms++
			}
			levels = append(levels, level{depth: l.depth + l.chain + 1, isCase: punct == 0, subqueries: l.subqueries,
				derived: prev&roleDerived != 0})
			opened = true
		case punct == ')' || punct == ']' || punct == '}':
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
		case role&roleEnd != 0:
			if len(levels) > 1 && levels[len(levels)-1].isCase {
				levels = levels[:len(levels)-1]
			}
		case punct == ',' || punct == ';':
			l.chain = 0
			if punct == ';' && len(levels) == 1 {
				terms = 0
			}
		case role&roleEnds != 0:
			l.chain = 0
			if role&roleTerm != 0 {
				terms++
			}
		}
		if punct == 0 || !isOperatorByte(punct) {
			group = 0
		}
		top := levels[len(levels)-1]
		c.Depth = max(c.Depth, top.depth+top.chain)
		c.Terms = max(c.Terms, terms)
		prev, prevAt = role, t.End
		return true
	})
	return c
}

// wordRole is what a keyword is to Measure, a set of roles.
type wordRole uint16

const (
	// roleEnds: the word ends an expression, or stands between
	// expressions that DuckDB does not nest in one another (AND and OR
	// make one flat list of their terms).
	roleEnds wordRole = 1 << iota
	roleTerm          // a term of a chain: AND, OR, UNION, EXCEPT, INTERSECT
	// roleOperator: an operator whose chains nest as those of + do.
	roleOperator
	roleQuery   // begins a query: a bracket it opens holds a subquery
	roleDerived // a bracket after it holds a derived table, not a subquery
	roleCase
	roleEnd
	roleAS
	roleCTE // after AS, begins a CTE's body: [NOT] MATERIALIZED
)

// maxKeyword is the length of the longest word in keywords.
const maxKeyword = 12

var keywords = map[string]wordRole{}

func init() {
	add := func(role wordRole, words string) {
		for _, w := range strings.Fields(words) {
			keywords[w] |= role
		}
	}
	add(roleEnds, `AND OR SELECT FROM WHERE GROUP BY HAVING ORDER LIMIT OFFSET QUALIFY
		WINDOW ON USING WHEN THEN ELSE AS UNION EXCEPT INTERSECT VALUES SET
		RETURNING JOIN INTO WITH`)
	add(roleTerm, "AND OR UNION EXCEPT INTERSECT")
	add(roleOperator, "NOT IS IN LIKE ILIKE GLOB SIMILAR COLLATE BETWEEN")
	add(roleQuery, "SELECT WITH VALUES FROM TABLE")
	add(roleDerived, "FROM JOIN LATERAL")
	add(roleCase, "CASE")
	add(roleEnd, "END")
	add(roleAS, "AS")
	add(roleCTE, "NOT MATERIALIZED")
	for w := range keywords {
		if len(w) > maxKeyword {
			panic("duckdbsql: keyword " + w + " is longer than maxKeyword")
		}
	}
}

type level struct {
	depth, chain int
	isCase       bool
	// subqueries counts the subqueries the level is in, itself included.
	subqueries int
	derived    bool // a bracket after FROM, JOIN or LATERAL
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
