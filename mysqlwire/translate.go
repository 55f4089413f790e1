package mysqlwire

import (
	"context"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// Queries over MySQL's INFORMATION_SCHEMA are MySQL through and through:
// tools generate them (Connector/J's DatabaseMetaData, DBeaver, ORMs) with
// MySQL's functions and MySQL's rules, such as HAVING without GROUP BY
// filtering rows by their SELECT aliases. Such a query is parsed with
// vitess's MySQL parser, its INFORMATION_SCHEMA tables are swapped for the
// CTEs of infoschema.go, the MySQL-only constructs DuckDB lacks are
// rewritten, and the tree is printed as DuckDB SQL. Every other statement
// runs on DuckDB as written (after rewriteForDuckDB).

// duckSQL is the SQL that runs on DuckDB for a statement the compatibility
// layer did not answer.
func duckSQL(sql string) string {
	if out, ok := translateInfoSchemaQuery(sql); ok {
		return out
	}
	return rewriteForDuckDB(sql)
}

// translateInfoSchemaQuery translates a SELECT that reads a table of
// mysqlTables. ok is false for any other statement, and for one the MySQL
// parser rejects: those run as written.
func translateInfoSchemaQuery(sql string) (out string, ok bool) {
	if !containsFold(sql, "information_schema") {
		return "", false
	}
	stmt, err := sqlparser.ParseWithOptions(context.Background(), escapeBackslashes(sql), sqlparser.ParserOptions{AnsiQuotes: true})
	if err != nil {
		return "", false
	}
	with, ok := topWith(stmt)
	if !ok {
		return "", false
	}
	ctes := useInfoTables(stmt)
	if len(ctes) == 0 {
		return "", false
	}
	_ = sqlparser.Walk(visitSetOps(func(node sqlparser.SQLNode) (bool, error) {
		if sel, ok := node.(*sqlparser.Select); ok {
			havingToWhere(sel)
			anyValueUngrouped(sel)
		}
		return true, nil
	}), stmt)
	f := &duckFormatter{with: with, ctes: withClause(ctes)}
	buf := sqlparser.NewTrackedBuffer(f.format)
	if with == nil {
		buf.WriteString("WITH " + f.ctes + " ")
	}
	buf.Myprintf("%v", stmt)
	return buf.String(), true
}

// topWith returns the WITH clause of a SELECT or UNION, which vitess may
// hang on the UNION or on its first SELECT. ok is false for other
// statements.
func topWith(stmt sqlparser.Statement) (with *sqlparser.With, ok bool) {
	switch s := stmt.(type) {
	case *sqlparser.Select:
		return s.With, true
	case *sqlparser.SetOp:
		if s.With != nil {
			return s.With, true
		}
		return topWith(s.Left)
	case *sqlparser.ParenSelect:
		return topWith(s.Select)
	}
	return nil, false
}

// useInfoTables points the statement's references to the tables of
// mysqlTables (information_schema.TABLES, and columns qualified with it) at
// their CTEs and returns the CTEs used. A reference without an alias gets
// the table's name as one, so TABLES.TABLE_NAME still resolves.
func useInfoTables(stmt sqlparser.Statement) map[string]bool {
	ctes := map[string]bool{}
	infoTable := func(t sqlparser.TableName) (string, bool) {
		if !strings.EqualFold(t.DbQualifier.String(), "information_schema") {
			return "", false
		}
		cte, ok := mysqlTables[strings.ToUpper(t.Name.String())]
		return cte, ok
	}
	_ = sqlparser.Walk(visitSetOps(func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.AliasedTableExpr:
			t, ok := n.Expr.(sqlparser.TableName)
			if !ok {
				break
			}
			if cte, ok := infoTable(t); ok {
				ctes[cte] = true
				n.Expr = sqlparser.TableName{Name: sqlparser.NewTableIdent(cte)}
				if n.As.IsEmpty() {
					n.As = t.Name
				}
			}
		case *sqlparser.ColName:
			if _, ok := infoTable(n.Qualifier); ok {
				n.Qualifier = sqlparser.TableName{Name: n.Qualifier.Name}
			}
		}
		return true, nil
	}), stmt)
	return ctes
}

// visitSetOps extends visit to the parts of a UNION that vitess's Walk
// leaves out: its WITH, ORDER BY and LIMIT.
func visitSetOps(visit sqlparser.Visit) sqlparser.Visit {
	var v sqlparser.Visit
	v = func(node sqlparser.SQLNode) (bool, error) {
		if s, ok := node.(*sqlparser.SetOp); ok {
			if err := sqlparser.Walk(v, s.With, s.OrderBy, s.Limit); err != nil {
				return false, err
			}
		}
		return visit(node)
	}
	return v
}

// havingToWhere moves the HAVING of a SELECT without GROUP BY or
// aggregates into its WHERE. MySQL reads such a HAVING as a filter on the
// result rows, where a name is first a SELECT alias; DuckDB would make the
// query an aggregate. The aliases it names are replaced by their
// expressions.
func havingToWhere(sel *sqlparser.Select) {
	if sel.Having == nil || len(sel.GroupBy) > 0 || hasAggregate(sel.SelectExprs) || hasAggregate(sel.Having) {
		return
	}
	aliases := map[string]sqlparser.Expr{}
	for _, e := range sel.SelectExprs {
		if ae, ok := e.(*sqlparser.AliasedExpr); ok && !ae.As.IsEmpty() {
			aliases[ae.As.Lowered()] = ae.Expr
		}
	}
	cond := sel.Having.Expr
	var refs []*sqlparser.ColName
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.Subquery:
			return false, nil
		case *sqlparser.ColName:
			if _, ok := aliases[n.Name.Lowered()]; ok && n.Qualifier.IsEmpty() {
				refs = append(refs, n)
			}
		}
		return true, nil
	}, cond)
	for _, ref := range refs {
		cond = sqlparser.ReplaceExpr(cond, ref, &sqlparser.ParenExpr{Expr: aliases[ref.Name.Lowered()]})
	}
	sel.Having = nil
	if sel.Where == nil {
		sel.Where = &sqlparser.Where{Type: sqlparser.WhereStr, Expr: cond}
		return
	}
	sel.Where.Expr = &sqlparser.AndExpr{Left: &sqlparser.ParenExpr{Expr: sel.Where.Expr}, Right: &sqlparser.ParenExpr{Expr: cond}}
}

// anyValueUngrouped wraps in any_value() the plain columns that a SELECT
// with GROUP BY lists but does not group by. MySQL without
// ONLY_FULL_GROUP_BY takes such a column's value from any row of the
// group, and mysqldump sends a query like that over FILES; DuckDB would
// refuse it. The column keeps its name.
func anyValueUngrouped(sel *sqlparser.Select) {
	if len(sel.GroupBy) == 0 {
		return
	}
	grouped := map[string]bool{}
	for _, g := range sel.GroupBy {
		if v, ok := g.(*sqlparser.SQLVal); ok && v.Type == sqlparser.IntVal {
			// GROUP BY 2 groups by the second column of the list.
			if n, err := strconv.Atoi(string(v.Val)); err == nil && n >= 1 && n <= len(sel.SelectExprs) {
				if ae, ok := sel.SelectExprs[n-1].(*sqlparser.AliasedExpr); ok {
					grouped[strings.ToLower(sqlparser.String(ae.Expr))] = true
				}
			}
			continue
		}
		grouped[strings.ToLower(sqlparser.String(g))] = true
	}
	for _, e := range sel.SelectExprs {
		ae, ok := e.(*sqlparser.AliasedExpr)
		if !ok {
			continue
		}
		col, ok := ae.Expr.(*sqlparser.ColName)
		if !ok || grouped[strings.ToLower(sqlparser.String(col))] || grouped[col.Name.Lowered()] ||
			(!ae.As.IsEmpty() && grouped[ae.As.Lowered()]) {
			continue
		}
		if ae.As.IsEmpty() {
			ae.As = col.Name
		}
		ae.Expr = &sqlparser.FuncExpr{Name: sqlparser.NewColIdent("any_value"), Exprs: sqlparser.SelectExprs{&sqlparser.AliasedExpr{Expr: col}}}
	}
}

// hasAggregate reports whether node calls an aggregate function outside
// of a subquery.
func hasAggregate(node sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.Subquery:
			return false, nil
		case *sqlparser.FuncExpr:
			found = found || n.IsAggregate()
		case *sqlparser.GroupConcatExpr:
			found = true
		}
		return !found, nil
	}, node)
	return found
}

// duckFormatter prints a MySQL syntax tree as DuckDB SQL.
type duckFormatter struct {
	with *sqlparser.With // the statement's own WITH, which the CTEs join
	ctes string          // the CTEs of the information_schema tables read
}

// format prints node for DuckDB: identifiers in double quotes, strings
// with quotes doubled, an alias always after AS, parameters as $n, LIMIT
// with OFFSET, and MySQL's functions and operators in DuckDB's terms.
func (f *duckFormatter) format(buf *sqlparser.TrackedBuffer, node sqlparser.SQLNode) {
	switch n := node.(type) {
	case *sqlparser.With:
		if n == nil || n != f.with {
			n.Format(buf)
			return
		}
		buf.WriteString("WITH ")
		if n.Recursive {
			buf.WriteString("RECURSIVE ")
		}
		buf.WriteString(f.ctes)
		for _, cte := range n.Ctes {
			buf.Myprintf(", %v", cte)
		}
		buf.WriteString(" ")
	case sqlparser.ColIdent:
		writeIdent(buf, n.String())
	case sqlparser.TableIdent:
		writeIdent(buf, n.String())
	case *sqlparser.AliasedExpr:
		if n.As.IsEmpty() {
			buf.Myprintf("%v", n.Expr)
		} else {
			buf.Myprintf("%v AS %v", n.Expr, n.As)
		}
	case *sqlparser.SQLVal:
		switch n.Type {
		case sqlparser.StrVal:
			buf.WriteString("'" + strings.ReplaceAll(string(n.Val), "'", "''") + "'")
		case sqlparser.HexVal:
			buf.WriteString("from_hex('" + string(n.Val) + "')")
		case sqlparser.ValArg:
			// vitess names the parameters :v1, :v2, … in order.
			buf.WriteString("$" + strings.TrimPrefix(string(n.Val), ":v"))
		default:
			n.Format(buf)
		}
	case *sqlparser.Limit:
		if n == nil {
			return
		}
		if n.Rowcount != nil {
			buf.Myprintf(" LIMIT %v", n.Rowcount)
		}
		if n.Offset != nil {
			buf.Myprintf(" OFFSET %v", n.Offset)
		}
	case *sqlparser.CollateExpr:
		// DuckDB knows no MySQL collation; a case-insensitive one (…_ci)
		// becomes its NOCASE.
		if strings.HasSuffix(strings.ToLower(n.Collation), "_ci") {
			buf.Myprintf("(%v COLLATE NOCASE)", n.Expr)
		} else {
			buf.Myprintf("%v", n.Expr)
		}
	case *sqlparser.UnaryExpr:
		// A charset introducer (_utf8mb4'…') or BINARY changes nothing
		// in DuckDB.
		if strings.HasPrefix(n.Operator, "_") || strings.EqualFold(n.Operator, sqlparser.BinaryStr) {
			buf.Myprintf("%v", n.Expr)
		} else {
			n.Format(buf)
		}
	case *sqlparser.FuncExpr:
		f.formatFunc(buf, n)
	default:
		node.Format(buf)
	}
}

// formatFunc prints a function call, renaming the MySQL functions DuckDB
// spells differently.
func (f *duckFormatter) formatFunc(buf *sqlparser.TrackedBuffer, n *sqlparser.FuncExpr) {
	switch name := n.Name.Lowered(); {
	case name == "database" || name == "schema":
		buf.WriteString("current_schema()")
	case name == "locate" && len(n.Exprs) == 2:
		// LOCATE(substr, str) is instr(str, substr).
		buf.Myprintf("instr(CAST(%v AS VARCHAR), CAST(%v AS VARCHAR))", n.Exprs[1], n.Exprs[0])
	case (name == "upper" || name == "lower" || name == "ucase" || name == "lcase") && len(n.Exprs) == 1:
		// MySQL takes a number for a string (Connector/J asks for the
		// UPPER of a column size); DuckDB wants the cast.
		buf.Myprintf("%s(CAST(%v AS VARCHAR))", name, n.Exprs[0])
	default:
		n.Format(buf)
	}
}

// writeIdent writes name as a DuckDB quoted identifier, which matches
// names in any case as an unquoted one does. Variables stay as they are.
func writeIdent(buf *sqlparser.TrackedBuffer, name string) {
	if strings.HasPrefix(name, "@") {
		buf.WriteString(name)
		return
	}
	buf.WriteString(`"` + strings.ReplaceAll(name, `"`, `""`) + `"`)
}

// escapeBackslashes doubles the backslashes of the '…' literals in sql.
// Clients quote strings for NO_BACKSLASH_ESCAPES (see doc.go), in which a
// backslash is an ordinary character; vitess's lexer reads it as an
// escape.
func escapeBackslashes(sql string) string {
	if !strings.Contains(sql, `\`) {
		return sql
	}
	var b strings.Builder
	last := 0
	scanSQL(sql, func(kind tokenKind, start, end int) {
		escapes := start > 0 && sql[start-1]|0x20 == 'e' && (start == 1 || !isIdentByte(sql[start-2]))
		if kind != tokString || sql[start] != '\'' || escapes {
			return
		}
		b.WriteString(sql[last:start])
		b.WriteString(strings.ReplaceAll(sql[start:end], `\`, `\\`))
		last = end
	})
	b.WriteString(sql[last:])
	return b.String()
}

// containsFold reports whether s contains substr, ignoring ASCII case.
// substr must start with an ASCII letter.
func containsFold(s, substr string) bool {
	first := string([]byte{substr[0] &^ 0x20, substr[0] | 0x20})
	for i := 0; len(s)-i >= len(substr); i++ {
		j := strings.IndexAny(s[i:], first)
		if j < 0 {
			return false
		}
		i += j
		if len(s)-i >= len(substr) && strings.EqualFold(s[i:i+len(substr)], substr) {
			return true
		}
	}
	return false
}
