package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// Kind classifies an engine error so that front ends (Flight SQL, MySQL) can
// map it to their own codes in one place.
type Kind int

// Error kinds.
const (
	KindInternal Kind = iota
	// KindInvalid is the user's mistake: bad SQL, a type mismatch, a bad
	// parameter or option.
	KindInvalid
	// KindNotFound is an unknown table, schema, column or function.
	KindNotFound
	// KindConstraint is a violated constraint (primary key, not null, …).
	KindConstraint
	// KindCanceled is an interrupted statement.
	KindCanceled
	// KindPermission is a statement the caller's role may not run.
	KindPermission
	// KindTransaction is a transaction conflict or misuse.
	KindTransaction
	// KindResource is an out-of-memory or a size limit.
	KindResource
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindNotFound:
		return "not found"
	case KindConstraint:
		return "constraint"
	case KindCanceled:
		return "canceled"
	case KindPermission:
		return "permission"
	case KindTransaction:
		return "transaction"
	case KindResource:
		return "resource"
	}
	return "internal"
}

// Error is an error that DuckDB (or the engine) reported, with its kind and
// DuckDB's own message.
type Error struct {
	Kind Kind
	Msg  string
	// err, when set, is a sentinel the error stands for (ErrRefused).
	err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel the error stands for, if any.
func (e *Error) Unwrap() error { return e.err }

// ErrScript is returned by Prepare for SQL holding several statements,
// which only Exec, Query and PrepareLast take.
var ErrScript = &Error{Kind: KindInvalid, Msg: "a prepared statement holds one statement"}

// ErrClosed is returned by a database or pool that has been closed.
var ErrClosed = errors.New("engine: database is closed")

// KindOf returns the kind of err, KindCanceled for context errors, and
// KindInternal when err carries no kind.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// errorf builds an engine error of the given kind.
func errorf(kind Kind, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// duckError maps a DuckDB error type and message to an engine error.
func duckError(t duckdb.ErrorType, msg string) error {
	kind := kindOfDuck(t)
	if kind == KindNotFound && strings.Contains(msg, "already exists") {
		kind = KindConstraint
	}
	return &Error{Kind: kind, Msg: msg}
}

func kindOfDuck(t duckdb.ErrorType) Kind {
	switch t {
	case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax, duckdb.ErrorTypeBinder,
		duckdb.ErrorTypeConversion, duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType,
		duckdb.ErrorTypeOutOfRange, duckdb.ErrorTypeDivideByZero, duckdb.ErrorTypeInvalidInput,
		duckdb.ErrorTypeDecimal, duckdb.ErrorTypeParameterNotResolved, duckdb.ErrorTypeParameterNotAllowed,
		duckdb.ErrorTypeNotImplemented, duckdb.ErrorTypeExpression, duckdb.ErrorTypeSettings,
		duckdb.ErrorTypeUnknownType, duckdb.ErrorTypePlanner:
		return KindInvalid
	case duckdb.ErrorTypeCatalog:
		return KindNotFound
	case duckdb.ErrorTypeConstraint:
		return KindConstraint
	case duckdb.ErrorTypeInterrupt:
		return KindCanceled
	case duckdb.ErrorTypePermission:
		return KindPermission
	case duckdb.ErrorTypeTransaction, duckdb.ErrorTypeSerialization:
		return KindTransaction
	case duckdb.ErrorTypeOutOfMemory, duckdb.ErrorTypeObjectSize:
		return KindResource
	}
	return KindInternal
}

// unlessLost returns err, unless it is an interrupt that nothing asked
// for: the statement's context is live, and quiver interrupts a statement
// only when its context ends (or its result is closed, after which nothing
// reads its error). DuckDB 1.5.6 then and now ends a statement whose
// worker thread failed (an error() call, a failed cast) with "INTERRUPT
// Error: Interrupted!" instead of that failure, when other work keeps the
// threads busy; the real message is gone, and "interrupted" would tell the
// user the wrong thing.
func unlessLost(ctx context.Context, err error) error {
	if KindOf(err) != KindCanceled || ctx == nil || ctx.Err() != nil {
		return err
	}
	return &Error{Kind: KindInternal, Msg: ErrLostMessage + " (DuckDB said: " + err.Error() + ")"}
}

// ErrLostMessage begins the message of a statement that failed with an
// error DuckDB lost (see unlessLost).
const ErrLostMessage = "the statement failed, but DuckDB lost its error and reported an interrupt that nothing asked for " +
	"(a race in DuckDB when the failure happens on a worker thread): run it again to see the error"
