package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// txnVerb is what a transaction statement asks for.
type txnVerb int

const (
	txnNone txnVerb = iota
	txnBegin
	txnCommit
	txnRollback
)

// transactionVerb reads a transaction statement: BEGIN, START
// TRANSACTION, COMMIT, END, ROLLBACK or ABORT, each with TRANSACTION or
// WORK after it or not. Over Flight SQL a statement runs on any of the
// server's connections, so these cannot be sent as SQL: the shell makes
// them Flight SQL's BeginTransaction and EndTransaction. A transaction
// statement with more words (BEGIN TRANSACTION READ ONLY) is an error.
func transactionVerb(sql string) (txnVerb, error) {
	words := duckdbsql.LeadingWords(sql, 4)
	if len(words) == 0 {
		return txnNone, nil
	}
	var v txnVerb
	switch words[0] {
	case "BEGIN", "START":
		v = txnBegin
	case "COMMIT", "END":
		v = txnCommit
	case "ROLLBACK", "ABORT":
		v = txnRollback
	default:
		return txnNone, nil
	}
	rest := words[1:]
	if words[0] == "START" {
		if len(rest) == 0 || rest[0] != "TRANSACTION" {
			return txnNone, nil // not DuckDB's; the server says why
		}
	}
	if len(rest) == 0 || len(rest) == 1 && slices.Contains([]string{"TRANSACTION", "WORK"}, rest[0]) {
		return v, nil
	}
	return txnNone, fmt.Errorf("the shell runs %s alone (or with TRANSACTION): it opens and ends transactions over Flight SQL, which takes no options", words[0])
}

// transaction runs a transaction statement.
func (s *session) transaction(ctx context.Context, v txnVerb) error {
	switch {
	case v == txnBegin && s.txn != nil:
		return errors.New("a transaction is open already: COMMIT or ROLLBACK it first")
	case v == txnBegin:
		tx, err := s.c.Begin(ctx)
		if err != nil {
			return s.cf.serverError("begin", err)
		}
		s.txn = tx
		s.note("BEGIN")
		return nil
	case s.txn == nil:
		return errors.New("no transaction is open: BEGIN one first")
	}
	tx := s.txn
	s.txn = nil
	// Whatever the outcome, the transaction is over: the server ends
	// it when a commit fails.
	defer s.cat.invalidate()
	if v == txnCommit {
		if err := tx.Commit(ctx); err != nil {
			return s.cf.serverError("commit", err)
		}
		s.note("COMMIT")
		return nil
	}
	if err := tx.Rollback(ctx); err != nil {
		return s.cf.serverError("rollback", err)
	}
	s.note("ROLLBACK")
	return nil
}

// endTransaction rolls back a transaction left open when the shell
// ends, and says so.
func (s *session) endTransaction(ctx context.Context) {
	if s.txn == nil {
		return
	}
	tx := s.txn
	s.txn = nil
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := tx.Rollback(ctx); err != nil {
		fmt.Fprintf(s.errw, "quiver shell: %v\n", s.cf.serverError("roll back the open transaction", err))
		return
	}
	fmt.Fprintln(s.errw, "quiver shell: the open transaction was rolled back")
}

// note prints what a statement without a result did, at the prompt.
func (s *session) note(what string) {
	if s.interactive {
		fmt.Fprintln(s.errw, what)
	}
}
