package mysqlwire

import (
	"context"
	"errors"
	"strings"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/mysqlwire/mysqlvalue"
)

// ErrServerClosed is returned by Serve after Close or Shutdown.
var ErrServerClosed = errors.New("mysqlwire: server closed")

// MySQL error numbers the vitess package has no name for.
const (
	erTruncatedWrongValue  = 1292
	erWarnDataOutOfRange   = 1264
	erDivisionByZero       = 1365
	erMaxPreparedStmtCount = 1461
	erUnknownStmtHandler   = 1243
	erNoReferencedRow      = 1452
	erOutOfResources       = 1041
	// erSecureTransportRequired is MySQL's answer to a plaintext login
	// under require_secure_transport.
	erSecureTransportRequired = 3159
	sqlStateSyntax            = "42000"
	sqlStateNoSuchTable       = "42S02"
	sqlStateTableExists       = "42S01"
	sqlStateBadField          = "42S22"
	sqlStateIntegrity         = "23000"
	sqlStateInvalidDatetime   = "22007"
	sqlStateOutOfRange        = "22003"
	sqlStateDivisionByZero    = "22012"
	sqlStateTransaction       = "25000"
)

// sqlError turns an error from the engine (or from the endpoint itself) into
// the MySQL error packet the client receives: a number a MySQL client
// understands, and DuckDB's own message.
func sqlError(err error) *mysql.SQLError {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return se
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return mysql.NewSQLError(mysql.ERQueryInterrupted, mysql.SSQueryInterrupted, "Query execution was interrupted")
	}
	var denied *auth.DeniedError
	if errors.As(err, &denied) {
		// The engine refuses some statements before DuckDB prepares
		// them; they read as the role check's refusal (session.authorize).
		return errorf(mysql.ERSpecifiedAccessDenied, sqlStateSyntax, "Access denied; %v", denied)
	}
	if errors.Is(err, engine.ErrClosed) {
		return mysql.NewSQLError(mysql.ERServerShutdown, mysql.SSUnknownSQLState, "Server shutdown in progress")
	}
	msg := strings.TrimSpace(err.Error())
	if errors.Is(err, mysqlvalue.ErrUnsupported) {
		return mysql.NewSQLError(mysql.ERNotSupportedYet, sqlStateSyntax, "%s", msg)
	}
	prefix, _, _ := strings.Cut(msg, " Error: ")
	num, state := mysql.ERUnknownError, mysql.SSUnknownSQLState
	switch engine.KindOf(err) {
	case engine.KindInvalid:
		num, state = mysql.ERParseError, sqlStateSyntax
		switch {
		case prefix == "Binder" && strings.Contains(msg, "not found"):
			num, state = mysql.ERBadFieldError, sqlStateBadField
		case prefix == "Conversion":
			num, state = erTruncatedWrongValue, sqlStateInvalidDatetime
		case prefix == "Out of Range":
			num, state = erWarnDataOutOfRange, sqlStateOutOfRange
		case prefix == "Divide by Zero":
			num, state = erDivisionByZero, sqlStateDivisionByZero
		}
	case engine.KindNotFound:
		num, state = mysql.ERNoSuchTable, sqlStateNoSuchTable
		switch {
		case strings.Contains(msg, "Schema with name") || strings.Contains(msg, "Catalog with name"):
			num, state = mysql.ERBadDb, sqlStateSyntax
		case strings.Contains(msg, "Function with name"):
			num, state = mysql.ERSPDoesNotExist, sqlStateSyntax
		}
	case engine.KindConstraint:
		num, state = mysql.ERDupEntry, sqlStateIntegrity
		switch {
		case prefix == "Catalog" && strings.Contains(msg, "already exists"):
			num, state = mysql.ERTableExists, sqlStateTableExists
		case strings.Contains(msg, "NOT NULL constraint"):
			num = mysql.ERBadNullError
		case strings.Contains(msg, "foreign key"):
			num = erNoReferencedRow
		}
	case engine.KindCanceled:
		num, state = mysql.ERQueryInterrupted, mysql.SSQueryInterrupted
	case engine.KindPermission:
		num, state = mysql.ERSpecifiedAccessDenied, sqlStateSyntax
	case engine.KindTransaction:
		num, state = mysql.ERUnknownError, sqlStateTransaction
		if strings.Contains(msg, "onflict") {
			num, state = mysql.ERLockDeadlock, mysql.SSLockDeadlock
		}
	case engine.KindResource:
		num = erOutOfResources
	}
	return mysql.NewSQLError(num, state, "%s", msg)
}

// errorf builds a MySQL error packet with the given number and state.
func errorf(num int, state, format string, args ...any) *mysql.SQLError {
	return mysql.NewSQLError(num, state, format, args...)
}

// errEmptyQuery answers a query with no statement in it.
var errEmptyQuery = errorf(mysql.EREmptyQuery, sqlStateSyntax, "Query was empty")

// errBusy answers a command sent while a server-side cursor still streams
// on the connection: the DuckDB connection is not free to run it.
var errBusy = errorf(mysql.CRCommandsOutOfSync, mysql.SSUnknownSQLState,
	"Commands out of sync: a cursor is still open on this connection; fetch it to the end or close its statement first")

// errorCode is the MySQL error number of err, for logs and metrics.
func errorCode(err error) int { return sqlError(err).Num }
