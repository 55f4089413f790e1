package protoarrow

import (
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxDenseField is the largest field number looked up through a slice; larger
// numbers go through a map.
const maxDenseField = 4096

// card is a field's cardinality.
type card uint8

const (
	cardSingle card = iota
	cardList
	cardMap
)

// op selects the walker's handler for a field: cardinality and wire class.
type op uint8

const (
	opVarint op = iota
	opFixed32
	opFixed64
	opString // bytes that must be UTF-8
	opBytes
	opMessage // message, group, Timestamp or wrapper
	opListVarint
	opListFixed32
	opListFixed64
	opListString
	opListBytes
	opListMessage // also map entries
)

// msgNode is the plan for one message at one place in the schema tree. A
// message type used at two places gets two nodes, because each place has
// its own builders.
type msgNode struct {
	fields  []*fieldNode // declaration order, which is column order
	dense   []int32      // field number → index+1; 0 when unknown
	sparse  map[protowire.Number]int32
	byName  map[string]int // field name → index, for the normalizer
	nLists  int            // how many fields keep a list in a frame
	hasMaps bool           // a map field is in this message or below it

	pool  []*frame // frames reused across messages
	used  int      // frames handed out for the current message
	empty *frame   // never written: the default instance of the message
}

// fieldNode is the plan for one field: how to read it off the wire and which
// builders receive it.
type fieldNode struct {
	num      protowire.Number
	name     string
	op       op
	kind     kind
	card     card
	wire     protowire.Type // wire type of one unpacked value
	presence bool           // null, not zero, when absent
	li       int            // index into frame.lists for cardList and cardMap
	child    *msgNode       // message, group, Timestamp, wrapper or map entry
	secIdx   int            // Timestamp: slot of seconds in child
	nanoIdx  int            // Timestamp: slot of nanos in child
	enum     *enumNames
	numBuf   [20]byte // formats unknown enum numbers without allocating
	order    []int32  // map fields: scratch for deduplicating keys
	oneof    []int    // slots of the other members of its oneof

	b    array.Builder        // the value builder: column, list element or struct child
	st   *array.StructBuilder // b, for kindMessage
	list *array.ListBuilder   // for cardList
	mp   *array.MapBuilder    // for cardMap
}

// index returns the position of field num in n, or -1.
func (n *msgNode) index(num protowire.Number) int {
	if uint(num) < uint(len(n.dense)) {
		return int(n.dense[num]) - 1
	}
	if i, ok := n.sparse[num]; ok {
		return int(i)
	}
	return -1
}

// planner builds the plan tree of a descriptor that Schema accepted.
type planner struct {
	nodes []*msgNode // every node, so the decoder can reset their pools
}

// message returns the plan of md. Inside a map entry nothing has presence:
// an absent key or value is its zero value (for a message, its default
// instance), as in proto.
func (p *planner) message(md protoreflect.MessageDescriptor) *msgNode {
	n := &msgNode{byName: make(map[string]int)}
	p.nodes = append(p.nodes, n)
	fds := md.Fields()
	maxNum := protowire.Number(0)
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		fn := p.field(fd)
		if md.IsMapEntry() {
			fn.presence = false
		}
		if fn.card != cardSingle {
			fn.li = n.nLists
			n.nLists++
		}
		n.fields = append(n.fields, fn)
		n.byName[fn.name] = i
		if fn.card == cardMap || fn.child != nil && fn.child.hasMaps {
			n.hasMaps = true
		}
		if fn.num <= maxDenseField && fn.num > maxNum {
			maxNum = fn.num
		}
	}
	for _, fn := range n.fields {
		od := fds.ByNumber(fn.num).ContainingOneof()
		if od == nil || od.IsSynthetic() {
			continue
		}
		for j := 0; j < od.Fields().Len(); j++ {
			if other := od.Fields().Get(j); other.Number() != fn.num {
				fn.oneof = append(fn.oneof, n.byName[string(other.Name())])
			}
		}
	}
	n.empty = &frame{slots: make([]slot, len(n.fields)), lists: make([]list, n.nLists)}
	n.dense = make([]int32, maxNum+1)
	for i, fn := range n.fields {
		if fn.num <= maxDenseField {
			n.dense[fn.num] = int32(i + 1)
			continue
		}
		if n.sparse == nil {
			n.sparse = make(map[protowire.Number]int32)
		}
		n.sparse[fn.num] = int32(i)
	}
	return n
}

// field returns the plan of fd, with its children.
func (p *planner) field(fd protoreflect.FieldDescriptor) *fieldNode {
	fn := &fieldNode{
		num:      fd.Number(),
		name:     string(fd.Name()),
		kind:     classify(fd),
		wire:     wireType(fd),
		presence: nullWhenAbsent(fd),
	}
	switch {
	case fd.IsMap():
		fn.card = cardMap
	case fd.IsList():
		fn.card = cardList
	}
	switch fn.kind {
	case kindMessage, kindWrapper:
		fn.child = p.message(fd.Message())
	case kindTimestamp:
		fn.child = p.message(fd.Message())
		fn.secIdx = fn.child.index(1)
		fn.nanoIdx = fn.child.index(2)
	case kindEnum:
		fn.enum = newEnumNames(fd)
	}
	fn.op = opOf(fn)
	return fn
}

// opOf picks the walker handler of fn.
func opOf(fn *fieldNode) op {
	list := fn.card != cardSingle
	var o op
	switch fn.kind {
	case kindMessage, kindTimestamp, kindWrapper:
		o = opMessage
	case kindString:
		o = opString
	case kindBytes:
		o = opBytes
	default:
		switch fn.wire {
		case protowire.Fixed32Type:
			o = opFixed32
		case protowire.Fixed64Type:
			o = opFixed64
		default:
			o = opVarint
		}
	}
	if list {
		o += opListVarint
	}
	return o
}

// bind attaches the builders of n's columns, bs[i] for field i, to the plan.
func (n *msgNode) bind(bs []array.Builder) {
	for i, fn := range n.fields {
		switch fn.card {
		case cardMap:
			fn.mp = bs[i].(*array.MapBuilder)
			fn.b = fn.mp
			fn.child.bind([]array.Builder{fn.mp.KeyBuilder(), fn.mp.ItemBuilder()})
		case cardList:
			fn.list = bs[i].(*array.ListBuilder)
			fn.bindValue(fn.list.ValueBuilder())
		default:
			fn.bindValue(bs[i])
		}
	}
}

// bindValue attaches the builder of one value of fn.
func (fn *fieldNode) bindValue(b array.Builder) {
	fn.b = b
	if fn.kind != kindMessage {
		return
	}
	fn.st = b.(*array.StructBuilder)
	kids := make([]array.Builder, fn.st.NumField())
	for i := range kids {
		kids[i] = fn.st.FieldBuilder(i)
	}
	fn.child.bind(kids)
}
