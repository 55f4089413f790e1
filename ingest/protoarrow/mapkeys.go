package protoarrow

import (
	"bytes"
	"cmp"
	"slices"
)

// quadraticDedupe is the largest map, in entries, deduplicated by comparing
// every pair; larger maps are sorted.
const quadraticDedupe = 8

// dedupeMaps marks map entries whose key occurs again later in the same map,
// so that, as proto.Unmarshal does, the last entry of a key wins. It runs on
// the finished frame tree because merged message occurrences can add entries
// to a map after it was first seen. Arrow and DuckDB maps need unique keys.
func (n *msgNode) dedupeMaps(f *frame) {
	for i, fn := range n.fields {
		s := &f.slots[i]
		if !s.set || fn.child == nil || !fn.child.hasMaps && fn.card != cardMap {
			continue
		}
		switch fn.card {
		case cardMap:
			kids := f.lists[fn.li].kids
			fn.dedupe(kids)
			if fn.child.hasMaps {
				for _, kid := range kids {
					fn.child.dedupeMaps(kid)
				}
			}
		case cardList:
			for _, kid := range f.lists[fn.li].kids {
				fn.child.dedupeMaps(kid)
			}
		default:
			fn.child.dedupeMaps(s.kid)
		}
	}
}

// dedupe marks every entry of the map field fn whose key a later entry
// repeats.
func (fn *fieldNode) dedupe(entries []*frame) {
	if len(entries) < 2 {
		return
	}
	key := fn.child.fields[0]
	if len(entries) <= quadraticDedupe {
		for i, e := range entries[:len(entries)-1] {
			for _, later := range entries[i+1:] {
				if key.compareKeys(e, later) == 0 {
					e.skip = true
					break
				}
			}
		}
		return
	}
	order := fn.order[:0]
	for i := range entries {
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(a, b int32) int { return key.compareKeys(entries[a], entries[b]) })
	for k := 0; k+1 < len(order); k++ {
		if key.compareKeys(entries[order[k]], entries[order[k+1]]) == 0 {
			entries[order[k]].skip = true // the stable sort puts the last occurrence last
		}
	}
	fn.order = order
}

// compareKeys orders two map entries by their key, the field key of their
// entry message, compared as the decoded key value would be.
func (key *fieldNode) compareKeys(a, b *frame) int {
	sa, sb := &a.slots[0], &b.slots[0]
	switch key.kind {
	case kindString:
		var ba, bb []byte
		if sa.set {
			ba = sa.b
		}
		if sb.set {
			bb = sb.b
		}
		return bytes.Compare(ba, bb)
	case kindBool:
		return cmp.Compare(b2i(sa.val() != 0), b2i(sb.val() != 0))
	case kindInt32, kindSint32, kindSfixed32, kindUint32, kindFixed32:
		return cmp.Compare(uint32(sa.val()), uint32(sb.val()))
	default:
		return cmp.Compare(sa.val(), sb.val())
	}
}

// b2i converts a bool to 0 or 1.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
