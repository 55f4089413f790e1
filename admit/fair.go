package admit

import (
	"container/list"
	"context"
	"math"
	"time"
)

// Within a lane, waiting queries are served fairly between classes: a
// class is an endpoint and a user (Track's), first come, first served
// within the class. A run slot that comes free goes to the paused query
// of the class running the fewest of the lane's queries. A new query
// starts from the class that ran least recently (its run time, decaying
// by half every usageHalfLife), unless it holds half the lane's open
// results or more while another class waits. So one class of slow
// results cannot take every slot: at 300 clients in quiver-bench load,
// 24 open MySQL fetches (each several times the CPU per row of a Flight
// one, read by clients that parse text) once held every bulk slot, with
// 240 Flight fetches queued behind them, and the fetch throughput fell
// to a fifth of its figure at 64 clients. Nor can a class of short
// results starve a class of long ones: starting whichever class held the
// fewest open results did, once Flight fetches took tens of
// milliseconds, and MySQL fetches waited out the queue timeout at 64
// clients.

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
// that ranks lowest, the earliest arrival among equals.
func (q *fairQueue) pop(rank func(class string) float64) *waiter {
	var best *list.List
	var bestRank float64
	var bestSeq uint64
	for class, l := range q.byClass {
		r, seq := rank(class), l.Front().Value.(queued).seq
		if best == nil || r < bestRank || r == bestRank && seq < bestSeq {
			best, bestRank, bestSeq = l, r, seq
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

// rank is get for pop.
func (m classCounts) rank(class string) float64 { return float64(m[class]) }

// usageHalfLife is how fast a class's past run time stops counting
// against it.
const usageHalfLife = 5 * time.Second

// classUsage is a lane's run time per class, in seconds as of at,
// decaying with usageHalfLife.
type classUsage map[string]*decayed

type decayed struct {
	v  float64
	at time.Time
}

func (d *decayed) as(now time.Time) float64 {
	return d.v * math.Exp2(-now.Sub(d.at).Seconds()/usageHalfLife.Seconds())
}

// charge adds run time ran to class.
func (u classUsage) charge(class string, ran time.Duration, now time.Time) {
	d := u[class]
	if d == nil {
		if len(u) >= maxUsageClasses {
			u.prune(now)
		}
		d = &decayed{}
		u[class] = d
	}
	d.v, d.at = d.as(now)+ran.Seconds(), now
}

// of is class's run time, decayed to now.
func (u classUsage) of(class string, now time.Time) float64 {
	if d := u[class]; d != nil {
		return d.as(now)
	}
	return 0
}

// maxUsageClasses is how many classes a lane's usage holds before it
// forgets those whose run time has decayed to nothing.
const maxUsageClasses = 256

func (u classUsage) prune(now time.Time) {
	for class, d := range u {
		if d.as(now) < 1e-3 {
			delete(u, class)
		}
	}
}

func (m classCounts) add(class string, d int) {
	if v := m[class] + d; v != 0 {
		m[class] = v
	} else {
		delete(m, class)
	}
}
