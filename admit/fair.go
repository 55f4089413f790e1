package admit

import (
	"container/list"
	"context"
)

// Within a lane, waiting queries are served fairly between classes: a
// class is an endpoint and a user (Track's), and a slot that comes free
// goes to the class holding the fewest of the lane's slots of its kind
// (open slots for new queries, run slots for paused ones), first come,
// first served within the class. So one class of slow results cannot
// take every slot. At 300 clients in quiver bench load, 24 open MySQL
// fetches (each several times the CPU per row of a Flight one, read by
// clients that parse text) held every bulk slot, with 240 Flight fetches
// queued behind them, and the fetch throughput fell to a fifth of its
// figure at 64 clients.

// classOf is the class a query asked for under ctx belongs to.
func classOf(ctx context.Context) string {
	if t := trackingOf(ctx); t != nil {
		return t.endpoint + "/" + t.user
	}
	return ""
}

// fairQueue holds waiters per class, each class FIFO.
type fairQueue struct {
	byClass map[string]*list.List
	n       int
	seq     uint64
}

// queued is a waiter's place in a fairQueue.
type queued struct {
	w   *waiter
	seq uint64 // arrival order across classes
}

func (q *fairQueue) Len() int { return q.n }

// push queues w at the back of its class, and returns its place.
func (q *fairQueue) push(w *waiter) *list.Element {
	if q.byClass == nil {
		q.byClass = make(map[string]*list.List)
	}
	l := q.byClass[w.class]
	if l == nil {
		l = list.New()
		q.byClass[w.class] = l
	}
	q.seq++
	q.n++
	return l.PushBack(queued{w: w, seq: q.seq})
}

// remove takes w, at e, out of the queue.
func (q *fairQueue) remove(w *waiter, e *list.Element) {
	l := q.byClass[w.class]
	l.Remove(e)
	q.n--
	if l.Len() == 0 {
		delete(q.byClass, w.class)
	}
}

// pop removes and returns the waiter to serve next: the head of the class
// holding the fewest slots (held), the earliest arrival among equals.
func (q *fairQueue) pop(held func(class string) int) *waiter {
	var best *list.List
	var bestHeld int
	var bestSeq uint64
	for class, l := range q.byClass {
		h, seq := held(class), l.Front().Value.(queued).seq
		if best == nil || h < bestHeld || h == bestHeld && seq < bestSeq {
			best, bestHeld, bestSeq = l, h, seq
		}
	}
	if best == nil {
		return nil
	}
	w := best.Front().Value.(queued).w
	q.remove(w, best.Front())
	return w
}

// classCounts are a lane's slots held per class.
type classCounts map[string]int

func (m classCounts) get(class string) int { return m[class] }

func (m classCounts) add(class string, d int) {
	if v := m[class] + d; v != 0 {
		m[class] = v
	} else {
		delete(m, class)
	}
}
