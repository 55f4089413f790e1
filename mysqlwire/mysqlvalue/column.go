package mysqlvalue

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Column writes the values of one result column of one record batch. It
// keeps no state between rows but the scratch space of nested values, so
// it belongs to one goroutine at a time.
type Column struct {
	text   appendFunc
	binary binaryFunc
	// null tells a NULL of a column whose array has no validity of its
	// own: a UNION, whose NULL is a NULL of its member.
	null func(i int) bool
}

// NewColumn returns the writer of arr's values as a result column. With
// binary set they are written for the binary protocol (COM_STMT_EXECUTE),
// restricted to what vitess can re-encode there; otherwise for the text
// protocol.
func NewColumn(arr arrow.Array, binary bool) (Column, error) {
	for {
		ext, ok := arr.(array.ExtensionArray)
		if !ok {
			break
		}
		arr = ext.Storage()
	}
	t, err := typeOf(arr.DataType())
	if err != nil {
		return Column{}, err
	}
	if t.walk != nil {
		text, err := t.top.build(arr, false)
		return Column{text: text, null: unionNull(arr)}, err
	}
	c := Column{text: t.duck(arr)}
	if t.mysql != nil {
		c.text = t.mysql(arr)
	}
	if binary && t.binary != nil {
		c.binary = t.binary(arr)
	}
	return c, nil
}

// Append appends the value of row i, which is not null, to b. It returns
// false when the value must be sent as NULL instead: a date or time the
// binary protocol cannot carry, or a UNION whose member is NULL.
func (c Column) Append(b []byte, i int) ([]byte, bool) {
	if c.null != nil && c.null(i) {
		return b, false
	}
	if c.binary != nil {
		return c.binary(b, i)
	}
	return c.text(b, i), true
}

// AppendText appends DuckDB's text of row i of arr, which is not null, as
// its cast to VARCHAR prints it: LIST, STRUCT and MAP values as [..],
// {'k': v} and {k=v}.
func AppendText(b []byte, arr arrow.Array, i int) ([]byte, error) {
	text, err := duckText.build(arr, false)
	if err != nil {
		return b, fmt.Errorf("text of %s: %w", arr.DataType(), err)
	}
	return text(b, i), nil
}

// unionNull returns, for a UNION array, whether its row i is NULL, which
// Arrow keeps in the member's validity (the union has none); nil for any
// other array.
func unionNull(arr arrow.Array) func(i int) bool {
	u, ok := arr.(array.Union)
	if !ok {
		return nil
	}
	if d, ok := u.(*array.DenseUnion); ok {
		return func(i int) bool { return d.Field(d.ChildID(i)).IsNull(int(d.ValueOffset(i))) }
	}
	return func(i int) bool { return u.Field(u.ChildID(i)).IsNull(i) }
}
