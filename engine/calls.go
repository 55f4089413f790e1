package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// A statement's kind says little of what it does: DuckDB's functions run
// inside a plain SELECT, and some of them change the server (logging,
// checkpoints, sequences) or reach its files. So a non-admin's statement
// is also checked by every function it would call, as DuckDB binds it
// (views and macros expanded, a query() string parsed): its plan, from
// DuckDB's json_serialize_plan, is read for calls, and each call is
// classed by functions.txt. A function the table does not class needs
// the admin role, and so does a statement whose plan DuckDB cannot
// serialize for the check: deny by default.
//
// Binding runs nothing: DuckDB's table functions act when they execute,
// not when they are bound (checked for every function with effects;
// arrow_scan takes POINTER arguments, which SQL cannot make), so planning
// a statement to check it is safe.

// The statements the check runs: a statement's bound plan, unoptimized,
// as JSON; its parse tree; and SQL from a parse tree.
const (
	planSQL    = "SELECT json_serialize_plan($1::VARCHAR, skip_null := true, skip_empty := true)"
	parseSQL   = "SELECT json_serialize_sql($1::VARCHAR)"
	unparseSQL = "SELECT json_deserialize_sql($1::JSON)"
)

// nonAdminOperators are the plan operators a non-admin's statement may
// have; any other (COPY, EXPORT, ATTACH, LOAD, PRAGMA, SET, …, and any
// DuckDB adds) needs the admin role, whatever the statement's kind said.
var nonAdminOperators = map[string]bool{}

func init() {
	for _, op := range strings.Fields(`LOGICAL_PROJECTION LOGICAL_FILTER
		LOGICAL_AGGREGATE_AND_GROUP_BY LOGICAL_WINDOW LOGICAL_UNNEST LOGICAL_LIMIT
		LOGICAL_ORDER_BY LOGICAL_TOP_N LOGICAL_DISTINCT LOGICAL_SAMPLE LOGICAL_PIVOT
		LOGICAL_GET LOGICAL_CHUNK_GET LOGICAL_DELIM_GET LOGICAL_EXPRESSION_GET
		LOGICAL_DUMMY_SCAN LOGICAL_EMPTY_RESULT LOGICAL_CTE_REF LOGICAL_JOIN
		LOGICAL_DELIM_JOIN LOGICAL_COMPARISON_JOIN LOGICAL_ANY_JOIN LOGICAL_CROSS_PRODUCT
		LOGICAL_POSITIONAL_JOIN LOGICAL_ASOF_JOIN LOGICAL_DEPENDENT_JOIN LOGICAL_UNION
		LOGICAL_EXCEPT LOGICAL_INTERSECT LOGICAL_RECURSIVE_CTE LOGICAL_MATERIALIZED_CTE
		LOGICAL_INSERT LOGICAL_DELETE LOGICAL_UPDATE LOGICAL_MERGE_INTO LOGICAL_ALTER
		LOGICAL_CREATE_TABLE LOGICAL_CREATE_INDEX LOGICAL_CREATE_SEQUENCE
		LOGICAL_CREATE_VIEW LOGICAL_CREATE_SCHEMA LOGICAL_CREATE_MACRO
		LOGICAL_CREATE_TYPE LOGICAL_DROP LOGICAL_VACUUM LOGICAL_TRANSACTION`) {
		nonAdminOperators[op] = true
	}
}

// ErrRefused is wrapped by the error that refuses a call no role may make.
var ErrRefused = errors.New("refused for every user")

// authorizeCalls returns a *auth.DeniedError unless u's role may call
// every function the statement would call, or an error wrapping
// ErrRefused for a call no role may make.
func (s *Stmt) authorizeCalls(ctx context.Context, u auth.User) error {
	if u.Role.IsAdmin() {
		return s.guardAdmin(ctx)
	}
	switch s.Type() {
	case duckdb.StatementTypeTransaction, duckdb.StatementTypeSet, duckdb.StatementTypeDrop,
		duckdb.StatementTypeVacuum, duckdb.StatementTypeAnalyze:
		// No expressions: BEGIN, COMMIT, USE (the one SET a non-admin
		// reaches), DROP, VACUUM, ANALYZE.
		return nil
	case duckdb.StatementTypeExplain:
		return s.authorizeExplain(ctx, u)
	}
	if s.text == "" {
		return s.cannotCheck(u, "quiver cannot tell this statement of the script from the others")
	}
	return s.authorizeText(ctx, u, s.text)
}

// authorizeExplain checks the statement an EXPLAIN explains: a plain
// EXPLAIN binds it, EXPLAIN ANALYZE runs it. Each reading of the text
// that DuckDB's parser takes as one statement is checked.
func (s *Stmt) authorizeExplain(ctx context.Context, u auth.User) error {
	readings, ok := duckdbsql.ExplainTargets(s.text)
	checked := 0
	for _, r := range readings {
		if !ok || s.c.CountStatements(r.Text) != 1 {
			continue
		}
		checked++
		if err := s.authorizeText(ctx, u, r.Text); err != nil {
			return err
		}
	}
	if checked == 0 {
		return s.cannotCheck(u, "quiver cannot read which statement it explains")
	}
	return nil
}

// authorizeText checks sql, one statement, for u: the functions it calls
// as written (a SELECT's), then those of its bound plan.
func (s *Stmt) authorizeText(ctx context.Context, u auth.User, sql string) error {
	plan, written, err := s.readings(ctx, u, sql)
	if err != nil {
		return err
	}
	if written != nil {
		if err := s.c.checkPlan(u, written, s.Kind(), true); err != nil {
			return err
		}
	}
	return s.c.checkPlan(u, plan, s.Kind(), false)
}

// readings returns DuckDB's readings of sql for the check: its bound plan,
// and for a SELECT the statement as written. They come from the plan
// cache when it may serve them. A statement DuckDB cannot read is a
// refusal for u, naming a function the user wrote when there is one.
func (s *Stmt) readings(ctx context.Context, u auth.User, sql string) (plan, written *duckdbsql.Plan, err error) {
	if e, ok := s.c.cachedPlan(sql); ok {
		return e.plan, e.written, nil
	}
	g, cacheable := s.c.planCacheGeneration()
	plan, err = s.c.plan(ctx, sql)
	var pe *duckdbsql.PlanError
	if errors.As(err, &pe) && s.NumParams() > 0 {
		// DuckDB cannot serialize a plan with a parameter whose type is
		// not known yet (SELECT ?); the same query with (SELECT NULL)
		// for each calls the same functions. Only a SELECT has a parse
		// tree to do that on.
		if p, perr := s.c.planWithNulls(ctx, sql); perr == nil {
			plan, err, pe = p, nil, nil
		}
	}
	if err != nil && pe == nil {
		if herr := s.c.hideFileState(ctx, u, sql, err.Error()); herr != nil {
			return nil, nil, herr
		}
		return nil, nil, err
	}
	if s.Type() == duckdb.StatementTypeSelect || s.Type() == duckdb.StatementTypeExplain {
		// A few functions are folded into constants as they are bound
		// (getvariable), and a file read through a lake table is
		// vouched for where one written in the statement is not: the
		// calls as written are read too, and checked first, so that a
		// refusal names the function the user wrote. DuckDB parses only
		// SELECTs to JSON.
		tree, terr := s.c.checkQuery(ctx, parseSQL, sql)
		if terr != nil {
			return nil, nil, terr
		}
		var notSelect *duckdbsql.PlanError
		written, terr = duckdbsql.ReadParsed([]byte(tree))
		switch {
		case s.Type() == duckdb.StatementTypeExplain && errors.As(terr, &notSelect) && notSelect.Type == "not implemented":
			// EXPLAIN ANALYZE of an INSERT, say: no SELECT to read as
			// written; its plan is checked.
			written = nil
		case terr != nil:
			return nil, nil, s.cannotCheck(u, "quiver cannot read it as DuckDB parses it ("+terr.Error()+")")
		case pe != nil:
			if werr := s.c.checkPlan(u, written, s.Kind(), true); werr != nil {
				return nil, nil, werr
			}
		}
	}
	if pe != nil {
		if herr := s.c.hideFileState(ctx, u, sql, pe.Message); herr != nil {
			return nil, nil, herr
		}
		why := "quiver cannot check what it would run: DuckDB cannot plan it for the check (" + pe.Message + ")"
		if s.NumParams() > 0 {
			why += "; giving each parameter a type (?::INTEGER) may help"
		}
		return nil, nil, s.cannotCheck(u, why)
	}
	if cacheable {
		s.c.keepPlan(g, sql, plan, written)
	}
	return plan, written, nil
}

// cannotCheck is the refusal of a statement whose calls cannot be seen.
func (s *Stmt) cannotCheck(u auth.User, why string) error {
	return &auth.DeniedError{User: u, Statement: s.Kind(), Need: auth.AccessAdmin, Why: why}
}

// checkPlan returns the refusal of the first call in plan that u may not
// make, if any. written says plan is the statement as written: in a
// bound plan, a reader of files the user did not call by name came
// through a view, a macro or a table named by a file, and its refusal is
// fileRefusal, the one a failure to bind the same statement gives.
func (c *Conn) checkPlan(u auth.User, plan *duckdbsql.Plan, kind string, written bool) error {
	for _, op := range plan.Operators {
		if !nonAdminOperators[op] && !u.Role.IsAdmin() {
			return &auth.DeniedError{User: u, Statement: kind, Need: auth.AccessAdmin,
				Why: "it would run a " + strings.TrimPrefix(op, "LOGICAL_") + " step"}
		}
	}
	for _, call := range plan.Calls {
		if err := refused(call); err != nil {
			return err
		}
		need, why := c.callAccess(call)
		if !u.Role.Permits(need) {
			if class, _, _ := FunctionClass(call.Name); !written && (class == FuncBind || class == FuncLake) {
				return fileRefusal(u)
			}
			return &auth.DeniedError{User: u, Statement: kind, Need: need, Function: call.Name, Why: why}
		}
	}
	return nil
}

// callAccess is the access a call needs, and why.
func (c *Conn) callAccess(call duckdbsql.Call) (auth.Access, string) {
	class, why, known := FunctionClass(call.Name)
	switch {
	case !known && call.Kind == duckdbsql.Written:
		// A name in a view's or macro's body that is none of DuckDB's
		// functions is one of the user's macros, or nothing: it is
		// checked when a statement binds it.
		return auth.AccessRead, ""
	case !known:
		return auth.AccessAdmin, "is not one of the functions quiver has classed"
	case class == FuncLake && call.Kind == duckdbsql.Table && c.vouched(call.Files):
		// A lake table's files, planned by the lake catalog.
		return auth.AccessRead, ""
	}
	return class.Access(), why
}

// refused returns an error wrapping ErrRefused for a call no role may
// make: enable_logging with a storage other than memory. With file
// access off, a log file outside the allowed directories fails every
// later statement of every user, and the statements that would turn it
// off with it, until the server restarts.
func refused(call duckdbsql.Call) error {
	if call.Kind != duckdbsql.Table || call.Name != "enable_logging" {
		return nil
	}
	for key, v := range call.Named {
		switch key {
		case "storage":
			if s, ok := v.(string); ok && strings.EqualFold(s, "memory") {
				continue
			}
		case "level", "storage_buffer_size", "storage_normalize":
			continue
		}
		return &Error{Kind: KindPermission, Msg: fmt.Sprintf(
			"enable_logging with %s is %v: the log may only be kept in memory (storage = 'memory'); a log file would make every statement of every user fail once file access is off",
			key, ErrRefused), err: ErrRefused}
	}
	return nil
}

// guardAdmin refuses, for an admin, the calls no role may make. Only a
// statement that names logging can make one (the only such call is
// enable_logging's), so only those are planned; one whose plan cannot
// be checked is refused, as its call could not be seen.
func (s *Stmt) guardAdmin(ctx context.Context) error {
	text := s.text
	if text == "" || !strings.Contains(strings.ToLower(text), "logging") {
		return nil
	}
	if s.Type() == duckdb.StatementTypeExplain {
		return nil // an EXPLAIN of a call binds it and runs nothing
	}
	plan, err := s.c.plan(ctx, text)
	var pe *duckdbsql.PlanError
	switch {
	case errors.As(err, &pe):
		return &Error{Kind: KindPermission, Msg: "quiver cannot check this statement's call of the server's logging (DuckDB cannot plan it for the check: " +
			pe.Message + "); call enable_logging in a statement of its own", err: ErrRefused}
	case err != nil:
		return err
	}
	for _, call := range plan.Calls {
		if err := refused(call); err != nil {
			return err
		}
	}
	return nil
}

// plan returns DuckDB's plan of sql, one statement, bound on c as c's
// statements are (same catalog, schema and variables). A statement DuckDB
// cannot plan or serialize gives a *duckdbsql.PlanError.
func (c *Conn) plan(ctx context.Context, sql string) (*duckdbsql.Plan, error) {
	js, err := c.checkQuery(ctx, planSQL, sql)
	if err != nil {
		return nil, err
	}
	return duckdbsql.ReadPlan([]byte(js))
}

// planWithNulls is plan of a SELECT with (SELECT NULL) in place of each
// of its parameters, rewritten through DuckDB's own parse tree.
func (c *Conn) planWithNulls(ctx context.Context, sql string) (*duckdbsql.Plan, error) {
	tree, err := c.checkQuery(ctx, parseSQL, sql)
	if err != nil {
		return nil, err
	}
	sample, err := c.checkQuery(ctx, parseSQL, "SELECT (SELECT NULL)")
	if err != nil {
		return nil, err
	}
	nulls, err := duckdbsql.ReplaceParams([]byte(tree), []byte(sample))
	if err != nil {
		return nil, err
	}
	text, err := c.checkQuery(ctx, unparseSQL, string(nulls))
	if err != nil {
		return nil, err
	}
	return c.plan(ctx, text)
}

// SyntaxTree is DuckDB's syntax tree of sql (json_serialize_sql), read by
// duckdbsql.ReadTree. Parsing runs nothing of sql's and reads no table,
// so no prepare hook sees it.
func (c *Conn) SyntaxTree(ctx context.Context, sql string) (*duckdbsql.Tree, error) {
	js, err := c.checkQuery(ctx, parseSQL, sql)
	if err != nil {
		return nil, err
	}
	return duckdbsql.ReadTree([]byte(js))
}

// checkQuery runs one of the check's own statements (planSQL, …), kept
// prepared on c, with arg, and returns the VARCHAR it gives. It runs them
// to completion on this thread (duckdb_execute_prepared) and reads the
// one value straight from DuckDB's result: they are small, and the
// streaming path's batches would cost more than the statement.
func (c *Conn) checkQuery(ctx context.Context, query, arg string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !utf8.ValidString(arg) {
		return "", errorf(KindInvalid, "the statement is not valid UTF-8")
	}
	if query == planSQL || query == parseSQL {
		// arg is SQL, which these parse: held to the same limits as
		// a prepare, since a caller may ask before it prepares.
		if err := c.db.checkShape(arg); err != nil {
			return "", err
		}
	}
	ps, ok := c.checkStmts[query]
	if !ok {
		if duckdb.Prepare(c.conn, query, &ps) == duckdb.StateError {
			msg := duckdb.PrepareError(ps)
			duckdb.DestroyPrepare(&ps)
			return "", fmt.Errorf("prepare the function check: %s", msg)
		}
		if c.checkStmts == nil {
			c.checkStmts = map[string]duckdb.PreparedStatement{}
		}
		c.checkStmts[query] = ps
	}
	if duckdb.BindVarchar(ps, 1, arg) == duckdb.StateError {
		return "", errorf(KindInvalid, "function check: %s", duckdb.PrepareError(ps))
	}
	stop := c.interruptOnCancel(ctx)
	defer stop()
	var res duckdb.Result
	defer duckdb.DestroyResult(&res)
	if duckdb.ExecutePrepared(ps, &res) == duckdb.StateError {
		return "", unlessLost(ctx, duckError(duckdb.ResultErrorType(&res), duckdb.ResultError(&res)))
	}
	chunk := duckdb.FetchChunk(res)
	if chunk.Ptr == nil {
		return "", errors.New("function check: no row")
	}
	defer duckdb.DestroyDataChunk(&chunk)
	vec := duckdb.DataChunkGetVector(chunk, 0)
	if duckdb.DataChunkGetSize(chunk) != 1 || !duckdb.ValidityRowIsValid(duckdb.VectorGetValidity(vec), 0) {
		return "", errors.New("function check: want one string")
	}
	return duckdb.StringTData((*duckdb.StringT)(duckdb.VectorGetData(vec))), nil
}

// CountStatements is the number of statements DuckDB's parser finds in
// sql; 0 when it fails to parse, or is too complex to (ShapeLimits).
func (c *Conn) CountStatements(sql string) int {
	if c.db.checkShape(sql) != nil {
		return 0
	}
	var ext duckdb.ExtractedStatements
	n := duckdb.ExtractStatements(c.conn, sql, &ext)
	duckdb.DestroyExtracted(&ext)
	return int(n)
}

// vouched reports whether every file of files is one the lake catalog
// planned for the statement being prepared on c (AllowFiles).
func (c *Conn) vouched(files []string) bool {
	if len(files) == 0 || c.allowed == nil {
		return false
	}
	for _, f := range files {
		if !c.allowed[f] {
			return false
		}
	}
	return true
}

// AllowFiles lets any user's next statement on c read files through the
// lake's reader (read_parquet): it is for the lake catalog, which plans a
// statement's scan of a lake table before the statement is prepared.
// Each prepare clears the list first, so it holds for one statement.
func (c *Conn) AllowFiles(files []string) {
	if c.allowed == nil {
		c.allowed = make(map[string]bool, len(files))
	}
	for _, f := range files {
		c.allowed[f] = true
	}
}
