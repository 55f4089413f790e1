package convert

import (
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// enumColumn turns an ENUM vector into plain utf8 strings. DuckDB would
// export a dictionary array; the Flight SQL JDBC driver cannot read those
// (it returns the codes), while every client reads utf8.
type enumColumn struct {
	*stringColumn
	dict  [][]byte
	width int // bytes per code: 1, 2 or 4
}

func newEnumColumn(mem, gcMem memory.Allocator, lt duckdb.LogicalType, capRows int) *enumColumn {
	n := int(duckdb.EnumDictionarySize(lt))
	dict := make([][]byte, n)
	for i := range dict {
		dict[i] = []byte(strings.Clone(duckdb.EnumDictionaryValue(lt, duckdb.IdxT(i))))
	}
	width := 4
	switch duckdb.EnumInternalType(lt) {
	case duckdb.TypeUTinyInt:
		width = 1
	case duckdb.TypeUSmallInt:
		width = 2
	}
	return &enumColumn{stringColumn: newStringColumn(mem, gcMem, arrow.BinaryTypes.String, capRows), dict: dict, width: width}
}

// value is row i's string, or nil when it is NULL.
func (c *enumColumn) value(mask, data unsafe.Pointer, i int) []byte {
	if !rowValid(mask, i) {
		return nil
	}
	var code int
	switch c.width {
	case 1:
		code = int(*(*uint8)(unsafe.Add(data, i)))
	case 2:
		code = int(*(*uint16)(unsafe.Add(data, 2*i)))
	default:
		code = int(*(*uint32)(unsafe.Add(data, 4*i)))
	}
	if code < len(c.dict) {
		return c.dict[code]
	}
	return nil
}

func (c *enumColumn) varBytes(vec duckdb.Vector, from, n int) int {
	mask, data := duckdb.VectorGetValidity(vec), duckdb.VectorGetData(vec)
	total := 0
	for i := range n {
		total += len(c.value(mask, data, from+i))
	}
	return total
}

func (c *enumColumn) rowBytes(vec duckdb.Vector, from, n int, per []int) {
	mask, data := duckdb.VectorGetValidity(vec), duckdb.VectorGetData(vec)
	for i := range n {
		per[i] += len(c.value(mask, data, from+i))
	}
}

func (c *enumColumn) add(vec duckdb.Vector, from, n, at, _ int) {
	c.start()
	offs := c.offsetsSlice()
	mask, data := duckdb.VectorGetValidity(vec), duckdb.VectorGetData(vec)
	for i := range n {
		c.appendBytes(c.value(mask, data, from+i))
		offs[at+i+1] = int32(c.size)
	}
	c.validity.add(vec, from, n, at)
}

// enumAsString rewrites ENUM fields (dictionary-encoded in DuckDB's Arrow
// mapping) of schema as plain utf8.
func enumAsString(schema *arrow.Schema, types []duckdb.LogicalType) *arrow.Schema {
	fields := schema.Fields()
	changed := false
	for i, lt := range types {
		if duckdb.GetTypeId(lt) == duckdb.TypeEnum {
			fields[i].Type = arrow.BinaryTypes.String
			changed = true
		}
	}
	if !changed {
		return schema
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md)
}
