package mysqlwire

import (
	"fmt"
	"testing"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/quiverdata/quiver/mysqlwire/mysqlvalue"
)

// TestSQLError_Unsupported checks that a result column of a type MySQL has
// no form for reaches the client as "not supported", with the column and
// the type named, rather than as an unknown error.
func TestSQLError_Unsupported(t *testing.T) {
	err := fmt.Errorf("column c: %w: run_end_encoded<run_ends: int32, values: utf8>", mysqlvalue.ErrUnsupported)
	got := sqlError(err)
	if got.Num != mysql.ERNotSupportedYet || got.State != sqlStateSyntax {
		t.Errorf("sqlError = %d (%s), want %d (%s)", got.Num, got.State, mysql.ERNotSupportedYet, sqlStateSyntax)
	}
	if want := err.Error(); got.Message != want {
		t.Errorf("message = %q, want %q", got.Message, want)
	}
}
