package protoarrow

// maxPooledFrames bounds how many frames a node keeps between messages, so
// one huge message does not pin its scratch memory forever.
const maxPooledFrames = 1024

// frame is the scratch copy of one parsed message: Append fills a tree of
// frames from the wire, and only a message that parsed cleanly is copied
// from its frames into the builders. Values of bytes and strings alias the
// input message.
type frame struct {
	slots []slot // by field index
	lists []list // by fieldNode.li, for repeated fields and maps
	skip  bool   // a map entry whose key a later entry repeats
}

// slot holds the last value of a singular field, or marks that a repeated
// field's list is in use.
type slot struct {
	u   uint64 // varint or fixed-width bits
	b   []byte // string or bytes
	kid *frame // message value; occurrences merge into it
	set bool
}

// list holds the values of a repeated field or map in wire order.
type list struct {
	u    []uint64
	b    [][]byte
	kids []*frame
}

// val returns the slot's number, or 0 when the field was absent.
func (s *slot) val() uint64 {
	if s.set {
		return s.u
	}
	return 0
}

// get hands out a clean frame for n from its pool.
func (n *msgNode) get() *frame {
	if n.used < len(n.pool) {
		f := n.pool[n.used]
		n.used++
		f.reset()
		return f
	}
	f := &frame{slots: make([]slot, len(n.fields)), lists: make([]list, n.nLists)}
	n.pool = append(n.pool, f)
	n.used++
	return f
}

// release makes every pooled frame of n available again and drops the ones
// beyond maxPooledFrames.
func (n *msgNode) release() {
	n.used = 0
	if len(n.pool) > maxPooledFrames {
		clear(n.pool[maxPooledFrames:])
		n.pool = n.pool[:maxPooledFrames]
	}
}

// reset forgets the previous message's values and keeps list capacity.
func (f *frame) reset() {
	f.skip = false
	for i := range f.slots {
		f.slots[i].set = false
	}
	for i := range f.lists {
		l := &f.lists[i]
		l.u = l.u[:0]
		l.b = l.b[:0]
		l.kids = l.kids[:0]
	}
}
