package ingest

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/quiverdata/quiver/engine"
)

// Arrow types of the metadata columns and dead-letter fields.
var (
	partitionType = arrow.PrimitiveTypes.Int32
	offsetType    = arrow.PrimitiveTypes.Int64
	timestampType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
)

// metaFields are the columns appended to every main and normalized row.
var metaFields = []arrow.Field{
	{Name: ColPartition, Type: partitionType},
	{Name: ColOffset, Type: offsetType},
	{Name: ColTimestamp, Type: timestampType},
}

// deadLetterSchema is the shape of the dead-letter table.
var deadLetterSchema = arrow.NewSchema([]arrow.Field{
	{Name: "topic", Type: arrow.BinaryTypes.String},
	{Name: "partition", Type: partitionType},
	{Name: "offset", Type: offsetType},
	{Name: "timestamp", Type: timestampType},
	{Name: "raw", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "error", Type: arrow.BinaryTypes.String},
}, nil)

// withMeta returns s with the metadata columns appended, refusing a schema
// that already has a column of those names.
func withMeta(s *arrow.Schema) (*arrow.Schema, error) {
	for _, f := range metaFields {
		if len(s.FieldIndices(f.Name)) > 0 {
			return nil, fmt.Errorf("message has a field named %s, which the pipeline reserves for its own column", f.Name)
		}
	}
	return arrow.NewSchema(append(append([]arrow.Field{}, s.Fields()...), metaFields...), nil), nil
}

// CreateTableSQL is the CREATE TABLE IF NOT EXISTS statement the pipeline
// makes its tables with, for a table holding rows of schema s (a
// Decoder's records, say), with DuckDB's type for each Arrow column.
func CreateTableSQL(table string, s *arrow.Schema) (string, error) {
	cols := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		t, err := sqlType(f.Type)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", f.Name, err)
		}
		cols[i] = engine.QuoteIdent(f.Name) + " " + t
	}
	return "CREATE TABLE IF NOT EXISTS " + engine.QuoteIdent(table) + " (" + strings.Join(cols, ", ") + ")", nil
}

// sqlType spells the DuckDB type that holds an Arrow type, for DDL.
func sqlType(dt arrow.DataType) (string, error) {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN", nil
	case *arrow.Int8Type:
		return "TINYINT", nil
	case *arrow.Int16Type:
		return "SMALLINT", nil
	case *arrow.Int32Type:
		return "INTEGER", nil
	case *arrow.Int64Type:
		return "BIGINT", nil
	case *arrow.Uint8Type:
		return "UTINYINT", nil
	case *arrow.Uint16Type:
		return "USMALLINT", nil
	case *arrow.Uint32Type:
		return "UINTEGER", nil
	case *arrow.Uint64Type:
		return "UBIGINT", nil
	case *arrow.Float16Type, *arrow.Float32Type:
		return "FLOAT", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "VARCHAR", nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return "BLOB", nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return "DATE", nil
	case *arrow.Time32Type, *arrow.Time64Type:
		return "TIME", nil
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return "TIMESTAMPTZ", nil
		}
		switch t.Unit {
		case arrow.Second:
			return "TIMESTAMP_S", nil
		case arrow.Millisecond:
			return "TIMESTAMP_MS", nil
		case arrow.Nanosecond:
			return "TIMESTAMP_NS", nil
		}
		return "TIMESTAMP", nil
	case *arrow.DurationType, *arrow.MonthDayNanoIntervalType, *arrow.MonthIntervalType, *arrow.DayTimeIntervalType:
		return "INTERVAL", nil
	case arrow.DecimalType:
		if t.GetPrecision() > 38 {
			return "", fmt.Errorf("decimal precision %d is over DuckDB's 38", t.GetPrecision())
		}
		return fmt.Sprintf("DECIMAL(%d, %d)", t.GetPrecision(), t.GetScale()), nil
	case *arrow.DictionaryType:
		return sqlType(t.ValueType)
	case *arrow.ListType:
		e, err := sqlType(t.Elem())
		return e + "[]", err
	case *arrow.LargeListType:
		e, err := sqlType(t.Elem())
		return e + "[]", err
	case *arrow.FixedSizeListType:
		e, err := sqlType(t.Elem())
		return fmt.Sprintf("%s[%d]", e, t.Len()), err
	case *arrow.MapType:
		k, err := sqlType(t.KeyType())
		if err != nil {
			return "", err
		}
		v, err := sqlType(t.ItemType())
		return "MAP(" + k + ", " + v + ")", err
	case *arrow.StructType:
		parts := make([]string, t.NumFields())
		for i, f := range t.Fields() {
			ft, err := sqlType(f.Type)
			if err != nil {
				return "", fmt.Errorf("field %s: %w", f.Name, err)
			}
			parts[i] = engine.QuoteIdent(f.Name) + " " + ft
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")", nil
	case arrow.ExtensionType:
		return sqlType(t.StorageType())
	}
	return "", fmt.Errorf("arrow type %s has no DuckDB equivalent", dt)
}
