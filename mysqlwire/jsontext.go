package mysqlwire

import (
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The catalog calls LIST, ARRAY, STRUCT and MAP columns json (see
// mysqlTypes), so their values go out as JSON text, laid out as MySQL
// prints a JSON value: ", " between elements and ": " after a key, as in
// [1, 2, null] and {"a": 1, "b": "x"}. A client that reads the column as
// JSON (SQLAlchemy's reflected JSON type, pandas through it) parses them.
//
// The values are those of DuckDB's to_json: numbers and booleans are JSON
// numbers and booleans; a MAP is an object keyed by the text of its keys;
// a UNION is {"tag": value}; every other value (dates, times, intervals,
// UUIDs, BLOBs, …) is a string holding DuckDB's text of it. NaN and the
// infinities, which to_json writes as invalid JSON, are the strings "nan",
// "inf" and "-inf".

// appendJSON appends row i of arr, which is not null, as JSON text.
func appendJSON(b []byte, arr arrow.Array, i int) []byte {
	if values, start, end, ok := listRange(arr, i); ok {
		return appendJSONArray(b, values, start, end)
	}
	switch a := arr.(type) {
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		b = append(b, '{')
		for j := int(start); j < int(end); j++ {
			if j > int(start) {
				b = append(b, ',', ' ')
			}
			b = appendJSONKey(b, keys, j)
			b = append(b, ':', ' ')
			b = appendJSONElem(b, items, j)
		}
		return append(b, '}')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for f := range a.NumField() {
			if f > 0 {
				b = append(b, ',', ' ')
			}
			b = appendJSONString(b, st.Field(f).Name)
			b = append(b, ':', ' ')
			b = appendJSONElem(b, a.Field(f), i)
		}
		return append(b, '}')
	case *array.SparseUnion:
		return appendJSONUnion(b, a, a.ChildID(i), i)
	case *array.DenseUnion:
		return appendJSONUnion(b, a, a.ChildID(i), int(a.ValueOffset(i)))
	case *array.Dictionary:
		return appendJSONElem(b, a.Dictionary(), a.GetValueIndex(i))
	case array.ExtensionArray:
		return appendJSON(b, a.Storage(), i)
	case *array.Boolean:
		if a.Value(i) {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case *array.Int8, *array.Int16, *array.Int32, *array.Int64, *array.Uint8, *array.Uint16,
		*array.Uint32, *array.Uint64, *array.Decimal32, *array.Decimal64, *array.Decimal128, *array.Decimal256:
		return appendLeaf(b, arr, i)
	case *array.Float16:
		return appendJSONFloat(b, float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return appendJSONFloat(b, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendJSONFloat(b, a.Value(i), 64)
	case *array.String:
		return appendJSONString(b, a.Value(i))
	case *array.LargeString:
		return appendJSONString(b, a.Value(i))
	case *array.StringView:
		return appendJSONString(b, a.Value(i))
	}
	// Any other leaf: its DuckDB text, as a string.
	mark := len(b)
	b = appendLeaf(b, arr, i)
	s := string(b[mark:])
	return appendJSONString(b[:mark], s)
}

// appendJSONUnion appends a UNION's value as DuckDB's to_json does: an
// object of one member, {"tag": value}.
func appendJSONUnion(b []byte, a array.Union, child, i int) []byte {
	b = append(b, '{')
	b = appendJSONString(b, a.UnionType().Fields()[child].Name)
	b = append(b, ':', ' ')
	b = appendJSONElem(b, a.Field(child), i)
	return append(b, '}')
}

// appendJSONElem appends an element of a nested value: null, or its JSON.
func appendJSONElem(b []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(b, "null"...)
	}
	return appendJSON(b, arr, i)
}

func appendJSONArray(b []byte, values arrow.Array, start, end int) []byte {
	b = append(b, '[')
	for j := start; j < end; j++ {
		if j > start {
			b = append(b, ',', ' ')
		}
		b = appendJSONElem(b, values, j)
	}
	return append(b, ']')
}

// appendJSONKey appends a MAP key as an object key: a string holding the
// key's text ("null" for a NULL key, which DuckDB forbids anyway).
func appendJSONKey(b []byte, keys arrow.Array, j int) []byte {
	if keys.IsNull(j) {
		return append(b, `"null"`...)
	}
	mark := len(b)
	b = appendJSON(b, keys, j)
	if b[mark] == '"' {
		return b
	}
	s := string(b[mark:])
	return appendJSONString(b[:mark], s)
}

// appendJSONFloat appends a float as a JSON number, or NaN and the
// infinities as strings.
func appendJSONFloat(b []byte, v float64, bitSize int) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, `"nan"`...)
	case math.IsInf(v, 1):
		return append(b, `"inf"`...)
	case math.IsInf(v, -1):
		return append(b, `"-inf"`...)
	}
	return appendDouble(b, v, bitSize)
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, everything else (non-ASCII too) as it is;
// invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\uFFFD"...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
