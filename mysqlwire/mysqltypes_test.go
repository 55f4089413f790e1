package mysqlwire

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

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

// TestMysqlField checks result columns' definitions, which come from
// mysqlTypes by way of the Arrow type.
func TestMysqlField(t *testing.T) {
	tests := []struct {
		dt       arrow.DataType
		typ      querypb.Type
		length   uint32
		decimals uint32
		charset  uint32
	}{
		{arrow.FixedWidthTypes.Boolean, sqltypes.Int8, 1, 0, charsetBinary},
		{arrow.PrimitiveTypes.Uint32, sqltypes.Uint32, 10, 0, charsetBinary},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, sqltypes.Decimal, 12, 2, charsetBinary},
		{&arrow.Decimal128Type{Precision: 38, Scale: 0}, sqltypes.Decimal, 39, 0, charsetBinary},
		{arrow.PrimitiveTypes.Float64, sqltypes.Float64, 22, decimalsNotFixed, charsetBinary},
		{arrow.BinaryTypes.String, sqltypes.VarChar, textColumnLength, 0, charsetUTF8MB4},
		{arrow.BinaryTypes.Binary, sqltypes.Blob, longLength, 0, charsetBinary},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, sqltypes.Datetime, 26, 6, charsetBinary},
		{&arrow.TimestampType{Unit: arrow.Second}, sqltypes.Datetime, 19, 0, charsetBinary},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, sqltypes.Timestamp, 26, 6, charsetBinary},
		{arrow.FixedWidthTypes.Time64us, sqltypes.Time, 15, 6, charsetBinary},
		{arrow.ListOf(arrow.PrimitiveTypes.Int32), sqltypes.TypeJSON, longLength, 0, charsetUTF8MB4},
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}), sqltypes.TypeJSON, longLength, 0, charsetUTF8MB4},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), sqltypes.TypeJSON, longLength, 0, charsetUTF8MB4},
		{arrow.FixedWidthTypes.MonthDayNanoInterval, sqltypes.VarChar, textColumnLength, 0, charsetUTF8MB4},
		{arrow.Null, sqltypes.Null, 0, 0, charsetBinary},
	}
	for _, tt := range tests {
		f := mysqlField(arrow.Field{Name: "c", Type: tt.dt})
		if f.Type != tt.typ || f.ColumnLength != tt.length || f.Decimals != tt.decimals || f.Charset != tt.charset {
			t.Errorf("%s: %v length %d decimals %d charset %d, want %v %d %d %d", tt.dt, f.Type, f.ColumnLength, f.Decimals,
				f.Charset, tt.typ, tt.length, tt.decimals, tt.charset)
		}
	}
	// Every key arrowKey returns is in mysqlTypes.
	for _, tt := range tests {
		if key, _ := arrowKey(tt.dt); mysqlTypeOf(key).duck != key {
			t.Errorf("%s: key %s is not in mysqlTypes", tt.dt, key)
		}
	}
}

// TestAppendJSONString checks the strings of the JSON text that json
// columns carry.
func TestAppendJSONString(t *testing.T) {
	got := string(appendJSONString(nil, "a\"b\\c\n\x01é\xff"))
	if want := `"a\"b\\c\n\u0001é` + "\uFFFD" + `"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if !strings.HasPrefix(string(appendJSONFloat(nil, 1.5, 64)), "1.5") {
		t.Errorf("appendJSONFloat(1.5) = %s", appendJSONFloat(nil, 1.5, 64))
	}
}
