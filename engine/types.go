package engine

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// LogicalTypeOf maps an Arrow type to the DuckDB type that holds it. The
// caller destroys the result with duckdb.DestroyLogicalType.
func LogicalTypeOf(dt arrow.DataType) (duckdb.LogicalType, error) {
	simple := func(t duckdb.Type) (duckdb.LogicalType, error) { return duckdb.CreateLogicalType(t), nil }
	switch t := dt.(type) {
	case *arrow.NullType:
		return simple(duckdb.TypeSQLNull)
	case *arrow.BooleanType:
		return simple(duckdb.TypeBoolean)
	case *arrow.Int8Type:
		return simple(duckdb.TypeTinyInt)
	case *arrow.Int16Type:
		return simple(duckdb.TypeSmallInt)
	case *arrow.Int32Type:
		return simple(duckdb.TypeInteger)
	case *arrow.Int64Type:
		return simple(duckdb.TypeBigInt)
	case *arrow.Uint8Type:
		return simple(duckdb.TypeUTinyInt)
	case *arrow.Uint16Type:
		return simple(duckdb.TypeUSmallInt)
	case *arrow.Uint32Type:
		return simple(duckdb.TypeUInteger)
	case *arrow.Uint64Type:
		return simple(duckdb.TypeUBigInt)
	case *arrow.Float16Type, *arrow.Float32Type:
		return simple(duckdb.TypeFloat)
	case *arrow.Float64Type:
		return simple(duckdb.TypeDouble)
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return simple(duckdb.TypeVarchar)
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return simple(duckdb.TypeBlob)
	case *arrow.Date32Type, *arrow.Date64Type:
		return simple(duckdb.TypeDate)
	case *arrow.Time32Type, *arrow.Time64Type:
		return simple(duckdb.TypeTime)
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return simple(duckdb.TypeTimestampTZ)
		}
		switch t.Unit {
		case arrow.Second:
			return simple(duckdb.TypeTimestampS)
		case arrow.Millisecond:
			return simple(duckdb.TypeTimestampMS)
		case arrow.Nanosecond:
			return simple(duckdb.TypeTimestampNS)
		}
		return simple(duckdb.TypeTimestamp)
	case *arrow.DurationType, *arrow.MonthDayNanoIntervalType, *arrow.MonthIntervalType, *arrow.DayTimeIntervalType:
		return simple(duckdb.TypeInterval)
	case arrow.DecimalType:
		if t.GetPrecision() > 38 {
			return duckdb.LogicalType{}, fmt.Errorf("decimal precision %d is over DuckDB's 38", t.GetPrecision())
		}
		return duckdb.CreateDecimalType(uint8(t.GetPrecision()), uint8(t.GetScale())), nil
	case *arrow.DictionaryType:
		return LogicalTypeOf(t.ValueType)
	case *arrow.ListType:
		return listOf(t.Elem(), func(c duckdb.LogicalType) duckdb.LogicalType { return duckdb.CreateListType(c) })
	case *arrow.LargeListType:
		return listOf(t.Elem(), func(c duckdb.LogicalType) duckdb.LogicalType { return duckdb.CreateListType(c) })
	case *arrow.FixedSizeListType:
		return listOf(t.Elem(), func(c duckdb.LogicalType) duckdb.LogicalType {
			return duckdb.CreateArrayType(c, duckdb.IdxT(t.Len()))
		})
	case *arrow.MapType:
		k, err := LogicalTypeOf(t.KeyType())
		if err != nil {
			return k, err
		}
		defer duckdb.DestroyLogicalType(&k)
		v, err := LogicalTypeOf(t.ItemType())
		if err != nil {
			return v, err
		}
		defer duckdb.DestroyLogicalType(&v)
		return duckdb.CreateMapType(k, v), nil
	case *arrow.StructType:
		types := make([]duckdb.LogicalType, 0, t.NumFields())
		names := make([]string, 0, t.NumFields())
		defer func() { destroyTypes(types) }()
		for _, f := range t.Fields() {
			ft, err := LogicalTypeOf(f.Type)
			if err != nil {
				return ft, fmt.Errorf("field %s: %w", f.Name, err)
			}
			types = append(types, ft)
			names = append(names, f.Name)
		}
		return duckdb.CreateStructType(types, names), nil
	case arrow.ExtensionType:
		return LogicalTypeOf(t.StorageType())
	}
	return duckdb.LogicalType{}, fmt.Errorf("arrow type %s has no DuckDB equivalent", dt)
}

func listOf(elem arrow.DataType, mk func(duckdb.LogicalType) duckdb.LogicalType) (duckdb.LogicalType, error) {
	c, err := LogicalTypeOf(elem)
	if err != nil {
		return c, err
	}
	defer duckdb.DestroyLogicalType(&c)
	return mk(c), nil
}
