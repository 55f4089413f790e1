package mysqlwire

import (
	"context"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
)

// SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE SAVEPOINT.
//
// DuckDB has no savepoints. mysqldump --single-transaction sets one before
// each table and rolls back to it after reading the table, which in MySQL
// lets go of the table's metadata lock; there is nothing to undo. So a
// savepoint is kept by name, and rolling back to it succeeds when nothing
// since could have written: only SELECT, SHOW, DESCRIBE, SET and USE ran
// as text statements, and no prepared statement was made or is open.
// Otherwise it fails (1305 when there is no such savepoint), and the
// whole transaction can still be rolled back. COMMIT, ROLLBACK and BEGIN
// forget the savepoints, as in MySQL.

// savepoints are a session's savepoints.
type savepoints struct {
	names  []string // oldest first
	wrote  bool     // a statement since the oldest one may have written
	stmtID uint32   // the connection's last prepared statement id when the oldest was set
}

// noteStatement records a text statement for the savepoints.
func (s *session) noteStatement(word string) {
	if len(s.savepoints.names) == 0 {
		return
	}
	switch strings.ToUpper(word) {
	case "SELECT", "SHOW", "DESC", "DESCRIBE", "SET", "USE", "SAVEPOINT", "RELEASE", "ROLLBACK":
	default:
		s.savepoints.wrote = true
	}
}

// setSavepoint is SAVEPOINT name.
func (s *session) setSavepoint(_ context.Context, m []string) (compatOutcome, error) {
	name := strings.ToLower(unquoteWord(m[1]))
	if len(s.savepoints.names) == 0 {
		s.savepoints = savepoints{stmtID: s.c.StatementID}
	}
	s.savepoints.drop(name, false)
	s.savepoints.names = append(s.savepoints.names, name)
	return okOutcome(), nil
}

// rollbackToSavepoint is ROLLBACK [WORK] TO [SAVEPOINT] name.
func (s *session) rollbackToSavepoint(_ context.Context, m []string) (compatOutcome, error) {
	name := strings.ToLower(unquoteWord(m[1]))
	if !s.savepoints.has(name) {
		return compatOutcome{}, errorf(mysql.ERSPDoesNotExist, sqlStateSyntax, "SAVEPOINT %s does not exist", unquoteWord(m[1]))
	}
	if s.savepoints.wrote || len(s.stmts) > 0 || s.c.StatementID != s.savepoints.stmtID {
		return compatOutcome{}, errorf(mysql.ERUnknownError, sqlStateTransaction,
			"ROLLBACK TO SAVEPOINT %s: DuckDB has no savepoints, and statements since may have written; ROLLBACK the whole transaction instead", unquoteWord(m[1]))
	}
	s.savepoints.drop(name, true)
	return okOutcome(), nil
}

// releaseSavepoint is RELEASE SAVEPOINT name.
func (s *session) releaseSavepoint(_ context.Context, m []string) (compatOutcome, error) {
	name := strings.ToLower(unquoteWord(m[1]))
	if !s.savepoints.has(name) {
		return compatOutcome{}, errorf(mysql.ERSPDoesNotExist, sqlStateSyntax, "SAVEPOINT %s does not exist", unquoteWord(m[1]))
	}
	s.savepoints.drop(name, false)
	return okOutcome(), nil
}

func (sp *savepoints) has(name string) bool {
	for _, n := range sp.names {
		if n == name {
			return true
		}
	}
	return false
}

// drop forgets the savepoints after name, and name itself unless keep.
func (sp *savepoints) drop(name string, keep bool) {
	for i, n := range sp.names {
		if n == name {
			if keep {
				i++
			}
			sp.names = sp.names[:i]
			return
		}
	}
}
