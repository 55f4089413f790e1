package admit

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// Key is what a Classifier knows a query by: its SQL text, and the scope
// its unqualified names resolve in, the session's default catalog and
// schema ("" for the server's). The same text in another scope may read
// other tables, so it is another query to the classifier.
type Key struct{ Scope, SQL string }

// Classifier picks a query's lane: from what the same SQL text in the
// same scope (see Key) did the last time it ran, else from what SQL of
// the same shape in that scope did (see Shape), else from DuckDB's plan
// estimate, else Bulk. Its methods are safe for concurrent use.
type Classifier struct {
	// SmallRows is the most rows a small query returns (estimated, or
	// seen). Default 10,000.
	SmallRows int64
	// SmallScan is the most rows a small query's plan reads from its
	// tables, as DuckDB estimates them. Default 5,000,000: an aggregate
	// over that many rows takes DuckDB a few milliseconds.
	SmallScan int64
	// SmallTime is the longest a small query held its run slot. Default
	// 250 ms.
	SmallTime time.Duration
	// Planners is how many plans (EXPLAINs) may run at once; the rest
	// wait. Default: the CPUs Go may use, at least 2. Plans run before a
	// query is admitted, so unbounded, a thousand clients that send a
	// query at once planned it at once: in quiver-bench load, 130 MB of
	// the server's heap at that moment was plans being read.
	Planners int
	// Shape, when set, returns sql with its literal values taken out, so
	// that the same query with other values (a point lookup by another
	// id) has the same shape; ok is false when it cannot tell. A shape
	// every run of which so far was small is small without a plan; one
	// that ran bulk even once goes by its plan from then on.
	Shape func(sql string) (shape string, ok bool)
	// Parse, when set, returns DuckDB's syntax tree of sql
	// (json_serialize_sql). A statement with a recursive CTE is bulk,
	// whatever its plan estimates or its runs so far did (see blind.go).
	Parse func(ctx context.Context, sql string) (*duckdbsql.Tree, error)

	mu     sync.Mutex
	seen   map[Key]Lane
	shapes map[Key]shapeRuns // by scope and shape
	// blind holds, by blindKey, whether a statement's cost is one no
	// estimate sees (blind.go).
	blind    map[Key]bool
	planSem  chan struct{}
	planning map[Key]*planCall // plans running
}

// planCall is one plan being made, which queries of the same key that
// arrive meanwhile wait for instead of planning it again.
type planCall struct {
	done  chan struct{} // closed when roots and err are set
	roots []duckdbsql.Operator
	err   error
}

// shapeRuns is what the runs of one shape did.
type shapeRuns struct {
	small int  // runs that were small
	bulk  bool // a run was bulk
}

// shapeRunsNeeded is how many small runs, and none bulk, make a shape
// small without a plan.
const shapeRunsNeeded = 2

// maxSeen bounds the keys remembered; past it, an arbitrary one is
// forgotten for each new one.
const maxSeen = 8192

func (c *Classifier) smallRows() int64 {
	if c.SmallRows > 0 {
		return c.SmallRows
	}
	return 10_000
}

func (c *Classifier) smallScan() int64 {
	if c.SmallScan > 0 {
		return c.SmallScan
	}
	return 5_000_000
}

func (c *Classifier) smallTime() time.Duration {
	if c.SmallTime > 0 {
		return c.SmallTime
	}
	return 250 * time.Millisecond
}

// Known returns k's lane when the classifier has seen k run, or small
// when every run of its shape in its scope so far was small (see Shape);
// bulk for a statement it found blind (see Parse).
func (c *Classifier) Known(k Key) (Lane, bool) {
	if c == nil {
		return Bulk, false
	}
	bk := c.blindKey(k)
	c.mu.Lock()
	blind, checked := c.blind[bk]
	l, ok := c.seen[k]
	c.mu.Unlock()
	if checked && blind {
		classified.WithLabelValues(Bulk.String(), "blind").Inc()
		return Bulk, true
	}
	if ok {
		classified.WithLabelValues(l.String(), "history").Inc()
		return l, true
	}
	if c.Shape == nil {
		return Bulk, false
	}
	shape, ok := c.Shape(k.SQL)
	if !ok {
		return Bulk, false
	}
	c.mu.Lock()
	r := c.shapes[Key{k.Scope, shape}]
	c.mu.Unlock()
	if r.bulk || r.small < shapeRunsNeeded {
		return Bulk, false
	}
	classified.WithLabelValues(Small.String(), "shape").Inc()
	return Small, true
}

// planSlot waits for a turn to plan; ok is false when ctx ended first.
func (c *Classifier) planSlot(ctx context.Context) (release func(), ok bool) {
	c.mu.Lock()
	if c.planSem == nil {
		n := c.Planners
		if n <= 0 {
			n = max(2, runtime.GOMAXPROCS(0))
		}
		c.planSem = make(chan struct{}, n)
	}
	sem := c.planSem
	c.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, true
	case <-ctx.Done():
		return nil, false
	}
}

// Lane returns k's lane. explain, when not nil, returns DuckDB's
// EXPLAIN (FORMAT json) of k.SQL; it is called only for a key not seen
// before, and an error from it (a statement with parameters cannot be
// explained) leaves the query in the bulk lane until it has run once. So
// does a plan that reads files (readsFiles), whose estimate may be far
// too small. At most Planners plans run at once; a query whose ctx ends
// while it waits to be planned goes in the bulk lane.
//
// A statement whose cost no estimate sees (blind.go) is bulk: one with a
// recursive CTE, from its syntax tree (Parse) or its plan, whatever its
// history; and one whose plan pairs more than SmallScan rows in a cross
// product or nested-loop join.
func (c *Classifier) Lane(ctx context.Context, k Key, explain func() ([]byte, error)) Lane {
	if c == nil {
		return Bulk
	}
	c.checkBlind(ctx, k)
	if l, ok := c.Known(k); ok {
		return l
	}
	if explain != nil {
		if roots, err := c.plan(ctx, k, explain); err == nil {
			if recursivePlan(roots) {
				c.setBlind(k, true)
				classified.WithLabelValues(Bulk.String(), "blind").Inc()
				return Bulk
			}
			out, scan, ok := estimate(roots)
			widest, wok := widestStep(&roots[0])
			if ok && wok {
				l := Bulk
				if out <= c.smallRows() && scan <= c.smallScan() && widest <= c.smallScan() && !readsFiles(roots) {
					l = Small
				}
				classified.WithLabelValues(l.String(), "plan").Inc()
				return l
			}
		}
	}
	classified.WithLabelValues(Bulk.String(), "unknown").Inc()
	return Bulk
}

// Observe records what a run of k did: the rows it returned and the
// time it held a run slot. The next run of the same key takes its lane
// from it. A key without SQL records nothing.
func (c *Classifier) Observe(k Key, rows int64, ran time.Duration) {
	if c == nil || k.SQL == "" {
		return
	}
	l := Bulk
	if rows <= c.smallRows() && ran <= c.smallTime() {
		l = Small
	}
	shape, shaped := "", false
	if c.Shape != nil {
		shape, shaped = c.Shape(k.SQL)
	}
	bk := c.blindKey(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blind[bk] {
		l = Bulk // its next run may recurse deeper
	}
	if c.seen == nil {
		c.seen = map[Key]Lane{}
	}
	remember(c.seen, k, l)
	if !shaped {
		return
	}
	if c.shapes == nil {
		c.shapes = map[Key]shapeRuns{}
	}
	sk := Key{k.Scope, shape}
	r := c.shapes[sk]
	if l == Bulk {
		r.bulk = true
	} else {
		r.small++
	}
	remember(c.shapes, sk, r)
}

// blindKey is what blindness is remembered by: a statement's shape, or
// its text, in no scope (a recursive CTE is one in any scope, and with
// any values).
func (c *Classifier) blindKey(k Key) Key {
	if c.Shape != nil {
		if shape, ok := c.Shape(k.SQL); ok {
			return Key{SQL: shape}
		}
	}
	return Key{SQL: k.SQL}
}

// checkBlind reads k's syntax tree (Parse) for a recursive CTE, once per
// shape. A tree DuckDB cannot give (a statement other than a SELECT)
// leaves the plan to tell, and is remembered as not blind by its tree
// too: asking again each time cost a prepared single-row INSERT 14% of
// the server's CPU.
func (c *Classifier) checkBlind(ctx context.Context, k Key) {
	if c.Parse == nil {
		return
	}
	bk := c.blindKey(k)
	c.mu.Lock()
	_, checked := c.blind[bk]
	c.mu.Unlock()
	if checked {
		return
	}
	tree, err := c.Parse(ctx, k.SQL)
	var notSelect *duckdbsql.PlanError
	switch {
	case errors.As(err, &notSelect):
		c.setBlind(k, false)
	case err == nil:
		c.setBlind(k, tree.RecursiveCTE())
	}
}

// setBlind records whether k's cost is blind; once blind, its history and
// its shape's are bulk.
func (c *Classifier) setBlind(k Key, blind bool) {
	bk := c.blindKey(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blind == nil {
		c.blind = map[Key]bool{}
	}
	if c.blind[bk] {
		return
	}
	remember(c.blind, bk, blind)
	if !blind {
		return
	}
	if _, ok := c.seen[k]; ok {
		c.seen[k] = Bulk
	}
	if c.Shape != nil {
		if shape, ok := c.Shape(k.SQL); ok {
			sk := Key{k.Scope, shape}
			if r, ok := c.shapes[sk]; ok {
				r.bulk = true
				c.shapes[sk] = r
			}
		}
	}
}

// remember sets m[k] = v, first forgetting an arbitrary key when k is new
// and m holds maxSeen.
func remember[V any](m map[Key]V, k Key, v V) {
	if _, ok := m[k]; !ok && len(m) >= maxSeen {
		for old := range m {
			delete(m, old)
			break
		}
	}
	m[k] = v
}

// plan returns k's plan. Queries of the same key that arrive
// while it is being planned share that plan: after a restart, the
// thousand clients of quiver-bench load sent the same fetch within a
// second or two, and each was planned, since none had run yet. Each
// plan runs on its own query's goroutine and connection (explain), so a
// query that shares another's plan waits for it only as long as its own
// ctx allows, and plans by itself if that plan failed.
func (c *Classifier) plan(ctx context.Context, k Key, explain func() ([]byte, error)) ([]duckdbsql.Operator, error) {
	c.mu.Lock()
	if call, ok := c.planning[k]; ok {
		c.mu.Unlock()
		select {
		case <-call.done:
			if call.err == nil {
				return call.roots, nil
			}
			return c.planOwn(ctx, explain)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.planning == nil {
		c.planning = map[Key]*planCall{}
	}
	call := &planCall{done: make(chan struct{})}
	c.planning[k] = call
	c.mu.Unlock()
	call.roots, call.err = c.planOwn(ctx, explain)
	c.mu.Lock()
	delete(c.planning, k)
	c.mu.Unlock()
	close(call.done)
	return call.roots, call.err
}

// planOwn runs explain in its turn (see Planners) and reads its plan.
func (c *Classifier) planOwn(ctx context.Context, explain func() ([]byte, error)) ([]duckdbsql.Operator, error) {
	release, ok := c.planSlot(ctx)
	if !ok {
		return nil, ctx.Err()
	}
	defer release()
	return explainPlan(explain)
}

// explainPlan runs explain and reads its plan's operators.
func explainPlan(explain func() ([]byte, error)) ([]duckdbsql.Operator, error) {
	plan, err := explain()
	if err != nil {
		return nil, err
	}
	return duckdbsql.ReadExplain(plan)
}

// estimate returns the rows a plan is estimated to return and to read
// from its sources (the sum of its leaves' estimates). ok is false when
// the plan does not say.
func estimate(roots []duckdbsql.Operator) (out, scan int64, ok bool) {
	if len(roots) == 0 {
		return 0, 0, false
	}
	out, ok = outRows(&roots[0])
	if !ok {
		return 0, 0, false
	}
	if scan, ok = scanRows(&roots[0]); !ok {
		return 0, 0, false
	}
	return out, scan, true
}

// outRows estimates the rows n returns.
func outRows(n *duckdbsql.Operator) (int64, bool) {
	switch n.Name {
	case "UNGROUPED_AGGREGATE", "SIMPLE_AGGREGATE", "INSERT", "DELETE", "UPDATE", "CREATE_TABLE_AS", "EMPTY_RESULT":
		return 1, true
	case "TOP_N", "LIMIT", "STREAMING_LIMIT":
		if top, ok := n.Info("Top"); ok {
			return top, true
		}
	case "UNION":
		var sum int64
		for i := range n.Children {
			r, ok := outRows(&n.Children[i])
			if !ok {
				return 0, false
			}
			sum += r
		}
		return sum, true
	}
	if est, ok := n.Info("Estimated Cardinality"); ok && est > 0 {
		return est, true
	}
	if len(n.Children) == 0 {
		return 0, false
	}
	// An operator without an estimate (ORDER_BY, a grouping, a limit
	// without a count) returns no more rows than its input.
	return outRows(&n.Children[0])
}

// scanRows sums the estimates of n's leaves.
func scanRows(n *duckdbsql.Operator) (int64, bool) {
	if len(n.Children) == 0 {
		switch n.Name {
		case "DUMMY_SCAN": // SELECT 42
			return 1, true
		case "EMPTY_RESULT":
			return 0, true
		}
		est, ok := n.Info("Estimated Cardinality")
		return est, ok
	}
	var sum int64
	for i := range n.Children {
		r, ok := scanRows(&n.Children[i])
		if !ok {
			return 0, false
		}
		sum += r
	}
	return sum, true
}

// readsFiles reports whether a plan reads files (READ_PARQUET,
// READ_CSV, READ_JSON and the like), such as a lake table's. DuckDB
// estimates such a scan from its first file alone, so a scan of many
// files can look small.
func readsFiles(nodes []duckdbsql.Operator) bool {
	for i := range nodes {
		if strings.HasPrefix(nodes[i].Name, "READ_") || readsFiles(nodes[i].Children) {
			return true
		}
	}
	return false
}
