package mysqlvalue

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// MySQL character-set (collation) numbers sent in column definitions.
const (
	CharsetUTF8MB4 = 45 // utf8mb4_general_ci, known to MySQL and MariaDB clients
	CharsetBinary  = 63
)

// Lengths of result columns.
const (
	// LongLength is the length MySQL gives its unbounded types: longtext,
	// longblob and json hold up to 2^32-1 bytes.
	LongLength = 4294967295

	// TextColumnLength is a VARCHAR result column's: 65535 4-byte
	// characters.
	TextColumnLength = 65535 * 4

	// DecimalsNotFixed is NOT_FIXED_DEC, the decimals of a FLOAT or DOUBLE
	// column.
	DecimalsNotFixed = 31
)

// ErrUnsupported is the error for an Arrow type the table has no entry
// for; a result with such a column is refused before any row is sent.
var ErrUnsupported = errors.New("arrow type has no mysql form")

// appendFunc appends the text of non-null row i of the array it was made
// for.
type appendFunc func(b []byte, i int) []byte

// binaryFunc is an appendFunc for the binary protocol, whose DATE and
// DATETIME carry less than the text: ok is false when the value must be
// sent as NULL instead.
type binaryFunc func(b []byte, i int) (out []byte, ok bool)

// columnDef is what a MySQL column definition says of a result column.
type columnDef struct {
	typ      querypb.Type
	length   uint32
	decimals uint32
	text     bool // a character type, sent as utf8mb4; otherwise binary
}

// jsonForm says how a leaf value is written inside JSON text.
type jsonForm uint8

const (
	jsonString  jsonForm = iota // a JSON string holding DuckDB's text of the value
	jsonLiteral                 // DuckDB's text, already JSON (booleans, integers, decimals)
	jsonNumber                  // DuckDB's text, or a string for nan, inf and -inf, which JSON has no number for
)

// typeInfo is the MySQL face of one Arrow type: its column definition and
// how its values are written. A nested type (LIST, STRUCT, MAP, UNION,
// DICTIONARY) has walk instead of the leaf writers.
type typeInfo struct {
	def   columnDef
	defOf func(dt arrow.DataType) columnDef // for a type with parameters, instead of def

	// duck writes DuckDB's text of the value (its cast to VARCHAR), as the
	// value appears inside a nested value.
	duck func(arr arrow.Array) appendFunc
	// mysql writes the value of a result column in the text protocol,
	// where it differs from duck.
	mysql func(arr arrow.Array) appendFunc
	// binary writes the value of a result column in the binary protocol,
	// where it differs from mysql.
	binary func(arr arrow.Array) binaryFunc
	json   jsonForm

	// walk builds the writer of a nested value in form f; top is the
	// form a result column of the type is written in.
	walk func(f *form, arr arrow.Array, elem bool) (appendFunc, error)
	top  *form
}

// types is the table of every Arrow type the endpoint serves. It is
// filled in init because the nested types' walkers look the table up.
var types map[arrow.Type]*typeInfo

func init() {
	varchar := columnDef{typ: sqltypes.VarChar, length: TextColumnLength, text: true}
	jsonDef := columnDef{typ: sqltypes.TypeJSON, length: LongLength, text: true}
	blob := columnDef{typ: sqltypes.Blob, length: LongLength}
	float := columnDef{typ: sqltypes.Float32, length: 12, decimals: DecimalsNotFixed}
	list := &typeInfo{def: jsonDef, walk: walkList, top: jsonText}
	union := &typeInfo{def: varchar, walk: walkUnion, top: duckText}
	str := func(duck func(arrow.Array) appendFunc) *typeInfo { return &typeInfo{def: varchar, duck: duck} }
	bytes := func(mysql, duck func(arrow.Array) appendFunc) *typeInfo {
		return &typeInfo{def: blob, mysql: mysql, duck: duck}
	}
	interval := func(duck func(arrow.Array) appendFunc) *typeInfo { return &typeInfo{def: varchar, duck: duck} }

	types = map[arrow.Type]*typeInfo{
		// SELECT NULL: every value is NULL, so none is ever written.
		arrow.NULL: {def: columnDef{typ: sqltypes.Null}, duck: func(arrow.Array) appendFunc {
			return func(b []byte, _ int) []byte { return append(b, "NULL"...) }
		}},
		// BOOLEAN is tinyint(1): 1 and 0 in a result column, true and
		// false inside a nested value, as DuckDB prints it.
		arrow.BOOL: {def: columnDef{typ: sqltypes.Int8, length: 1}, duck: boolText("true", "false"),
			mysql: boolText("1", "0"), json: jsonLiteral},
		arrow.INT8:   {def: columnDef{typ: sqltypes.Int8, length: 4}, duck: signed[int8, *array.Int8], json: jsonLiteral},
		arrow.INT16:  {def: columnDef{typ: sqltypes.Int16, length: 6}, duck: signed[int16, *array.Int16], json: jsonLiteral},
		arrow.INT32:  {def: columnDef{typ: sqltypes.Int32, length: 11}, duck: signed[int32, *array.Int32], json: jsonLiteral},
		arrow.INT64:  {def: columnDef{typ: sqltypes.Int64, length: 20}, duck: signed[int64, *array.Int64], json: jsonLiteral},
		arrow.UINT8:  {def: columnDef{typ: sqltypes.Uint8, length: 3}, duck: unsigned[uint8, *array.Uint8], json: jsonLiteral},
		arrow.UINT16: {def: columnDef{typ: sqltypes.Uint16, length: 5}, duck: unsigned[uint16, *array.Uint16], json: jsonLiteral},
		arrow.UINT32: {def: columnDef{typ: sqltypes.Uint32, length: 10}, duck: unsigned[uint32, *array.Uint32], json: jsonLiteral},
		arrow.UINT64: {def: columnDef{typ: sqltypes.Uint64, length: 20}, duck: unsigned[uint64, *array.Uint64], json: jsonLiteral},
		arrow.FLOAT16: {def: float, json: jsonNumber, duck: func(arr arrow.Array) appendFunc {
			a := arr.(*array.Float16)
			return func(b []byte, i int) []byte { return appendDouble(b, float64(a.Value(i).Float32()), 32) }
		}},
		arrow.FLOAT32: {def: float, json: jsonNumber, duck: func(arr arrow.Array) appendFunc {
			vals := arr.(*array.Float32).Values()
			return func(b []byte, i int) []byte { return appendDouble(b, float64(vals[i]), 32) }
		}},
		arrow.FLOAT64: {def: columnDef{typ: sqltypes.Float64, length: 22, decimals: DecimalsNotFixed}, json: jsonNumber,
			duck: func(arr arrow.Array) appendFunc {
				vals := arr.(*array.Float64).Values()
				return func(b []byte, i int) []byte { return appendDouble(b, vals[i], 64) }
			}},
		// DuckDB sends HUGEINT as decimal(38,0), its widest decimal.
		arrow.DECIMAL32: {defOf: decimalDef, json: jsonLiteral, duck: func(arr arrow.Array) appendFunc {
			a, scale := arr.(*array.Decimal32), arr.DataType().(*arrow.Decimal32Type).Scale
			return func(b []byte, i int) []byte { return appendScaledInt(b, int64(a.Value(i)), scale) }
		}},
		arrow.DECIMAL64: {defOf: decimalDef, json: jsonLiteral, duck: func(arr arrow.Array) appendFunc {
			a, scale := arr.(*array.Decimal64), arr.DataType().(*arrow.Decimal64Type).Scale
			return func(b []byte, i int) []byte { return appendScaledInt(b, int64(a.Value(i)), scale) }
		}},
		arrow.DECIMAL128: {defOf: decimalDef, json: jsonLiteral, duck: func(arr arrow.Array) appendFunc {
			a, scale := arr.(*array.Decimal128), arr.DataType().(*arrow.Decimal128Type).Scale
			return func(b []byte, i int) []byte { return appendDecimal128(b, a.Value(i), scale) }
		}},
		arrow.DECIMAL256: {defOf: decimalDef, json: jsonLiteral, duck: func(arr arrow.Array) appendFunc {
			a, scale := arr.(*array.Decimal256), arr.DataType().(*arrow.Decimal256Type).Scale
			return func(b []byte, i int) []byte { return appendDecimal256(b, a.Value(i), scale) }
		}},
		// A result VARCHAR stays VARCHAR (what MySQL sends for a computed
		// string), so that drivers map it to their string type. UUID, JSON
		// and ENUM values arrive as strings too.
		arrow.STRING:       str(stringText[*array.String]),
		arrow.LARGE_STRING: str(stringText[*array.LargeString]),
		arrow.STRING_VIEW:  str(stringText[*array.StringView]),
		// A BLOB goes out as its bytes, and inside a nested value as
		// DuckDB's escaped text of them.
		arrow.BINARY:            bytes(rawBytes[*array.Binary], blobText[*array.Binary]),
		arrow.LARGE_BINARY:      bytes(rawBytes[*array.LargeBinary], blobText[*array.LargeBinary]),
		arrow.BINARY_VIEW:       bytes(rawBytes[*array.BinaryView], blobText[*array.BinaryView]),
		arrow.FIXED_SIZE_BINARY: bytes(rawBytes[*array.FixedSizeBinary], blobText[*array.FixedSizeBinary]),
		arrow.DATE32: {def: columnDef{typ: sqltypes.Date, length: 10}, duck: func(arr arrow.Array) appendFunc {
			vals := arr.(*array.Date32).Date32Values()
			return func(b []byte, i int) []byte { return appendDate(b, int32(vals[i])) }
		}, binary: func(arr arrow.Array) binaryFunc {
			vals := arr.(*array.Date32).Date32Values()
			return func(b []byte, i int) ([]byte, bool) {
				d := int32(vals[i])
				if !dateYearOK(int64(d)) {
					return b, false
				}
				return appendDate(b, d), true
			}
		}},
		arrow.DATE64: {def: columnDef{typ: sqltypes.Date, length: 10}, duck: func(arr arrow.Array) appendFunc {
			a := arr.(*array.Date64)
			return func(b []byte, i int) []byte { return appendDate(b, int32(int64(a.Value(i))/86_400_000)) }
		}},
		arrow.TIME32: {defOf: timeDef, duck: func(arr arrow.Array) appendFunc {
			a := arr.(*array.Time32)
			if a.DataType().(*arrow.Time32Type).Unit == arrow.Millisecond {
				return func(b []byte, i int) []byte {
					v := int64(a.Value(i))
					return appendClock(b, v/1000, v%1000, 3)
				}
			}
			return func(b []byte, i int) []byte { return appendClock(b, int64(a.Value(i)), 0, 0) }
		}},
		arrow.TIME64: {defOf: timeDef, duck: func(arr arrow.Array) appendFunc {
			vals := arr.(*array.Time64).Time64Values()
			if arr.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
				return func(b []byte, i int) []byte {
					v := int64(vals[i])
					return appendClock(b, v/1_000_000_000, v%1_000_000_000, 9)
				}
			}
			return func(b []byte, i int) []byte { return appendTimeMicros(b, int64(vals[i])) }
		}},
		// TIMESTAMP and TIMESTAMPTZ (an instant, sent in UTC without the
		// offset DuckDB would print, as a MySQL TIMESTAMP carries none).
		arrow.TIMESTAMP: {defOf: timestampDef, duck: func(arr arrow.Array) appendFunc {
			vals, t := arr.(*array.Timestamp).TimestampValues(), arr.DataType().(*arrow.TimestampType)
			tz := t.TimeZone != ""
			return func(b []byte, i int) []byte { return appendTimestamp(b, int64(vals[i]), t.Unit, tz) }
		}, mysql: func(arr arrow.Array) appendFunc {
			vals, unit := arr.(*array.Timestamp).TimestampValues(), arr.DataType().(*arrow.TimestampType).Unit
			return func(b []byte, i int) []byte { return appendTimestamp(b, int64(vals[i]), unit, false) }
		}, binary: func(arr arrow.Array) binaryFunc {
			vals, unit := arr.(*array.Timestamp).TimestampValues(), arr.DataType().(*arrow.TimestampType).Unit
			return func(b []byte, i int) ([]byte, bool) {
				v := int64(vals[i])
				if !timestampYearOK(v, unit) {
					return b, false
				}
				if unit == arrow.Nanosecond {
					// The binary protocol stops at microseconds.
					return appendTimestamp(b, v/1000, arrow.Microsecond, false), true
				}
				return appendTimestamp(b, v, unit, false), true
			}
		}},
		// INTERVAL has no MySQL type: its text, as DuckDB prints it.
		arrow.INTERVAL_MONTH_DAY_NANO: interval(func(arr arrow.Array) appendFunc {
			a := arr.(*array.MonthDayNanoInterval)
			return func(b []byte, i int) []byte {
				v := a.Value(i)
				return appendInterval(b, v.Months, v.Days, v.Nanoseconds/1000)
			}
		}),
		arrow.INTERVAL_DAY_TIME: interval(func(arr arrow.Array) appendFunc {
			a := arr.(*array.DayTimeInterval)
			return func(b []byte, i int) []byte {
				v := a.Value(i)
				return appendInterval(b, 0, v.Days, int64(v.Milliseconds)*1000)
			}
		}),
		arrow.INTERVAL_MONTHS: interval(func(arr arrow.Array) appendFunc {
			a := arr.(*array.MonthInterval)
			return func(b []byte, i int) []byte { return appendInterval(b, int32(a.Value(i)), 0, 0) }
		}),
		arrow.DURATION: interval(func(arr arrow.Array) appendFunc {
			a := arr.(*array.Duration)
			mult := int64(a.DataType().(*arrow.DurationType).Unit.Multiplier())
			return func(b []byte, i int) []byte { return appendInterval(b, 0, 0, int64(a.Value(i))*mult/1000) }
		}),
		// LIST, ARRAY, STRUCT and MAP are json columns: their values go out
		// as JSON text.
		arrow.LIST:            list,
		arrow.LARGE_LIST:      list,
		arrow.FIXED_SIZE_LIST: list,
		arrow.LIST_VIEW:       list,
		arrow.LARGE_LIST_VIEW: list,
		arrow.STRUCT:          {def: jsonDef, walk: walkStruct, top: jsonText},
		arrow.MAP:             {def: jsonDef, walk: walkMap, top: jsonText},
		// A UNION goes out as DuckDB's text of its value, and an ENUM
		// (dictionary-encoded) as its label.
		arrow.SPARSE_UNION: union,
		arrow.DENSE_UNION:  union,
		arrow.DICTIONARY:   {def: varchar, walk: walkDictionary, top: duckText},
	}
}

// typeOf returns the entry of dt, or of its storage type for an
// extension type; it is the one place an unsupported type is refused.
func typeOf(dt arrow.DataType) (*typeInfo, error) {
	for {
		ext, ok := dt.(arrow.ExtensionType)
		if !ok {
			break
		}
		dt = ext.StorageType()
	}
	if t, ok := types[dt.ID()]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupported, dt)
}

// check reports an unsupported type anywhere in dt, nested ones included.
func check(dt arrow.DataType) error {
	if _, err := typeOf(dt); err != nil {
		return err
	}
	for {
		ext, ok := dt.(arrow.ExtensionType)
		if !ok {
			break
		}
		dt = ext.StorageType()
	}
	switch t := dt.(type) {
	case *arrow.DictionaryType:
		return check(t.ValueType)
	case arrow.NestedType:
		for _, f := range t.Fields() {
			if err := check(f.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

// IsBytes reports whether values of dt are bytes, which a result column
// sends as a BLOB: a statement parameter of such a type takes the bytes a
// client sends as they are.
func IsBytes(dt arrow.DataType) bool {
	t, err := typeOf(dt)
	return err == nil && t.def.typ == sqltypes.Blob
}

// Field returns the MySQL column definition of an Arrow result field.
func Field(f arrow.Field) (*querypb.Field, error) {
	if err := check(f.Type); err != nil {
		return nil, fmt.Errorf("column %s: %w", f.Name, err)
	}
	t, _ := typeOf(f.Type)
	d := t.def
	if t.defOf != nil {
		dt := f.Type
		if ext, ok := dt.(arrow.ExtensionType); ok {
			dt = ext.StorageType()
		}
		d = t.defOf(dt)
	}
	fld := &querypb.Field{Name: f.Name, OrgName: f.Name, Type: d.typ, ColumnLength: d.length, Decimals: d.decimals,
		Charset: CharsetBinary}
	if d.text {
		fld.Charset = CharsetUTF8MB4
	}
	return fld, nil
}

func decimalDef(dt arrow.DataType) columnDef {
	d := dt.(arrow.DecimalType)
	p, s := uint32(d.GetPrecision()), uint32(d.GetScale())
	length := p + 1 // the sign
	if s > 0 {
		length++ // the decimal point
	}
	return columnDef{typ: sqltypes.Decimal, length: length, decimals: s}
}

func timeDef(dt arrow.DataType) columnDef {
	fsp := fractionDigits(dt.(arrow.TemporalWithUnit).TimeUnit())
	return columnDef{typ: sqltypes.Time, length: 8 + withPoint(fsp), decimals: fsp}
}

func timestampDef(dt arrow.DataType) columnDef {
	t := dt.(*arrow.TimestampType)
	fsp := fractionDigits(t.Unit)
	d := columnDef{typ: sqltypes.Datetime, length: 19 + withPoint(fsp), decimals: fsp}
	if t.TimeZone != "" {
		d.typ = sqltypes.Timestamp
	}
	return d
}

// fractionDigits is the fractional-seconds precision MySQL can show for a
// time unit; it stops at microseconds.
func fractionDigits(u arrow.TimeUnit) uint32 {
	switch u {
	case arrow.Second:
		return 0
	case arrow.Millisecond:
		return 3
	}
	return 6
}

// withPoint is the width of a fraction of fsp digits and its point.
func withPoint(fsp uint32) uint32 {
	if fsp == 0 {
		return 0
	}
	return fsp + 1
}

func boolText(yes, no string) func(arrow.Array) appendFunc {
	return func(arr arrow.Array) appendFunc {
		a := arr.(*array.Boolean)
		return func(b []byte, i int) []byte {
			if a.Value(i) {
				return append(b, yes...)
			}
			return append(b, no...)
		}
	}
}

func signed[T int8 | int16 | int32 | int64, A interface{ Values() []T }](arr arrow.Array) appendFunc {
	vals := arr.(A).Values()
	return func(b []byte, i int) []byte { return strconv.AppendInt(b, int64(vals[i]), 10) }
}

func unsigned[T uint8 | uint16 | uint32 | uint64, A interface{ Values() []T }](arr arrow.Array) appendFunc {
	vals := arr.(A).Values()
	return func(b []byte, i int) []byte { return strconv.AppendUint(b, uint64(vals[i]), 10) }
}

func stringText[A interface{ Value(int) string }](arr arrow.Array) appendFunc {
	a := arr.(A)
	return func(b []byte, i int) []byte { return append(b, a.Value(i)...) }
}

func rawBytes[A interface{ Value(int) []byte }](arr arrow.Array) appendFunc {
	a := arr.(A)
	return func(b []byte, i int) []byte { return append(b, a.Value(i)...) }
}

func blobText[A interface{ Value(int) []byte }](arr arrow.Array) appendFunc {
	a := arr.(A)
	return func(b []byte, i int) []byte { return appendBlobText(b, a.Value(i)) }
}
