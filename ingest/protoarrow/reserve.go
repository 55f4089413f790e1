package protoarrow

import "github.com/apache/arrow-go/v18/arrow/array"

// sized is a builder whose last batch size is remembered, so the next batch
// starts with that capacity instead of growing by doubling and copying.
type sized struct {
	b    array.Builder
	data dataBuilder // b, when it also has a variable-length data buffer
	n    int
	size int
}

// dataBuilder is a builder of variable-length values.
type dataBuilder interface {
	DataLen() int
	ReserveData(int)
}

// collectBuilders lists every builder the plan under n appends to.
func (n *msgNode) collectBuilders(out []sized) []sized {
	for _, fn := range n.fields {
		if fn.list != nil {
			out = append(out, newSized(fn.list))
		}
		out = append(out, newSized(fn.b))
		if fn.child != nil && (fn.kind == kindMessage || fn.card == cardMap) {
			out = fn.child.collectBuilders(out)
		}
	}
	return out
}

// newSized wraps b.
func newSized(b array.Builder) sized {
	s := sized{b: b}
	s.data, _ = b.(dataBuilder)
	return s
}

// remember records the length of every builder before a flush.
func remember(bs []sized) {
	for i := range bs {
		s := &bs[i]
		s.n = s.b.Len()
		if s.data != nil {
			s.size = s.data.DataLen()
		}
	}
}

// reserve gives every builder the capacity remember recorded.
func reserve(bs []sized) {
	for i := range bs {
		s := &bs[i]
		s.b.Reserve(s.n)
		if s.data != nil {
			s.data.ReserveData(s.size)
		}
	}
}
