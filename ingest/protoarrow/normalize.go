package protoarrow

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// normalizer writes the flat projection of WithNormalizer from the frames
// that Decoder.Append parsed, so a message is parsed once for both batches.
type normalizer struct {
	schema *arrow.Schema
	rb     *array.RecordBuilder
	steps  []fanStep // the chain of fan-outs, outermost first
	cols   []normCol
	rows   int
	sized  []sized // builders presized to the last batch

	cur    []*frame // cur[k]: the element being expanded at fan-out depth k; cur[0] is the message
	elem   *list    // the list of the last step when it holds leaves
	elemAt int      // the element of elem being written
}

// fanStep is one repeated field or map that the projection fans out over.
type fanStep struct {
	path string     // the path up to this field, such as "items[].deals[]"
	hops []hop      // singular message fields from the previous depth's frame
	idx  int        // slot of the repeated field
	fn   *fieldNode // the repeated field
}

// hop is a singular message field on a path.
type hop struct {
	idx int // its slot
	fn  *fieldNode
}

// normCol is one output column.
type normCol struct {
	level int   // fan-out depth its path starts from
	hops  []hop // singular message fields from cur[level]
	idx   int   // slot of the leaf
	leaf  *fieldNode
	elem  bool // the leaf is the element of the last fan-out (tags[])
	b     array.Builder
}

// newNormalizer resolves spec against the plan rooted at root and builds
// the output schema and builder.
func newNormalizer(root *msgNode, spec string, mem memory.Allocator) (*normalizer, error) {
	paths, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	z := &normalizer{}
	var chainFrom string // the path whose fan-outs are the longest chain so far
	fields := make([]arrow.Field, 0, len(paths))
	names := make(map[string]string, len(paths))
	for _, p := range paths {
		col, steps, err := resolvePath(root, p)
		if err != nil {
			return nil, err
		}
		short, long := steps, z.steps
		if len(short) > len(long) {
			short, long = long, short
		}
		for k := range short {
			if short[k].path != long[k].path {
				return nil, fmt.Errorf("%w: paths %q and %q fan out over different repeated fields (%s, %s); "+
					"only one chain of nested repeated fields is supported, not a cross product",
					ErrSpec, chainFrom, p.text, z.steps[k].path, steps[k].path)
			}
		}
		if len(steps) > len(z.steps) {
			z.steps, chainFrom = steps, p.text
		}

		name := p.alias
		if name == "" {
			name = strings.ReplaceAll(strings.ReplaceAll(p.text, "[]", ""), ".", "_")
		}
		if prev, dup := names[name]; dup {
			return nil, fmt.Errorf("%w: paths %q and %q are both named %q; rename one with AS", ErrSpec, prev, p.text, name)
		}
		names[name] = p.text
		z.cols = append(z.cols, col)
		fields = append(fields, arrow.Field{Name: name, Type: col.leaf.leafArrowType(), Nullable: true})
	}
	z.cur = make([]*frame, len(z.steps)+1)
	z.schema = arrow.NewSchema(fields, nil)
	z.rb = array.NewRecordBuilder(mem, z.schema)
	for i := range z.cols {
		z.cols[i].b = z.rb.Field(i)
		z.sized = append(z.sized, newSized(z.cols[i].b))
	}
	return z, nil
}

// resolvePath follows p through the plan and returns its column and the
// fan-outs on its way.
func resolvePath(root *msgNode, p pathSpec) (normCol, []fanStep, error) {
	n := root
	var (
		steps  []fanStep
		hops   []hop
		prefix string
	)
	for j, seg := range p.segs {
		last := j == len(p.segs)-1
		i, ok := n.byName[seg.name]
		if !ok {
			return normCol{}, nil, fmt.Errorf("%w: path %q: unknown field %q; fields here are %s",
				ErrSpec, p.text, seg.name, n.fieldNames())
		}
		fn := n.fields[i]
		if prefix != "" {
			prefix += "."
		}
		prefix += seg.name
		if seg.fan {
			prefix += "[]"
		}

		if fn.card != cardSingle {
			if !seg.fan {
				return normCol{}, nil, fmt.Errorf("%w: path %q: field %q is repeated; write %s[] to fan out over it",
					ErrSpec, p.text, seg.name, seg.name)
			}
			steps = append(steps, fanStep{path: prefix, hops: hops, idx: i, fn: fn})
			hops = nil
			if fn.kind == kindMessage {
				if last {
					return normCol{}, nil, fmt.Errorf("%w: path %q ends at repeated message %q; name a field inside it",
						ErrSpec, p.text, seg.name)
				}
				n = fn.child
				continue
			}
			if !last {
				return normCol{}, nil, fmt.Errorf("%w: path %q: %q is a list of %s values and has no fields",
					ErrSpec, p.text, seg.name, fn.leafArrowType())
			}
			return normCol{level: len(steps), leaf: fn, elem: true}, steps, nil
		}

		if seg.fan {
			return normCol{}, nil, fmt.Errorf("%w: path %q: field %q is not repeated; drop the []", ErrSpec, p.text, seg.name)
		}
		if fn.kind == kindMessage {
			if last {
				return normCol{}, nil, fmt.Errorf("%w: path %q ends at message field %q; name a field inside it",
					ErrSpec, p.text, seg.name)
			}
			hops = append(hops, hop{idx: i, fn: fn})
			n = fn.child
			continue
		}
		if !last {
			return normCol{}, nil, fmt.Errorf("%w: path %q: field %q is a %s value and has no fields",
				ErrSpec, p.text, seg.name, fn.leafArrowType())
		}
		return normCol{level: len(steps), hops: hops, idx: i, leaf: fn}, steps, nil
	}
	return normCol{}, nil, fmt.Errorf("%w: empty path", ErrSpec)
}

// fieldNames lists n's fields for error messages.
func (n *msgNode) fieldNames() string {
	names := make([]string, len(n.fields))
	for i, fn := range n.fields {
		names[i] = fn.name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// leafArrowType returns the Arrow type of one value of a leaf field.
func (fn *fieldNode) leafArrowType() arrow.DataType {
	if fn.kind == kindWrapper {
		return leafType(fn.child.fields[0].kind)
	}
	return leafType(fn.kind)
}

// emit appends the normalized rows of the message parsed into root.
func (z *normalizer) emit(root *frame) {
	z.cur[0] = root
	z.descend(0)
}

// descend expands fan-out depth level, writing one row per combination of
// elements along the chain.
func (z *normalizer) descend(level int) {
	if level == len(z.steps) {
		z.row()
		return
	}
	st := &z.steps[level]
	f := follow(z.cur[level], st.hops)
	if f == nil || !f.slots[st.idx].set {
		return
	}
	l := &f.lists[st.fn.li]
	if st.fn.kind != kindMessage {
		z.elem = l
		for e, n := 0, st.fn.listLen(l); e < n; e++ {
			z.elemAt = e
			z.row()
		}
		return
	}
	for _, kid := range l.kids {
		if !kid.skip {
			z.cur[level+1] = kid
			z.descend(level + 1)
		}
	}
}

// row appends one output row from the current elements.
func (z *normalizer) row() {
	for i := range z.cols {
		c := &z.cols[i]
		if c.elem {
			c.leaf.appendElem(c.b, z.elem, z.elemAt)
			continue
		}
		f := follow(z.cur[c.level], c.hops)
		if f == nil {
			c.b.AppendNull()
			continue
		}
		c.leaf.appendLeaf(c.b, &f.slots[c.idx])
	}
	z.rows++
}

// follow walks singular message fields from f; it returns nil when one of
// them is absent and null, and walks into the default instance when one is
// absent without presence (a map value).
func follow(f *frame, hops []hop) *frame {
	for _, h := range hops {
		s := &f.slots[h.idx]
		switch {
		case s.set:
			f = s.kid
		case h.fn.presence:
			return nil
		default:
			f = h.fn.child.empty
		}
	}
	return f
}
