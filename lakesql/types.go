package lakesql

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/quiverdata/quiver/engine"
)

// duckType is the DuckDB type that reads an Iceberg type from Parquet.
func duckType(t iceberg.Type) (string, error) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "BOOLEAN", nil
	case iceberg.Int32Type:
		return "INTEGER", nil
	case iceberg.Int64Type:
		return "BIGINT", nil
	case iceberg.Float32Type:
		return "FLOAT", nil
	case iceberg.Float64Type:
		return "DOUBLE", nil
	case iceberg.DecimalType:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision(), t.Scale()), nil
	case iceberg.DateType:
		return "DATE", nil
	case iceberg.TimeType:
		return "TIME", nil
	case iceberg.TimestampType:
		return "TIMESTAMP", nil
	case iceberg.TimestampTzType:
		return "TIMESTAMPTZ", nil
	case iceberg.TimestampNsType:
		return "TIMESTAMP_NS", nil
	case iceberg.TimestampTzNsType:
		// DuckDB has no nanosecond TIMESTAMPTZ; microseconds keep the instant.
		return "TIMESTAMPTZ", nil
	case iceberg.StringType:
		return "VARCHAR", nil
	case iceberg.UUIDType:
		return "UUID", nil
	case iceberg.BinaryType, iceberg.FixedType:
		return "BLOB", nil
	case *iceberg.ListType:
		e, err := duckType(t.Element)
		if err != nil {
			return "", err
		}
		return e + "[]", nil
	case *iceberg.MapType:
		k, err := duckType(t.KeyType)
		if err != nil {
			return "", err
		}
		v, err := duckType(t.ValueType)
		if err != nil {
			return "", err
		}
		return "MAP(" + k + ", " + v + ")", nil
	case *iceberg.StructType:
		parts := make([]string, 0, len(t.FieldList))
		for _, f := range t.FieldList {
			ft, err := duckType(f.Type)
			if err != nil {
				return "", err
			}
			parts = append(parts, engine.QuoteIdent(f.Name)+" "+ft)
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")", nil
	}
	return "", fmt.Errorf("iceberg type %s has no DuckDB equivalent here", t)
}

// schemaMap is read_parquet's schema parameter for sch: each top-level
// column by its Iceberg field id, so renamed columns and files written
// before a column was added read correctly.
func schemaMap(sch *iceberg.Schema) (string, error) {
	var b strings.Builder
	b.WriteString("MAP{")
	for i, f := range sch.Fields() {
		t, err := duckType(f.Type)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", f.Name, err)
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d: {name: %s, type: %s, default_value: NULL}", f.ID, engine.QuoteString(f.Name), engine.QuoteString(t))
	}
	b.WriteString("}")
	return b.String(), nil
}
