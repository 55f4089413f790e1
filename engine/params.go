package engine

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// BindValues binds Go values to the statement's parameters in order: nil,
// bool, the integer and float kinds, string, []byte and time.Time.
func (s *Stmt) BindValues(args ...any) error {
	if len(args) == 0 {
		return nil
	}
	if len(args) != s.NumParams() {
		return errorf(KindInvalid, "statement takes %d parameters, %d given", s.NumParams(), len(args))
	}
	for i, a := range args {
		v, err := made(goValue(a))
		if err != nil {
			return errorf(KindInvalid, "parameter %d: %v", i+1, err)
		}
		st := duckdb.BindValue(s.ps, duckdb.IdxT(i+1), v)
		duckdb.DestroyValue(&v)
		if st == duckdb.StateError {
			return errorf(KindInvalid, "parameter %d: %s", i+1, duckdb.PrepareError(s.ps))
		}
	}
	return nil
}

// varchar makes a VARCHAR value. DuckDB's duckdb_create_varchar gives no
// value for text that is not UTF-8, and binding that nothing crashes the
// process, so such text is refused here.
func varchar(s string) (duckdb.Value, error) {
	if !utf8.ValidString(s) {
		return duckdb.Value{}, fmt.Errorf("the text is not valid UTF-8 (send bytes as a BLOB)")
	}
	return duckdb.CreateVarchar(s), nil
}

// made passes on a value made for binding, refusing the nothing DuckDB
// gives for a value it cannot make (binding it would crash the process).
func made(v duckdb.Value, err error) (duckdb.Value, error) {
	if err == nil && v.Ptr == nil {
		err = fmt.Errorf("DuckDB could not make a value of it")
	}
	return v, err
}

func goValue(a any) (duckdb.Value, error) {
	switch v := a.(type) {
	case nil:
		return duckdb.CreateNullValue(), nil
	case bool:
		return duckdb.CreateBool(v), nil
	case int:
		return duckdb.CreateInt64(int64(v)), nil
	case int8:
		return duckdb.CreateInt8(v), nil
	case int16:
		return duckdb.CreateInt16(v), nil
	case int32:
		return duckdb.CreateInt32(v), nil
	case int64:
		return duckdb.CreateInt64(v), nil
	case uint8:
		return duckdb.CreateUInt8(v), nil
	case uint16:
		return duckdb.CreateUInt16(v), nil
	case uint32:
		return duckdb.CreateUInt32(v), nil
	case uint64:
		return duckdb.CreateUInt64(v), nil
	case float32:
		return duckdb.CreateFloat(v), nil
	case float64:
		return duckdb.CreateDouble(v), nil
	case string:
		return varchar(v)
	case []byte:
		return duckdb.CreateBlob(v), nil
	case time.Time:
		return duckdb.CreateTimestampTZ(duckdb.NewTimestamp(v.UnixMicro())), nil
	}
	return duckdb.Value{}, fmt.Errorf("unsupported Go type %T", a)
}

// BindRow binds row of rec to the statement's parameters, column i to
// parameter i+1. Values are converted from their Arrow type; DuckDB casts
// them to the parameter's type, and a value that cannot be cast is an
// InvalidArgument-kind error naming the parameter.
func (s *Stmt) BindRow(rec arrow.RecordBatch, row int) error {
	if int(rec.NumCols()) != s.NumParams() {
		return errorf(KindInvalid, "statement takes %d parameters, %d columns given", s.NumParams(), rec.NumCols())
	}
	for i, col := range rec.Columns() {
		v, err := made(arrowValue(col, row))
		if err != nil {
			return errorf(KindInvalid, "parameter %d (%s): %v", i+1, rec.Schema().Field(i).Name, err)
		}
		st := duckdb.BindValue(s.ps, duckdb.IdxT(i+1), v)
		duckdb.DestroyValue(&v)
		if st == duckdb.StateError {
			return errorf(KindInvalid, "parameter %d (%s): %s", i+1, rec.Schema().Field(i).Name, duckdb.PrepareError(s.ps))
		}
	}
	return nil
}

// arrowValue converts one Arrow value to a DuckDB value; the caller destroys
// it.
func arrowValue(arr arrow.Array, i int) (duckdb.Value, error) {
	if arr.IsNull(i) {
		return duckdb.CreateNullValue(), nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return duckdb.CreateBool(a.Value(i)), nil
	case *array.Int8:
		return duckdb.CreateInt8(a.Value(i)), nil
	case *array.Int16:
		return duckdb.CreateInt16(a.Value(i)), nil
	case *array.Int32:
		return duckdb.CreateInt32(a.Value(i)), nil
	case *array.Int64:
		return duckdb.CreateInt64(a.Value(i)), nil
	case *array.Uint8:
		return duckdb.CreateUInt8(a.Value(i)), nil
	case *array.Uint16:
		return duckdb.CreateUInt16(a.Value(i)), nil
	case *array.Uint32:
		return duckdb.CreateUInt32(a.Value(i)), nil
	case *array.Uint64:
		return duckdb.CreateUInt64(a.Value(i)), nil
	case *array.Float16:
		return duckdb.CreateFloat(a.Value(i).Float32()), nil
	case *array.Float32:
		return duckdb.CreateFloat(a.Value(i)), nil
	case *array.Float64:
		return duckdb.CreateDouble(a.Value(i)), nil
	case *array.String:
		return varchar(a.Value(i))
	case *array.LargeString:
		return varchar(a.Value(i))
	case *array.StringView:
		return varchar(a.Value(i))
	case *array.Binary:
		return duckdb.CreateBlob(a.Value(i)), nil
	case *array.LargeBinary:
		return duckdb.CreateBlob(a.Value(i)), nil
	case *array.BinaryView:
		return duckdb.CreateBlob(a.Value(i)), nil
	case *array.FixedSizeBinary:
		return duckdb.CreateBlob(a.Value(i)), nil
	case *array.Date32:
		return duckdb.CreateDate(duckdb.NewDate(int32(a.Value(i)))), nil
	case *array.Date64:
		return duckdb.CreateDate(duckdb.NewDate(int32(int64(a.Value(i)) / 86_400_000))), nil
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return duckdb.CreateTime(duckdb.NewTime(int64(a.Value(i)) * int64(unit.Multiplier()/time.Microsecond))), nil
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		v := int64(a.Value(i))
		if unit == arrow.Nanosecond {
			v /= 1000
		}
		return duckdb.CreateTime(duckdb.NewTime(v)), nil
	case *array.Timestamp:
		return timestampValue(a.DataType().(*arrow.TimestampType), int64(a.Value(i))), nil
	case *array.Duration:
		unit := a.DataType().(*arrow.DurationType).Unit
		micros := int64(time.Duration(a.Value(i)) * unit.Multiplier() / time.Microsecond)
		return duckdb.CreateInterval(duckdb.NewInterval(0, 0, micros)), nil
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		return duckdb.CreateInterval(duckdb.NewInterval(v.Months, v.Days, v.Nanoseconds/1000)), nil
	case *array.MonthInterval:
		return duckdb.CreateInterval(duckdb.NewInterval(int32(a.Value(i)), 0, 0)), nil
	case *array.DayTimeInterval:
		v := a.Value(i)
		return duckdb.CreateInterval(duckdb.NewInterval(0, v.Days, int64(v.Milliseconds)*1000)), nil
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return decimalValue(dt.Precision, dt.Scale, a.Value(i))
	case *array.Decimal64:
		dt := a.DataType().(*arrow.Decimal64Type)
		return decimalValue(dt.Precision, dt.Scale, decimal128.FromI64(int64(a.Value(i))))
	case *array.Decimal32:
		dt := a.DataType().(*arrow.Decimal32Type)
		return decimalValue(dt.Precision, dt.Scale, decimal128.FromI64(int64(a.Value(i))))
	case *array.Dictionary:
		return arrowValue(a.Dictionary(), a.GetValueIndex(i))
	case *array.DenseUnion:
		return arrowValue(a.Field(a.ChildID(i)), int(a.ValueOffset(i)))
	case *array.SparseUnion:
		return arrowValue(a.Field(a.ChildID(i)), i)
	case *array.List:
		start, end := a.ValueOffsets(i)
		return listValue(a.ListValues(), int(start), int(end), false)
	case *array.LargeList:
		start, end := a.ValueOffsets(i)
		return listValue(a.ListValues(), int(start), int(end), false)
	case *array.FixedSizeList:
		n := int(a.DataType().(*arrow.FixedSizeListType).Len())
		return listValue(a.ListValues(), (i+a.Offset())*n, (i+a.Offset()+1)*n, true)
	case *array.Map:
		return mapValue(a, i)
	case *array.Struct:
		return structValue(a, i)
	case *array.Null:
		return duckdb.CreateNullValue(), nil
	}
	return duckdb.Value{}, fmt.Errorf("unsupported parameter type %s", arr.DataType())
}

func timestampValue(dt *arrow.TimestampType, v int64) duckdb.Value {
	var micros int64
	switch dt.Unit {
	case arrow.Second:
		if dt.TimeZone == "" {
			return duckdb.CreateTimestampS(duckdb.NewTimestampS(v))
		}
		micros = v * 1_000_000
	case arrow.Millisecond:
		if dt.TimeZone == "" {
			return duckdb.CreateTimestampMS(duckdb.NewTimestampMS(v))
		}
		micros = v * 1000
	case arrow.Microsecond:
		micros = v
	case arrow.Nanosecond:
		if dt.TimeZone == "" {
			return duckdb.CreateTimestampNS(duckdb.NewTimestampNS(v))
		}
		micros = v / 1000
	}
	if dt.TimeZone != "" {
		return duckdb.CreateTimestampTZ(duckdb.NewTimestamp(micros))
	}
	return duckdb.CreateTimestamp(duckdb.NewTimestamp(micros))
}

func decimalValue(precision, scale int32, n decimal128.Num) (duckdb.Value, error) {
	if precision > 38 || scale < 0 || scale > precision {
		return duckdb.Value{}, fmt.Errorf("decimal(%d,%d) is outside DuckDB's range", precision, scale)
	}
	return duckdb.CreateDecimal(duckdb.NewDecimal(uint8(precision), uint8(scale),
		duckdb.NewHugeInt(n.LowBits(), n.HighBits()))), nil
}

func listValue(values arrow.Array, start, end int, fixed bool) (duckdb.Value, error) {
	child, err := LogicalTypeOf(values.DataType())
	if err != nil {
		return duckdb.Value{}, err
	}
	defer duckdb.DestroyLogicalType(&child)
	vals := make([]duckdb.Value, 0, end-start)
	defer func() { destroyValues(vals) }()
	for j := start; j < end; j++ {
		v, err := arrowValue(values, j)
		if err != nil {
			return duckdb.Value{}, err
		}
		vals = append(vals, v)
	}
	if fixed {
		return duckdb.CreateArrayValue(child, vals), nil
	}
	return duckdb.CreateListValue(child, vals), nil
}

func structValue(a *array.Struct, i int) (duckdb.Value, error) {
	lt, err := LogicalTypeOf(a.DataType())
	if err != nil {
		return duckdb.Value{}, err
	}
	defer duckdb.DestroyLogicalType(&lt)
	vals := make([]duckdb.Value, 0, a.NumField())
	defer func() { destroyValues(vals) }()
	for f := range a.NumField() {
		v, err := arrowValue(a.Field(f), i)
		if err != nil {
			return duckdb.Value{}, err
		}
		vals = append(vals, v)
	}
	return duckdb.CreateStructValue(lt, vals), nil
}

func mapValue(a *array.Map, i int) (duckdb.Value, error) {
	lt, err := LogicalTypeOf(a.DataType())
	if err != nil {
		return duckdb.Value{}, err
	}
	defer duckdb.DestroyLogicalType(&lt)
	start, end := a.ValueOffsets(i)
	keys := make([]duckdb.Value, 0, end-start)
	items := make([]duckdb.Value, 0, end-start)
	defer func() { destroyValues(keys); destroyValues(items) }()
	for j := int(start); j < int(end); j++ {
		k, err := arrowValue(a.Keys(), j)
		if err != nil {
			return duckdb.Value{}, err
		}
		keys = append(keys, k)
		v, err := arrowValue(a.Items(), j)
		if err != nil {
			return duckdb.Value{}, err
		}
		items = append(items, v)
	}
	return duckdb.CreateMapValue(lt, keys, items), nil
}

func destroyValues(vals []duckdb.Value) {
	for i := range vals {
		duckdb.DestroyValue(&vals[i])
	}
}
