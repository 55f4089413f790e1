package mysqlwire

import (
	"context"
	"testing"

	"github.com/quiverdata/quiver/engine"
)

// TestDuckKey checks that duckKey and its SQL twin, duckKeySQL, file every
// DuckDB type name under the same key of mysqlTypes.
func TestDuckKey(t *testing.T) {
	tests := map[string]string{
		"BOOLEAN": "BOOLEAN", "UBIGINT": "UBIGINT", "DECIMAL(18,4)": keyDecimal, "VARCHAR": keyVarchar,
		"TIMESTAMP WITH TIME ZONE": "TIMESTAMP WITH TIME ZONE", "UUID": "UUID", "JSON": keyJSON, "INTEGER[]": keyJSON,
		"INTEGER[3]": keyJSON, "DECIMAL(10,2)[]": keyJSON, "ENUM('a', 'b')[]": keyJSON, "STRUCT(a INTEGER)": keyJSON,
		"MAP(VARCHAR, INTEGER)": keyJSON, "ENUM('a', 'b')": keyEnum, "UNION(a INTEGER, b VARCHAR)": keyVarchar,
		"INTERVAL": "INTERVAL", "BIT": "BIT", "GEOMETRY": keyVarchar, `"NULL"`: keyVarchar,
	}
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for typ, want := range tests {
		if got := duckKey(typ); got != want {
			t.Errorf("duckKey(%s) = %s, want %s", typ, got, want)
		}
		rows, err := queryStrings(ctx, conn, "SELECT "+duckKeySQL(engine.QuoteString(typ)))
		if err != nil {
			t.Fatalf("duckKeySQL(%s): %v", typ, err)
		}
		if got := *rows[0][0]; got != want {
			t.Errorf("duckKeySQL(%s) = %s, want %s", typ, got, want)
		}
	}
}
