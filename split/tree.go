package split

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// tableSQL is the table's name as written, quoted for DuckDB: catalog and
// schema only where the query named them.
func tableSQL(t duckdbsql.BaseTable) string {
	var parts []string
	for _, p := range []string{t.Catalog, t.Schema, t.Table} {
		if p != "" {
			parts = append(parts, engine.QuoteIdent(p))
		}
	}
	return strings.Join(parts, ".")
}

// scanShape is what a pure scan of one table refers to.
type scanShape struct {
	table duckdbsql.BaseTable
	// functions are the distinct lower-case names of the functions called.
	functions []string
}

// scan checks the tree is one SELECT that only projects and filters one
// base table, and returns the table and the functions it calls. Any part
// of the tree it does not know must be empty, so a clause DuckDB adds later
// makes a query unsplittable rather than wrongly split.
func scan(t *duckdbsql.Tree) (scanShape, bool) {
	var sc scanShape
	if len(t.Statements) != 1 {
		return sc, false
	}
	st := t.Statements[0]
	if unread, ok := duckdbsql.Unread(st.Raw, "node", "named_param_map"); !ok || len(unread) > 0 {
		return sc, false
	}
	node := st.Node
	if node == nil || node.Type != "SELECT_NODE" || len(node.SelectList) == 0 {
		return sc, false
	}
	// modifiers (DISTINCT, ORDER BY, LIMIT), cte_map, group_expressions,
	// group_sets, having, sample, qualify: all must be empty.
	unread, ok := duckdbsql.Unread(node.Raw, "type", "select_list", "where_clause", "from_table", "aggregate_handling", "query_location")
	if !ok || len(unread) > 0 {
		return sc, false
	}
	if node.Aggregate != "" && node.Aggregate != "STANDARD_HANDLING" {
		return sc, false
	}
	if sc.table, ok = baseTable(node.From); !ok {
		return sc, false
	}
	fns := map[string]bool{}
	for _, e := range node.SelectList {
		if !plainExpr(e, fns) {
			return sc, false
		}
	}
	if node.Where != nil && !plainExpr(node.Where, fns) {
		return sc, false
	}
	for name := range fns {
		sc.functions = append(sc.functions, name)
	}
	slices.Sort(sc.functions)
	return sc, true
}

// baseTable reads a FROM clause that names one table, with no sample,
// time travel or column aliases.
func baseTable(from *duckdbsql.TableRef) (duckdbsql.BaseTable, bool) {
	if from == nil || from.Type != "BASE_TABLE" || from.Table == "" {
		return duckdbsql.BaseTable{}, false
	}
	// sample, at_clause, column_name_alias: all must be empty.
	unread, ok := duckdbsql.Unread(from.Raw, "type", "alias", "query_location", "table_name", "schema_name", "catalog_name")
	if !ok || len(unread) > 0 {
		return duckdbsql.BaseTable{}, false
	}
	return duckdbsql.BaseTable{Catalog: from.Catalog, Schema: from.Schema, Table: from.Table, Alias: from.Alias}, true
}

// plainClasses are the expression classes of a pure scan. A FUNCTION is
// checked further: by its fields here, by its kind in duckdb_functions().
// A query inside an expression is a SUBQUERY, which is not plain.
var plainClasses = map[string]bool{
	"COLUMN_REF": true, "CONSTANT": true, "FUNCTION": true, "OPERATOR": true,
	"COMPARISON": true, "CONJUNCTION": true, "CASE": true, "CAST": true,
	"BETWEEN": true, "COLLATE": true, "PARAMETER": true, "STAR": true,
	"LAMBDA": true, "LAMBDA_REF": true, "POSITIONAL_REFERENCE": true,
}

// plainExpr reports whether e and every expression in it are of a plain
// class: no subquery, window function, or aggregate's FILTER, ORDER BY or
// DISTINCT. It adds the names of the functions called to fns.
func plainExpr(e *duckdbsql.Expr, fns map[string]bool) bool {
	return !duckdbsql.WalkExprs(e.Raw, func(x *duckdbsql.Expr) bool {
		return plainClasses[x.Class] && (x.Class != "FUNCTION" || plainFunction(x, fns))
	})
}

func plainFunction(f *duckdbsql.Expr, fns map[string]bool) bool {
	if f.Function == "" || f.Filter != nil || f.Distinct || f.ExportState {
		return false
	}
	if f.OrderBys != nil && len(f.OrderBys.Orders) > 0 {
		return false
	}
	fns[strings.ToLower(f.Function)] = true
	return true
}

// rewrite returns the SQL of t with the part's row-id range added to its
// WHERE clause. The conjuncts come from DuckDB's parser too, and the
// result is parsed again and must give the rewritten tree exactly (but for
// source positions): otherwise ErrNotSplittable.
func rewrite(ctx context.Context, c *engine.Conn, t *duckdbsql.Tree, pt part) (string, error) {
	var conds []string
	if pt.Lo != nil {
		conds = append(conds, fmt.Sprintf("rowid >= %d", *pt.Lo))
	}
	if pt.Hi != nil {
		conds = append(conds, fmt.Sprintf("rowid < %d", *pt.Hi))
	}
	if len(conds) == 0 {
		return "", errors.New("row-id part has neither bound")
	}
	rng, err := c.SyntaxTree(ctx, "SELECT 1 WHERE "+strings.Join(conds, " AND "))
	if err != nil {
		return "", fmt.Errorf("parse row-id range: %w", err)
	}
	mod, err := duckdbsql.AndWhere(t.Raw, rng.Raw)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotSplittable, err)
	}
	out, err := queryStrings(ctx, c, "SELECT json_deserialize_sql($1::JSON)", string(mod))
	if err != nil {
		return "", fmt.Errorf("%w: print the rewritten query: %v", ErrNotSplittable, err)
	}
	back, err := c.SyntaxTree(ctx, out[0])
	if err != nil {
		return "", fmt.Errorf("%w: parse the rewritten query: %v", ErrNotSplittable, err)
	}
	same, err := duckdbsql.SameTree(back.Raw, mod)
	if err != nil {
		return "", fmt.Errorf("%w: parse the rewritten query: %v", ErrNotSplittable, err)
	}
	if !same {
		return "", fmt.Errorf("%w: DuckDB does not print this query back faithfully", ErrNotSplittable)
	}
	return out[0], nil
}
