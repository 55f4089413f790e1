package flightsql

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/engine"
)

// columnSQL is the DuckDB type, as SQL text, that holds an Arrow column:
// engine.LogicalTypeOf's mapping, spelled out for CREATE TABLE.
func columnSQL(dt arrow.DataType) (string, error) {
	lt, err := engine.LogicalTypeOf(dt)
	if err != nil {
		return "", err
	}
	defer duckdb.DestroyLogicalType(&lt)
	return logicalTypeSQL(lt)
}

// logicalTypeSQL spells a DuckDB logical type as SQL. The C API has no
// ToString for types, so nested types are walked here.
func logicalTypeSQL(lt duckdb.LogicalType) (string, error) {
	switch id := duckdb.GetTypeId(lt); id {
	case duckdb.TypeDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", duckdb.DecimalWidth(lt), duckdb.DecimalScale(lt)), nil
	case duckdb.TypeList:
		child := duckdb.ListTypeChildType(lt)
		defer duckdb.DestroyLogicalType(&child)
		s, err := logicalTypeSQL(child)
		return s + "[]", err
	case duckdb.TypeArray:
		child := duckdb.ArrayTypeChildType(lt)
		defer duckdb.DestroyLogicalType(&child)
		s, err := logicalTypeSQL(child)
		return fmt.Sprintf("%s[%d]", s, duckdb.ArrayTypeArraySize(lt)), err
	case duckdb.TypeMap:
		k := duckdb.MapTypeKeyType(lt)
		defer duckdb.DestroyLogicalType(&k)
		v := duckdb.MapTypeValueType(lt)
		defer duckdb.DestroyLogicalType(&v)
		ks, err := logicalTypeSQL(k)
		if err != nil {
			return "", err
		}
		vs, err := logicalTypeSQL(v)
		return "MAP(" + ks + ", " + vs + ")", err
	case duckdb.TypeStruct:
		n := duckdb.StructTypeChildCount(lt)
		if n == 0 {
			return "", fmt.Errorf("a struct without fields has no DuckDB equivalent")
		}
		parts := make([]string, 0, n)
		for i := duckdb.IdxT(0); i < n; i++ {
			ct := duckdb.StructTypeChildType(lt, i)
			s, err := logicalTypeSQL(ct)
			duckdb.DestroyLogicalType(&ct)
			if err != nil {
				return "", err
			}
			parts = append(parts, engine.QuoteIdent(duckdb.StructTypeChildName(lt, i))+" "+s)
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")", nil
	default:
		if name, ok := scalarTypeSQL[id]; ok {
			return name, nil
		}
		return "", fmt.Errorf("DuckDB type id %d cannot be spelled as SQL", id)
	}
}

var scalarTypeSQL = map[duckdb.Type]string{
	duckdb.TypeBoolean:     "BOOLEAN",
	duckdb.TypeTinyInt:     "TINYINT",
	duckdb.TypeSmallInt:    "SMALLINT",
	duckdb.TypeInteger:     "INTEGER",
	duckdb.TypeBigInt:      "BIGINT",
	duckdb.TypeUTinyInt:    "UTINYINT",
	duckdb.TypeUSmallInt:   "USMALLINT",
	duckdb.TypeUInteger:    "UINTEGER",
	duckdb.TypeUBigInt:     "UBIGINT",
	duckdb.TypeHugeInt:     "HUGEINT",
	duckdb.TypeUHugeInt:    "UHUGEINT",
	duckdb.TypeFloat:       "FLOAT",
	duckdb.TypeDouble:      "DOUBLE",
	duckdb.TypeVarchar:     "VARCHAR",
	duckdb.TypeBlob:        "BLOB",
	duckdb.TypeDate:        "DATE",
	duckdb.TypeTime:        "TIME",
	duckdb.TypeTimeTZ:      "TIME WITH TIME ZONE",
	duckdb.TypeTimestamp:   "TIMESTAMP",
	duckdb.TypeTimestampS:  "TIMESTAMP_S",
	duckdb.TypeTimestampMS: "TIMESTAMP_MS",
	duckdb.TypeTimestampNS: "TIMESTAMP_NS",
	duckdb.TypeTimestampTZ: "TIMESTAMP WITH TIME ZONE",
	duckdb.TypeInterval:    "INTERVAL",
	duckdb.TypeUUID:        "UUID",
	// An all-null Arrow column (pandas' all-None object column) has no
	// type to keep; DuckDB tables cannot hold NULL-typed columns.
	duckdb.TypeSQLNull: "VARCHAR",
}

// createTableSQL is the CREATE TABLE statement for an Arrow schema.
// Nullability is not carried over: Go and Java writers often leave fields
// non-nullable by default, and a NOT NULL column would refuse later
// appends that are valid Arrow.
func createTableSQL(target string, temp, replace bool, schema *arrow.Schema) (string, error) {
	var b strings.Builder
	b.WriteString("CREATE ")
	if replace {
		b.WriteString("OR REPLACE ")
	}
	if temp {
		b.WriteString("TEMP ")
	}
	b.WriteString("TABLE ")
	b.WriteString(target)
	b.WriteString(" (")
	for i, f := range schema.Fields() {
		typ, err := columnSQL(f.Type)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", f.Name, err)
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(engine.QuoteIdent(f.Name))
		b.WriteByte(' ')
		b.WriteString(typ)
	}
	b.WriteString(")")
	return b.String(), nil
}
