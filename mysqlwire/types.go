package mysqlwire

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// MySQL character-set (collation) numbers sent in column definitions.
const (
	charsetUTF8MB4 = 45 // utf8mb4_general_ci, known to MySQL and MariaDB clients
	charsetBinary  = 63
)

// Column definitions of result columns (see mysqlTypes).
const (
	textColumnLength = 65535 * 4 // a VARCHAR result column: 65535 4-byte characters
	decimalsNotFixed = 31        // NOT_FIXED_DEC: a FLOAT or DOUBLE column
)

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

func withPoint(fsp uint32) uint32 {
	if fsp == 0 {
		return 0
	}
	return fsp + 1
}

// colWriter formats the values of one result column of one batch.
type colWriter interface {
	// appendValue appends the text of non-null row i to b. It returns
	// false when the value must be sent as NULL instead: a date or time
	// the binary protocol cannot carry.
	appendValue(b []byte, i int) ([]byte, bool)
}

// newColWriter returns the writer for arr. With binary set, values are
// restricted to what vitess can re-encode for the binary protocol.
func newColWriter(arr arrow.Array, binary bool) colWriter {
	switch a := arr.(type) {
	case *array.Boolean:
		return boolWriter{a}
	case *array.Int8:
		return signedWriter[int8]{a.Values()}
	case *array.Int16:
		return signedWriter[int16]{a.Values()}
	case *array.Int32:
		return signedWriter[int32]{a.Values()}
	case *array.Int64:
		return signedWriter[int64]{a.Values()}
	case *array.Uint8:
		return unsignedWriter[uint8]{a.Values()}
	case *array.Uint16:
		return unsignedWriter[uint16]{a.Values()}
	case *array.Uint32:
		return unsignedWriter[uint32]{a.Values()}
	case *array.Uint64:
		return unsignedWriter[uint64]{a.Values()}
	case *array.Float32:
		return float32Writer{a.Values()}
	case *array.Float64:
		return float64Writer{a.Values()}
	case *array.Decimal128:
		return decimalWriter{a, a.DataType().(*arrow.Decimal128Type).Scale}
	case *array.String:
		return stringWriter[*array.String]{a}
	case *array.LargeString:
		return stringWriter[*array.LargeString]{a}
	case *array.StringView:
		return stringWriter[*array.StringView]{a}
	case *array.Binary:
		return bytesWriter[*array.Binary]{a}
	case *array.LargeBinary:
		return bytesWriter[*array.LargeBinary]{a}
	case *array.BinaryView:
		return bytesWriter[*array.BinaryView]{a}
	case *array.FixedSizeBinary:
		return bytesWriter[*array.FixedSizeBinary]{a}
	case *array.Date32:
		return dateWriter{a.Date32Values(), binary}
	case *array.Time64:
		if a.DataType().(*arrow.Time64Type).Unit == arrow.Microsecond {
			return timeWriter{a.Time64Values()}
		}
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		return timestampWriter{a.TimestampValues(), t.Unit, binary}
	case *array.Dictionary:
		if dict, ok := a.Dictionary().(*array.String); ok {
			return enumWriter{a, dict}
		}
	case *array.List, *array.LargeList, *array.FixedSizeList, *array.ListView, *array.LargeListView,
		*array.Struct, *array.Map:
		return jsonWriter{arr}
	case array.ExtensionArray:
		return newColWriter(a.Storage(), binary)
	}
	return textWriter{arr}
}

type boolWriter struct{ a *array.Boolean }

func (w boolWriter) appendValue(b []byte, i int) ([]byte, bool) {
	if w.a.Value(i) {
		return append(b, '1'), true
	}
	return append(b, '0'), true
}

type signedWriter[T int8 | int16 | int32 | int64] struct{ vals []T }

func (w signedWriter[T]) appendValue(b []byte, i int) ([]byte, bool) {
	return strconv.AppendInt(b, int64(w.vals[i]), 10), true
}

type unsignedWriter[T uint8 | uint16 | uint32 | uint64] struct{ vals []T }

func (w unsignedWriter[T]) appendValue(b []byte, i int) ([]byte, bool) {
	return strconv.AppendUint(b, uint64(w.vals[i]), 10), true
}

type float32Writer struct{ vals []float32 }

func (w float32Writer) appendValue(b []byte, i int) ([]byte, bool) {
	return appendDouble(b, float64(w.vals[i]), 32), true
}

type float64Writer struct{ vals []float64 }

func (w float64Writer) appendValue(b []byte, i int) ([]byte, bool) {
	return appendDouble(b, w.vals[i], 64), true
}

type decimalWriter struct {
	a     *array.Decimal128
	scale int32
}

func (w decimalWriter) appendValue(b []byte, i int) ([]byte, bool) {
	return appendDecimal128(b, w.a.Value(i), w.scale), true
}

type stringWriter[A interface{ Value(int) string }] struct{ a A }

func (w stringWriter[A]) appendValue(b []byte, i int) ([]byte, bool) {
	return append(b, w.a.Value(i)...), true
}

// bytesWriter sends a BLOB's bytes as they are.
type bytesWriter[A interface{ Value(int) []byte }] struct{ a A }

func (w bytesWriter[A]) appendValue(b []byte, i int) ([]byte, bool) {
	return append(b, w.a.Value(i)...), true
}

type dateWriter struct {
	vals   []arrow.Date32
	binary bool
}

func (w dateWriter) appendValue(b []byte, i int) ([]byte, bool) {
	d := int32(w.vals[i])
	if w.binary && !dateYearOK(int64(d)) {
		return b, false
	}
	return appendDate(b, d), true
}

type timeWriter struct{ vals []arrow.Time64 }

func (w timeWriter) appendValue(b []byte, i int) ([]byte, bool) {
	return appendTimeMicros(b, int64(w.vals[i])), true
}

// timestampWriter writes TIMESTAMP and TIMESTAMPTZ (in UTC, without the
// offset DuckDB would print, as a MySQL TIMESTAMP carries none).
type timestampWriter struct {
	vals   []arrow.Timestamp
	unit   arrow.TimeUnit
	binary bool
}

func (w timestampWriter) appendValue(b []byte, i int) ([]byte, bool) {
	v := int64(w.vals[i])
	if w.binary && !timestampYearOK(v, w.unit) {
		return b, false
	}
	if w.unit == arrow.Nanosecond && w.binary {
		v /= 1000 // the binary protocol stops at microseconds
		return appendTimestamp(b, v, arrow.Microsecond, false), true
	}
	return appendTimestamp(b, v, w.unit, false), true
}

// enumWriter writes a DuckDB ENUM, which arrives dictionary-encoded.
type enumWriter struct {
	a    *array.Dictionary
	dict *array.String
}

func (w enumWriter) appendValue(b []byte, i int) ([]byte, bool) {
	return append(b, w.dict.Value(w.a.GetValueIndex(i))...), true
}

// jsonWriter writes a LIST, ARRAY, STRUCT or MAP as JSON text, the way
// MySQL prints its JSON values (see appendJSON): the catalog calls these
// columns json.
type jsonWriter struct{ a arrow.Array }

func (w jsonWriter) appendValue(b []byte, i int) ([]byte, bool) {
	return appendJSON(b, w.a, i), true
}

// textWriter writes any other value as DuckDB's text form of it.
type textWriter struct{ a arrow.Array }

func (w textWriter) appendValue(b []byte, i int) ([]byte, bool) {
	return appendText(b, w.a, i), true
}
