package engine

import (
	"context"

	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// Access is what running the statement needs, judged from DuckDB's
// statement type and, where the type alone cannot tell, from the
// statement's leading keywords:
//   - USE (DuckDB types it SET) only reads;
//   - EXPLAIN ANALYZE runs the statement it explains, so it needs write,
//     and admin when that statement would (see explainAccess).
//
// The keywords are read only from a statement prepared alone; inside a
// script, USE and any EXPLAIN need admin.
func (s *Stmt) Access() auth.Access {
	switch s.Type() {
	case duckdb.StatementTypeSelect, duckdb.StatementTypeRelation, duckdb.StatementTypeTransaction:
		return auth.AccessRead
	case duckdb.StatementTypeExplain:
		return explainAccess(duckdbsql.LeadingWords(s.text, 32))
	case duckdb.StatementTypeSet:
		if w := duckdbsql.LeadingWords(s.text, 1); len(w) == 1 && w[0] == "USE" {
			return auth.AccessRead
		}
		return auth.AccessAdmin
	case duckdb.StatementTypeInsert, duckdb.StatementTypeUpdate, duckdb.StatementTypeDelete,
		duckdb.StatementTypeMergeInto, duckdb.StatementTypeCreate, duckdb.StatementTypeCreateFunc,
		duckdb.StatementTypeDrop, duckdb.StatementTypeAlter, duckdb.StatementTypeVacuum,
		duckdb.StatementTypeAnalyze:
		return auth.AccessWrite
	}
	// SET VARIABLE, COPY, EXPORT, ATTACH, DETACH, LOAD, extensions,
	// PRAGMA and CALL (which reach settings, files and checkpoints), SQL
	// PREPARE and EXECUTE (which would run a statement unchecked), and any
	// type DuckDB adds later.
	return auth.AccessAdmin
}

// explainAccess is what an EXPLAIN, given by its leading words, needs. A
// plain EXPLAIN only plans, so it reads. EXPLAIN ANALYZE (or EXPLAIN
// (ANALYZE, …)) runs the statement it explains, so it
// needs what that statement needs, and at least write: a query or a
// change of data or schema needs write, anything else (COPY, LOAD, CALL,
// CHECKPOINT, …) admin, as it would alone.
func explainAccess(w []string) auth.Access {
	if len(w) < 2 || w[0] != "EXPLAIN" {
		return auth.AccessAdmin // inside a script, or unreadable
	}
	i := 1
	switch w[1] {
	case "ANALYZE", "ANALYSE":
		i = 2
	case "(":
		analyze := false
		for i < len(w) && w[i] != ")" {
			analyze = analyze || w[i] == "ANALYZE" || w[i] == "ANALYSE"
			i++
		}
		if i < len(w) && !analyze {
			return auth.AccessRead
		}
		i++
	default:
		return auth.AccessRead
	}
	if i >= len(w) {
		return auth.AccessAdmin
	}
	switch w[i] {
	case "SELECT", "WITH", "FROM", "VALUES", "TABLE", "(", "SHOW", "DESCRIBE", "SUMMARIZE", "PIVOT", "UNPIVOT",
		"INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER":
		return auth.AccessWrite
	}
	return auth.AccessAdmin
}

// Kind names the statement's type for messages, e.g. "INSERT".
func (s *Stmt) Kind() string {
	if name, ok := statementNames[s.Type()]; ok {
		return name
	}
	return "this kind of"
}

var statementNames = map[duckdb.StatementType]string{
	duckdb.StatementTypeSelect: "SELECT", duckdb.StatementTypeInsert: "INSERT",
	duckdb.StatementTypeUpdate: "UPDATE", duckdb.StatementTypeExplain: "EXPLAIN",
	duckdb.StatementTypeDelete: "DELETE", duckdb.StatementTypePrepare: "PREPARE",
	duckdb.StatementTypeCreate: "CREATE", duckdb.StatementTypeExecute: "EXECUTE",
	duckdb.StatementTypeAlter: "ALTER", duckdb.StatementTypeTransaction: "transaction",
	duckdb.StatementTypeCopy: "COPY", duckdb.StatementTypeAnalyze: "ANALYZE",
	duckdb.StatementTypeVariableSet: "SET VARIABLE", duckdb.StatementTypeCreateFunc: "CREATE FUNCTION",
	duckdb.StatementTypeDrop: "DROP", duckdb.StatementTypeExport: "EXPORT",
	duckdb.StatementTypePragma: "PRAGMA", duckdb.StatementTypeVacuum: "VACUUM",
	duckdb.StatementTypeCall: "CALL", duckdb.StatementTypeSet: "SET",
	duckdb.StatementTypeLoad: "LOAD", duckdb.StatementTypeExtension: "extension",
	duckdb.StatementTypeAttach: "ATTACH", duckdb.StatementTypeDetach: "DETACH",
	duckdb.StatementTypeCopyDatabase: "COPY DATABASE", duckdb.StatementTypeUpdateExtensions: "UPDATE EXTENSIONS",
	duckdb.StatementTypeMergeInto: "MERGE",
}

// Authorize returns an *auth.DeniedError unless u may run the statement:
// its kind (Access), and every function it would call (see
// authorizeCalls), which for a non-admin means asking DuckDB for the
// statement's plan on its connection. A call no role may make gives an
// error wrapping ErrRefused, for admins too.
func (s *Stmt) Authorize(ctx context.Context, u auth.User) error {
	if err := u.Authorize(s.Kind(), s.Access()); err != nil {
		return err
	}
	return s.authorizeCalls(ctx, u)
}

// Text is the statement's SQL when it was prepared alone; empty for a
// statement of a script, whose own text DuckDB does not give.
func (s *Stmt) Text() string { return s.text }

// Replace prepares sql on the statement's connection and puts it in the
// statement's place. It is for an authorizer (the check of PrepareLast,
// or whoever authorizes a statement before running it) that allows a
// statement only as it rewrote it: the server runs an export's COPY with
// the target it checked. sql must be one statement of the same type, with
// as many parameters; on error the statement is left as it was.
func (s *Stmt) Replace(ctx context.Context, sql string) error {
	n, err := s.c.Prepare(ctx, sql)
	if err != nil {
		return err
	}
	if n.Type() != s.Type() || n.NumParams() != s.NumParams() {
		err := errorf(KindInvalid, "replace a %s statement with %d parameters: the replacement is a %s statement with %d",
			s.Kind(), s.NumParams(), n.Kind(), n.NumParams())
		n.Close()
		return err
	}
	duckdb.DestroyPrepare(&s.ps)
	s.ps, s.text = n.ps, n.text
	if s.pipe != nil {
		s.pipe.query.Close()
		s.pipe = nil
	}
	return nil
}
