package mysqlvalue

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// A form is one way of writing nested values: DuckDB's text (duckText)
// or MySQL's JSON text (jsonText). One walker builds both from it: for
// each array it builds, once per record batch, a tree of appendFuncs that
// mirrors the type, so that writing a row switches on no type.
type form struct {
	null   string                          // an element that is NULL
	name   func(b []byte, s string) []byte // a STRUCT field's name or a UNION's tag
	mapSep string                          // between a MAP key and its value
	leaf   func(t *typeInfo, arr arrow.Array, elem bool) appendFunc
	json   bool // JSON: MAP keys are strings, a UNION is {"tag": value}
}

// duckText is DuckDB's cast to VARCHAR: [1, NULL], {'a': 1, 'b': x} and
// {k=v}, with a string element quoted when it would otherwise be
// ambiguous.
var duckText = &form{null: "NULL", name: appendQuoted[string], mapSep: "=", leaf: duckLeaf}

// jsonText is the text of a json column, laid out as MySQL prints a JSON
// value: ", " between elements and ": " after a key, as in [1, 2, null]
// and {"a": 1, "b": "x"}. A client that reads the column as JSON
// (SQLAlchemy's reflected JSON type, pandas through it) parses it.
//
// The values are those of DuckDB's to_json: numbers and booleans are JSON
// numbers and booleans; a MAP is an object keyed by the text of its keys;
// a UNION is {"tag": value}; every other value (dates, times, intervals,
// UUIDs, BLOBs, …) is a string holding DuckDB's text of it. NaN and the
// infinities, which to_json writes as invalid JSON, are the strings "nan",
// "inf" and "-inf".
var jsonText = &form{null: "null", name: appendJSONString[string], mapSep: ": ", leaf: jsonLeaf, json: true}

// build returns the writer of arr's non-null values in form f. elem says
// they are elements of a nested value rather than a value of their own.
func (f *form) build(arr arrow.Array, elem bool) (appendFunc, error) {
	if ext, ok := arr.(array.ExtensionArray); ok {
		return f.build(ext.Storage(), elem)
	}
	t, err := typeOf(arr.DataType())
	if err != nil {
		return nil, err
	}
	if t.walk != nil {
		return t.walk(f, arr, elem)
	}
	return f.leaf(t, arr, elem), nil
}

// elem returns the writer of the elements arr holds, NULL included.
func (f *form) elem(arr arrow.Array) (appendFunc, error) {
	null := f.null
	if arr.DataType().ID() == arrow.NULL {
		// An Arrow null array has no validity bitmap to say so.
		return func(b []byte, _ int) []byte { return append(b, null...) }, nil
	}
	inner, err := f.build(arr, true)
	if err != nil || arr.NullN() == 0 {
		return inner, err
	}
	return func(b []byte, i int) []byte {
		if arr.IsNull(i) {
			return append(b, null...)
		}
		return inner(b, i)
	}, nil
}

// member returns the writer of a UNION member's or a dictionary's values:
// bare at the top level of DuckDB's text, where they print as a value of
// their own, and as elements everywhere else.
func (f *form) member(arr arrow.Array, elem bool) (appendFunc, error) {
	if elem || f.json {
		return f.elem(arr)
	}
	return f.build(arr, false)
}

func walkList(f *form, arr arrow.Array, _ bool) (appendFunc, error) {
	a := arr.(array.ListLike)
	values, err := f.elem(a.ListValues())
	if err != nil {
		return nil, err
	}
	return func(b []byte, i int) []byte {
		start, end := a.ValueOffsets(i)
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',', ' ')
			}
			b = values(b, int(j))
		}
		return append(b, ']')
	}, nil
}

func walkStruct(f *form, arr arrow.Array, _ bool) (appendFunc, error) {
	a := arr.(*array.Struct)
	st := a.DataType().(*arrow.StructType)
	fields := make([]appendFunc, a.NumField())
	keys := make([][]byte, a.NumField()) // each field's separator, name and ": "
	for k := range fields {
		var err error
		if fields[k], err = f.elem(a.Field(k)); err != nil {
			return nil, err
		}
		if k > 0 {
			keys[k] = append(keys[k], ',', ' ')
		}
		keys[k] = append(f.name(keys[k], st.Field(k).Name), ':', ' ')
	}
	return func(b []byte, i int) []byte {
		b = append(b, '{')
		for k, field := range fields {
			b = append(b, keys[k]...)
			b = field(b, i)
		}
		return append(b, '}')
	}, nil
}

func walkMap(f *form, arr arrow.Array, _ bool) (appendFunc, error) {
	a := arr.(*array.Map)
	keys, err := f.mapKey(a.Keys())
	if err != nil {
		return nil, err
	}
	items, err := f.elem(a.Items())
	if err != nil {
		return nil, err
	}
	sep := f.mapSep
	return func(b []byte, i int) []byte {
		start, end := a.ValueOffsets(i)
		b = append(b, '{')
		for j := int(start); j < int(end); j++ {
			if j > int(start) {
				b = append(b, ',', ' ')
			}
			b = keys(b, j)
			b = append(b, sep...)
			b = items(b, j)
		}
		return append(b, '}')
	}, nil
}

// mapKey returns the writer of a MAP's keys. In JSON a key is a string
// holding the key's text ("null" for a NULL key, which DuckDB forbids
// anyway).
func (f *form) mapKey(keys arrow.Array) (appendFunc, error) {
	if !f.json {
		return f.elem(keys)
	}
	inner, err := f.build(keys, true)
	if err != nil {
		return nil, err
	}
	var scratch []byte
	return func(b []byte, j int) []byte {
		if keys.IsNull(j) {
			return append(b, `"null"`...)
		}
		scratch = inner(scratch[:0], j)
		if len(scratch) > 0 && scratch[0] == '"' {
			return append(b, scratch...)
		}
		return appendJSONString(b, scratch)
	}, nil
}

// walkUnion writes the value of a UNION's member: as DuckDB's text does,
// the member's value alone, or in JSON, as to_json does, an object of
// one member, {"tag": value}.
func walkUnion(f *form, arr arrow.Array, elem bool) (appendFunc, error) {
	a := arr.(array.Union)
	members := make([]appendFunc, a.NumFields())
	tags := make([][]byte, a.NumFields()) // {"tag":  in JSON
	for k := range members {
		var err error
		if members[k], err = f.member(a.Field(k), elem); err != nil {
			return nil, err
		}
		if f.json {
			tags[k] = append(f.name([]byte{'{'}, a.UnionType().Fields()[k].Name), ':', ' ')
		}
	}
	index := func(i int) int { return i }
	if d, ok := a.(*array.DenseUnion); ok {
		index = func(i int) int { return int(d.ValueOffset(i)) }
	}
	return func(b []byte, i int) []byte {
		k := a.ChildID(i)
		if !f.json {
			return members[k](b, index(i))
		}
		b = append(b, tags[k]...)
		b = members[k](b, index(i))
		return append(b, '}')
	}, nil
}

// walkDictionary writes a dictionary-encoded value (a DuckDB ENUM) as the
// dictionary's value.
func walkDictionary(f *form, arr arrow.Array, elem bool) (appendFunc, error) {
	a := arr.(*array.Dictionary)
	values, err := f.member(a.Dictionary(), elem)
	if err != nil {
		return nil, err
	}
	return func(b []byte, i int) []byte { return values(b, a.GetValueIndex(i)) }, nil
}

// duckLeaf writes a leaf as DuckDB's text; as an element, quoted when
// DuckDB would quote it.
func duckLeaf(t *typeInfo, arr arrow.Array, elem bool) appendFunc {
	text := t.duck(arr)
	if !elem {
		return text
	}
	var scratch []byte
	return func(b []byte, i int) []byte {
		scratch = text(scratch[:0], i)
		if needsQuotes(scratch) {
			return appendQuoted(b, scratch)
		}
		return append(b, scratch...)
	}
}

// jsonLeaf writes a leaf as JSON, as its table entry says.
func jsonLeaf(t *typeInfo, arr arrow.Array, _ bool) appendFunc {
	text := t.duck(arr)
	switch t.json {
	case jsonLiteral:
		return text
	case jsonNumber:
		return func(b []byte, i int) []byte {
			mark := len(b)
			b = text(b, i)
			switch string(b[mark:]) {
			case "nan":
				return append(b[:mark], `"nan"`...)
			case "inf":
				return append(b[:mark], `"inf"`...)
			case "-inf":
				return append(b[:mark], `"-inf"`...)
			}
			return b
		}
	}
	var scratch []byte
	return func(b []byte, i int) []byte {
		scratch = text(scratch[:0], i)
		return appendJSONString(b, scratch)
	}
}
