package admit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// Plans as DuckDB 1.5.6 prints them for EXPLAIN (FORMAT json).
const (
	planScan  = `[{"name":"SEQ_SCAN","children":[],"extra_info":{"Table":"memory.main.t","Estimated Cardinality":"1000000"}}]`
	planPoint = `[{"name":"SEQ_SCAN","children":[],"extra_info":{"Filters":"id=5","Estimated Cardinality":"2"}}]`
	planCount = `[{"name":"UNGROUPED_AGGREGATE","children":[{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"1000000"}}],"extra_info":{"Aggregates":"count_star()"}}]`
	planGroup = `[{"name":"PROJECTION","children":[{"name":"ORDER_BY","children":[{"name":"PERFECT_HASH_GROUP_BY","children":[{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"200000"}}],"extra_info":{}}],"extra_info":{}}],"extra_info":{"Estimated Cardinality":"0"}}]`
	planTopN  = `[{"name":"TOP_N","children":[{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"1000000"}}],"extra_info":{"Top":"10"}}]`
	planLimit = `[{"name":"STREAMING_LIMIT","children":[{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"1000000"}}],"extra_info":{}}]`
	planUnion = `[{"name":"UNION","children":[{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"3"}},{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"4"}}],"extra_info":{}}]`
	planConst = `[{"name":"PROJECTION","children":[{"name":"DUMMY_SCAN","children":[],"extra_info":{}}],"extra_info":{"Estimated Cardinality":"1"}}]`
	planNoEst = `[{"name":"TABLE_FUNCTION","children":[],"extra_info":{}}]`
	planFiles = `[{"name":"UNGROUPED_AGGREGATE","children":[{"name":"READ_PARQUET","children":[],"extra_info":{"Estimated Cardinality":"6000"}}],"extra_info":{}}]`
	planJoin  = `[{"name":"HASH_JOIN","children":[{"name":"SEQ_SCAN","children":[],"extra_info":{"Estimated Cardinality":"3"}},{"name":"READ_PARQUET","children":[],"extra_info":{"Estimated Cardinality":"4"}}],"extra_info":{}}]`
)

// planEstimate is estimate over a plan's text; ok is false when it
// does not parse or does not say.
func planEstimate(plan []byte) (out, scan int64, ok bool) {
	roots, err := duckdbsql.ReadExplain(plan)
	if err != nil {
		return 0, 0, false
	}
	return estimate(roots)
}

// planReadsFiles is readsFiles over a plan's text.
func planReadsFiles(plan []byte) bool {
	roots, err := duckdbsql.ReadExplain(plan)
	return err == nil && readsFiles(roots)
}

func TestPlanEstimate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		plan      string
		out, scan int64
		ok        bool
	}{
		{"scan", planScan, 1_000_000, 1_000_000, true},
		{"point lookup", planPoint, 2, 2, true},
		{"count(*)", planCount, 1, 1_000_000, true},
		{"group by, order by", planGroup, 200_000, 200_000, true},
		{"top 10", planTopN, 10, 1_000_000, true},
		{"limit without a count", planLimit, 1_000_000, 1_000_000, true},
		{"union all", planUnion, 7, 7, true},
		{"SELECT 42", planConst, 1, 1, true},
		{"no estimate", planNoEst, 0, 0, false},
		{"not json", `EXPLAIN`, 0, 0, false},
		{"empty", `[]`, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, scan, ok := planEstimate([]byte(tc.plan))
			if out != tc.out || scan != tc.scan || ok != tc.ok {
				t.Errorf("planEstimate = %d, %d, %v; want %d, %d, %v", out, scan, ok, tc.out, tc.scan, tc.ok)
			}
		})
	}
}

func FuzzPlanEstimate(f *testing.F) {
	for _, p := range []string{planScan, planPoint, planCount, planGroup, planTopN, planLimit, planUnion, planConst, planNoEst} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, plan []byte) {
		out, scan, ok := planEstimate(plan)
		if !ok && (out != 0 || scan != 0) {
			t.Fatalf("not ok but %d, %d", out, scan)
		}
	})
}

func TestClassifier_Lane(t *testing.T) {
	explain := func(p string) func() ([]byte, error) {
		return func() ([]byte, error) { return []byte(p), nil }
	}
	c := &Classifier{}
	for _, tc := range []struct {
		name    string
		sql     string
		explain func() ([]byte, error)
		want    Lane
	}{
		{"point lookup", "SELECT * FROM t WHERE id = 5", explain(planPoint), Small},
		{"count over a million rows", "SELECT count(*) FROM t", explain(planCount), Small},
		{"full scan", "SELECT * FROM t", explain(planScan), Bulk},
		{"no plan", "SELECT * FROM t WHERE id = ?", nil, Bulk},
		{"plan without estimates", "SELECT * FROM f()", explain(planNoEst), Bulk},
		{"files, estimated from the first", "SELECT count(*) FROM lake.t", explain(planFiles), Bulk},
		{"a join with files", "SELECT * FROM t JOIN lake.u USING (id)", explain(planJoin), Bulk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Lane(context.Background(), Key{SQL: tc.sql}, tc.explain); got != tc.want {
				t.Errorf("Lane = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("history wins over the plan", func(t *testing.T) {
		const sql = "SELECT * FROM t WHERE id = ?"
		c.Observe(Key{SQL: sql}, 1, time.Millisecond)
		if got := c.Lane(context.Background(), Key{SQL: sql}, nil); got != Small {
			t.Errorf("after a 1-row run: %v, want small", got)
		}
		c.Observe(Key{SQL: sql}, 1, time.Second) // held its slot for a second
		if got := c.Lane(context.Background(), Key{SQL: sql}, explain(planPoint)); got != Bulk {
			t.Errorf("after a 1 s run: %v, want bulk", got)
		}
		c.Observe(Key{SQL: sql}, 1_000_000, time.Millisecond)
		if got := c.Lane(context.Background(), Key{SQL: sql}, nil); got != Bulk {
			t.Errorf("after a 1M-row run: %v, want bulk", got)
		}
	})
	t.Run("an empty text is not remembered", func(t *testing.T) {
		c := &Classifier{}
		c.Observe(Key{}, 1, time.Millisecond)
		if _, ok := c.Known(Key{}); ok || len(c.seen) != 0 {
			t.Errorf("remembered %d texts", len(c.seen))
		}
	})
	t.Run("history is bounded", func(t *testing.T) {
		c := &Classifier{}
		for i := range maxSeen + 10 {
			c.Observe(Key{SQL: string(rune(i))}, 1, 0)
		}
		if n := len(c.seen); n > maxSeen {
			t.Errorf("%d SQL texts remembered, want at most %d", n, maxSeen)
		}
	})
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1GB", 1e9, true},
		{"1.5GB", 1.5e9, true},
		{"512MB", 512e6, true},
		{"2GiB", 2 << 30, true},
		{" 768 MiB ", 768 << 20, true},
		{"1073741824", 1 << 30, true},
		{"1TB", 1e12, true},
		{"0", 0, false},
		{"-1GB", 0, false},
		{"100KB", 0, false}, // below 1MiB
		{"lots", 0, false},
		{"", 0, false},
	} {
		got, err := ParseBytes(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestSplitBudget(t *testing.T) {
	b := SplitBudget(1e9)
	if b.DuckDB+b.Go > b.Total {
		t.Errorf("%v: DuckDB and Go shares exceed the total", b)
	}
	if want := int(b.Go * 2 / 3 / PerResult); b.Open != want {
		t.Errorf("Open = %d, want %d", b.Open, want)
	}
	if small := SplitBudget(64 << 20); small.Open < 8 {
		t.Errorf("a small budget allows %d open results, want at least 8", small.Open)
	}
}

// TestReadsFiles finds a file reader anywhere in a plan.
func TestReadsFiles(t *testing.T) {
	for _, tc := range []struct {
		name, plan string
		want       bool
	}{
		{"point lookup", planPoint, false},
		{"group by", planGroup, false},
		{"union of tables", planUnion, false},
		{"SELECT 42", planConst, false},
		{"a table function", planNoEst, false},
		{"parquet files", planFiles, true},
		{"a table joined to files", planJoin, true},
		{"not json", `EXPLAIN`, false},
	} {
		if got := planReadsFiles([]byte(tc.plan)); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// At most Planners plans run at once, however many queries arrive
// together; one whose context ends while it waits goes in the bulk lane
// without being planned.
func TestClassifier_BoundsPlans(t *testing.T) {
	c := &Classifier{Planners: 2}
	var running, peak atomic.Int32
	gate := make(chan struct{})
	explain := func() ([]byte, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-gate
		return []byte(planPoint), nil
	}
	var wg sync.WaitGroup
	lanes := make([]Lane, 8)
	for i := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lanes[i] = c.Lane(context.Background(), Key{SQL: fmt.Sprintf("SELECT * FROM t WHERE id = %d", i)}, explain)
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for running.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// Two plans run; a query that gives up waiting is bulk, unplanned.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	planned := false
	if got := c.Lane(ctx, Key{SQL: "SELECT 1"}, func() ([]byte, error) { planned = true; return []byte(planPoint), nil }); got != Bulk || planned {
		t.Errorf("a query whose context ended while waiting: lane %v, planned %v; want bulk, not planned", got, planned)
	}
	close(gate)
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Errorf("%d plans ran at once, want 2", p)
	}
	for i, l := range lanes {
		if l != Small {
			t.Errorf("query %d: lane %v, want small from its plan", i, l)
		}
	}
}

// A shape whose runs were all small makes the same query with other
// values small without a plan; once a run of it is bulk, its queries go
// by their plan again.
func TestClassifier_Shape(t *testing.T) {
	digits := func(sql string) (string, bool) {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return '#'
			}
			return r
		}, sql), true
	}
	c := &Classifier{Shape: digits}
	planned := 0
	scan := func() ([]byte, error) { planned++; return []byte(planScan), nil }
	lookup := func(id int) Key { return Key{SQL: fmt.Sprintf("SELECT * FROM t WHERE id = %d", id)} }

	if got := c.Lane(context.Background(), lookup(1), scan); got != Bulk || planned != 1 {
		t.Fatalf("an unseen shape: lane %v after %d plans, want bulk from its plan", got, planned)
	}
	c.Observe(lookup(1), 1, time.Millisecond)
	if _, ok := c.Known(lookup(2)); ok {
		t.Fatal("a shape with one small run is known; want two")
	}
	c.Observe(lookup(2), 1, time.Millisecond)
	planned = 0
	if got := c.Lane(context.Background(), lookup(3), scan); got != Small || planned != 0 {
		t.Fatalf("a shape with two small runs: lane %v after %d plans, want small without a plan", got, planned)
	}
	// A run of the shape returns many rows: its queries are planned
	// again, and the exact SQL that ran small stays small.
	c.Observe(lookup(4), 1_000_000, time.Second)
	if got := c.Lane(context.Background(), lookup(5), scan); got != Bulk || planned != 1 {
		t.Fatalf("a shape that ran bulk: lane %v after %d plans, want bulk from its plan", got, planned)
	}
	c.Observe(lookup(6), 1, time.Millisecond)
	c.Observe(lookup(7), 1, time.Millisecond)
	if _, ok := c.Known(lookup(8)); ok {
		t.Fatal("a shape that ran bulk once is known small again")
	}
	if l, ok := c.Known(lookup(1)); !ok || l != Small {
		t.Fatalf("the exact SQL that ran small: %v, %v; want small", l, ok)
	}
	// No shape (it does not lex): only the exact SQL's history.
	none := &Classifier{Shape: func(string) (string, bool) { return "", false }}
	none.Observe(lookup(1), 1, time.Millisecond)
	none.Observe(lookup(2), 1, time.Millisecond)
	if _, ok := none.Known(lookup(3)); ok {
		t.Fatal("known from a shape that was not given")
	}
}

// The same SQL in another scope (the session's default catalog and
// schema) may read another table of the same name: what it did in one
// scope says nothing of the other, for its text or for its shape.
func TestClassifier_Scope(t *testing.T) {
	c := &Classifier{Shape: func(sql string) (string, bool) { return strings.TrimRight(sql, "0123456789"), true }}
	const fetch = "SELECT * FROM events"
	dev, prod := Key{Scope: "dev", SQL: fetch}, Key{Scope: "prod", SQL: fetch}
	c.Observe(dev, 10, time.Millisecond)
	if l, ok := c.Known(dev); !ok || l != Small {
		t.Fatalf("in the scope it ran in: %v, %v; want small", l, ok)
	}
	planned := 0
	scan := func() ([]byte, error) { planned++; return []byte(planScan), nil }
	if got := c.Lane(context.Background(), prod, scan); got != Bulk || planned != 1 {
		t.Fatalf("in another scope: lane %v after %d plans, want bulk from its own plan", got, planned)
	}
	c.Observe(prod, 5_000_000, 3*time.Second)
	if l, _ := c.Known(dev); l != Small {
		t.Errorf("a bulk run in another scope changed the lane here to %v", l)
	}
	lookup := func(scope string, id int) Key {
		return Key{Scope: scope, SQL: fmt.Sprintf("SELECT * FROM t WHERE id = %d", id)}
	}
	c.Observe(lookup("dev", 1), 1, time.Millisecond)
	c.Observe(lookup("dev", 2), 1, time.Millisecond)
	if l, ok := c.Known(lookup("dev", 3)); !ok || l != Small {
		t.Errorf("a shape with two small runs in its scope: %v, %v; want small", l, ok)
	}
	if _, ok := c.Known(lookup("prod", 3)); ok {
		t.Error("a shape known small in one scope is known in another")
	}
}

// TestClassifier_SharesPlans checks that queries of the same SQL text
// that arrive while it is being planned wait for that plan instead of
// planning it again, each only as long as its own context allows, and
// plan by themselves when the shared plan failed; other SQL plans apart.
func TestClassifier_SharesPlans(t *testing.T) {
	const fetch = "SELECT * FROM t LIMIT 1000000"
	c := &Classifier{Planners: 4}
	var plans atomic.Int32
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	blocked := func(plan string, err error) func() ([]byte, error) {
		return func() ([]byte, error) {
			plans.Add(1)
			started <- struct{}{}
			<-gate
			return []byte(plan), err
		}
	}
	unexpected := func() ([]byte, error) {
		plans.Add(1)
		return []byte(planPoint), nil
	}

	t.Run("shared", func(t *testing.T) {
		plans.Store(0)
		gate = make(chan struct{})
		lanes := make(chan Lane, 10)
		go func() { lanes <- c.Lane(context.Background(), Key{SQL: fetch}, blocked(planLimit, nil)) }()
		<-started
		var wg sync.WaitGroup
		for range 9 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lanes <- c.Lane(context.Background(), Key{SQL: fetch}, unexpected)
			}()
		}
		// One that gives up waiting: bulk, unplanned, while the plan runs.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if got := c.Lane(ctx, Key{SQL: fetch}, unexpected); got != Bulk {
			t.Errorf("a waiter whose context ended: lane %v, want bulk", got)
		}
		// Other SQL does not wait for it.
		if got := c.Lane(context.Background(), Key{SQL: "SELECT * FROM t WHERE id = 5"}, func() ([]byte, error) { return []byte(planPoint), nil }); got != Small {
			t.Errorf("other SQL while the plan runs: lane %v, want small", got)
		}
		// Nor does the same SQL in another scope, which may read another
		// table of the same name.
		if got := c.Lane(context.Background(), Key{Scope: "dev.main", SQL: fetch}, func() ([]byte, error) { return []byte(planPoint), nil }); got != Small {
			t.Errorf("the same SQL in another scope while the plan runs: lane %v, want small from its own plan", got)
		}
		close(gate)
		wg.Wait()
		for range 10 {
			if l := <-lanes; l != Bulk {
				t.Errorf("lane %v, want bulk from the shared plan (LIMIT 1000000)", l)
			}
		}
		if n := plans.Load(); n != 1 {
			t.Errorf("%d plans of the same SQL, want 1", n)
		}
	})
	t.Run("failed plan", func(t *testing.T) {
		plans.Store(0)
		gate = make(chan struct{})
		lanes := make(chan Lane, 2)
		go func() {
			lanes <- c.Lane(context.Background(), Key{SQL: fetch}, blocked("", errors.New("connection closed")))
		}()
		<-started
		go func() {
			lanes <- c.Lane(context.Background(), Key{SQL: fetch}, func() ([]byte, error) { plans.Add(1); return []byte(planPoint), nil })
		}()
		// Give the second query a moment to start waiting, then fail the
		// shared plan. (Should it come later, it plans by itself all the
		// same.)
		time.Sleep(20 * time.Millisecond)
		close(gate)
		got := []Lane{<-lanes, <-lanes}
		if !slices.Contains(got, Small) || !slices.Contains(got, Bulk) {
			t.Errorf("lanes %v: want bulk for the failed plan and small for the one planned again", got)
		}
		if n := plans.Load(); n != 2 {
			t.Errorf("%d plans, want 2: the waiter plans by itself", n)
		}
	})
}
