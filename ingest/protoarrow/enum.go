package protoarrow

import (
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxDenseEnum is the largest enum number looked up through a slice.
const maxDenseEnum = 1024

// enumNames maps enum numbers to value names, kept as bytes so appending
// them to a string builder does not allocate.
type enumNames struct {
	dense  [][]byte // by number, for 0 <= number < len(dense); nil when unknown
	sparse map[int32][]byte
	zero   []byte // name of the field's default value
}

// newEnumNames indexes the values of fd's enum. With aliases, the first
// declared name of a number wins.
func newEnumNames(fd protoreflect.FieldDescriptor) *enumNames {
	e := &enumNames{}
	vals := fd.Enum().Values()
	maxNum := int32(-1)
	for i := 0; i < vals.Len(); i++ {
		if n := int32(vals.Get(i).Number()); n >= 0 && n < maxDenseEnum && n > maxNum {
			maxNum = n
		}
	}
	e.dense = make([][]byte, maxNum+1)
	for i := 0; i < vals.Len(); i++ {
		v := vals.Get(i)
		n := int32(v.Number())
		name := []byte(v.Name())
		if n >= 0 && n < maxDenseEnum {
			if e.dense[n] == nil {
				e.dense[n] = name
			}
			continue
		}
		if e.sparse == nil {
			e.sparse = make(map[int32][]byte)
		}
		if _, ok := e.sparse[n]; !ok {
			e.sparse[n] = name
		}
	}
	if vals.Len() > 0 {
		zero := vals.Get(0).Number()
		if !fd.IsList() {
			zero = fd.Default().Enum()
		}
		e.zero = e.name(int32(zero), nil)
	}
	return e
}

// name returns the name of number n, or n in decimal appended to buf[:0]
// when the enum has no such value.
func (e *enumNames) name(n int32, buf []byte) []byte {
	if n >= 0 && int(n) < len(e.dense) {
		if s := e.dense[n]; s != nil {
			return s
		}
	} else if s, ok := e.sparse[n]; ok {
		return s
	}
	return strconv.AppendInt(buf[:0], int64(n), 10)
}
