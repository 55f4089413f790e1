package engine

import (
	"sync"
	"sync/atomic"

	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// The function check asks DuckDB for a statement's plan, which costs about
// as much again as preparing it (two more statements on the connection:
// 0.15 ms of prepare became 0.4 ms checked on a quiet machine, a point
// query included). A statement's plan depends on the catalog (views,
// macros, tables) as the statement's transaction sees it, and on its
// connection's current catalog and schema, nothing else the check reads;
// so readings are kept per text, and dropped when the catalog may have
// changed:
//
//   - generation counts changes to the catalog. It moves before and after
//     every statement that may change it (anything but queries, DML,
//     transaction control and variables), and again when a transaction
//     that ran one ends.
//   - changing counts the connections where such a statement runs or
//     whose open transaction ran one (uncommitted, seen by that
//     connection alone). While any is, nothing is read from the cache or
//     put in it.
//   - A connection in an explicit transaction sees the catalog as it was
//     when the transaction began: it uses the cache only while the
//     generation is still the one its transaction began in, so the
//     readings match its snapshot.
//   - A connection that ran USE or SET, or holds temporary objects, never
//     uses it: names may resolve differently there.
//   - A reading of a lake statement is never kept: its files are the
//     snapshot's of the moment.
type planCache struct {
	generation atomic.Uint64
	changing   atomic.Int64

	mu      sync.Mutex
	entries map[planKey]planEntry
}

// planCacheMax bounds the cache; it is emptied when full, which a working
// set of distinct statements that large would do anyway.
const planCacheMax = 4096

type planKey struct{ catalog, schema, sql string }

type planEntry struct {
	generation uint64
	// plan and written are the readings of the bound plan and of the
	// statement as written (nil for a statement with no written reading).
	plan, written *duckdbsql.Plan
}

// usable reports whether c may read and write the cache now, and at which
// generation.
func (c *Conn) planCacheGeneration() (uint64, bool) {
	pc := &c.db.plans
	if c.maybeUse || c.maybeTemp || c.changesCatalog || c.txnUnknown || pc.changing.Load() > 0 {
		return 0, false
	}
	g := pc.generation.Load()
	if c.inTxn && g != c.txnGeneration {
		return 0, false
	}
	return g, true
}

func (c *Conn) cachedPlan(sql string) (planEntry, bool) {
	g, ok := c.planCacheGeneration()
	if !ok {
		return planEntry{}, false
	}
	pc := &c.db.plans
	pc.mu.Lock()
	e, hit := pc.entries[planKey{c.catalog, c.schema, sql}]
	pc.mu.Unlock()
	return e, hit && e.generation == g
}

// keepPlan keeps a reading made at generation g, unless the catalog may
// have changed since.
func (c *Conn) keepPlan(g uint64, sql string, plan, written *duckdbsql.Plan) {
	if now, ok := c.planCacheGeneration(); !ok || now != g {
		return
	}
	for _, call := range plan.Calls {
		if class, _, _ := FunctionClass(call.Name); class == FuncLake {
			return
		}
	}
	pc := &c.db.plans
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.entries == nil || len(pc.entries) >= planCacheMax {
		pc.entries = make(map[planKey]planEntry)
	}
	pc.entries[planKey{c.catalog, c.schema, sql}] = planEntry{generation: g, plan: plan, written: written}
}

// changesCatalogKind reports whether a statement of type t may change the
// catalog: anything but queries, DML, transaction control and variables.
func changesCatalogKind(t duckdb.StatementType) bool {
	switch t {
	case duckdb.StatementTypeSelect, duckdb.StatementTypeInsert, duckdb.StatementTypeUpdate,
		duckdb.StatementTypeDelete, duckdb.StatementTypeMergeInto, duckdb.StatementTypeTransaction,
		duckdb.StatementTypeVariableSet, duckdb.StatementTypeCopy, duckdb.StatementTypeAnalyze,
		duckdb.StatementTypeVacuum, duckdb.StatementTypeRelation:
		return false
	}
	return true
}

// beforeRun marks a statement that may change the catalog as running on
// c, before it runs.
func (s *Stmt) beforeRun() {
	if !changesCatalogKind(s.Type()) {
		return
	}
	c, pc := s.c, &s.c.db.plans
	if !c.changesCatalog {
		c.changesCatalog = true
		pc.changing.Add(1)
	}
	pc.generation.Add(1)
}

// afterRun ends what beforeRun began, once the statement ran (or
// failed): a change made outside an explicit transaction is committed
// now; one inside stays the connection's until the transaction ends. A
// transaction statement moves the connection in or out of one.
func (s *Stmt) afterRun() {
	c, pc := s.c, &s.c.db.plans
	switch {
	case s.Type() == duckdb.StatementTypeTransaction:
		switch w := duckdbsql.LeadingWords(s.text, 1); {
		case len(w) == 1 && (w[0] == "BEGIN" || w[0] == "START"):
			c.inTxn, c.txnGeneration = true, pc.generation.Load()
		case len(w) == 1 && (w[0] == "COMMIT" || w[0] == "END" || w[0] == "ROLLBACK" || w[0] == "ABORT"):
			c.inTxn = false
			c.endCatalogChange()
		default:
			c.txnUnknown = true // not told apart: no cache until released
		}
	case changesCatalogKind(s.Type()):
		pc.generation.Add(1)
		if !c.inTxn {
			c.endCatalogChange()
		}
	}
}

// endCatalogChange ends the connection's hold on the catalog: its change
// is committed or rolled back.
func (c *Conn) endCatalogChange() {
	if !c.changesCatalog {
		return
	}
	pc := &c.db.plans
	pc.generation.Add(1)
	c.changesCatalog = false
	pc.changing.Add(-1)
}
