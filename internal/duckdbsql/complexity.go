package duckdbsql

// Complexity is what a statement's shape costs DuckDB's parser, as far as
// its tokens tell: the two measures whose cost grows faster than the
// text. Measure reads it in one pass of the lexer, so a caller can refuse
// a statement before DuckDB parses it, and DuckDB's parse cannot be
// interrupted.
//
// Measured with DuckDB 1.5.6's parser (ExtractStatements) on a 2-core
// machine; every other shape tried (long IN lists, column lists, VALUES
// rows, function arguments, GROUP BY lists, || and + chains, nested
// brackets, subqueries, CASE, lambdas) parses in linear time, or is
// refused by DuckDB within milliseconds once it nests past about a
// thousand levels:
//   - A run of operator characters: SELECT ++…+1, and any run of + and -
//     (+-+-, *+++, <=+++), which DuckDB's lexer takes apart one
//     character at a time, in about cubic time: 256 characters 8-12 ms,
//     512 66 ms, 768 240 ms, 1,024 550 ms, 2,048 4.3 s. The same run
//     spaced out (+ + + 1), ~~~~, !!!! or NOT NOT parse in microseconds.
//   - A chain of AND or OR, in quadratic time: 4,096 terms 35 ms, 8,192
//     136 ms, 16,384 490 ms, 32,768 1.9 s. UNION ALL chains and lists of
//     common table expressions grow faster than linearly too, more
//     slowly: 65,536 UNION ALLs 370 ms, 131,072 1.4 s; 131,072 CTEs 420
//     ms, 262,144 1.3 s.
type Complexity struct {
	// Depth is the deepest nesting of the statement: brackets ( [ {,
	// CASE … END, and each operator of a run of them (+, -, ~, NOT, …)
	// one level more, as DuckDB nests a prefix operator's operand.
	Depth int
	// Links is the most links of the chains DuckDB builds in more than
	// linear time in any one statement of the text: each AND, OR,
	// UNION, EXCEPT and INTERSECT, and each common table expression (an
	// AS followed by a bracket or by MATERIALIZED or NOT, as a CTE's is).
	Links int
}

// Measure returns sql's Complexity, in time linear in its length. SQL the
// lexer cannot read to its end (an unterminated string) is measured up
// to where the lexer stopped, which is as far as DuckDB's parser gets.
func Measure(sql string) Complexity {
	var (
		c Complexity
		// levels holds, for each open bracket or CASE, the depth
		// inside it, and whether a CASE opened it.
		levels []level
		run    int // operators in a row just before this token
		links  int // links in the current statement
		prevAS bool
	)
	top := func() int {
		if len(levels) == 0 {
			return 0
		}
		return levels[len(levels)-1].depth
	}
	_ = scan(sql, func(t Token) bool {
		if prevAS && (t.IsWord("MATERIALIZED") || t.IsWord("NOT")) {
			links++ // WITH c AS [NOT] MATERIALIZED (…)
			c.Links = max(c.Links, links)
		}
		if isOperator(t) {
			run++
			c.Depth = max(c.Depth, top()+run)
			prevAS = false
			return true
		}
		d := top() + run
		switch {
		case t.Is("(") || t.Is("[") || t.Is("{") || t.IsWord("CASE"):
			if prevAS && !t.IsWord("CASE") {
				links++
			}
			levels = append(levels, level{depth: d + 1, isCase: t.IsWord("CASE")})
			d++
		case t.Is(")") || t.Is("]") || t.Is("}"):
			if len(levels) > 0 {
				levels = levels[:len(levels)-1]
			}
		case t.IsWord("END"):
			if len(levels) > 0 && levels[len(levels)-1].isCase {
				levels = levels[:len(levels)-1]
			}
		case t.IsWord("AND") || t.IsWord("OR") || t.IsWord("UNION") || t.IsWord("EXCEPT") || t.IsWord("INTERSECT"):
			links++
		case t.Is(";") && len(levels) == 0:
			links = 0
		}
		c.Depth = max(c.Depth, d)
		c.Links = max(c.Links, links)
		run = 0
		prevAS = t.IsWord("AS")
		return true
	})
	return c
}

type level struct {
	depth  int
	isCase bool
}

// isOperator reports whether t is one character of an operator (the
// characters PostgreSQL's lexer, and so DuckDB's, makes operators of) or
// the prefix operator NOT.
func isOperator(t Token) bool {
	switch t.Kind {
	case Punct:
		return len(t.Text) == 1 && isOperatorByte(t.Text[0])
	case Ident:
		return t.IsWord("NOT")
	}
	return false
}

func isOperatorByte(ch byte) bool {
	switch ch {
	case '+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '#', '^', '&', '|', '`', '%':
		return true
	}
	return false
}
