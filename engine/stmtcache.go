package engine

import (
	"container/list"

	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// Preparing is most of what a small statement costs the server: a
// single-row INSERT … VALUES (?, 'x') sent by ADBC spent 53% of its
// execution's CPU in DuckDB's parse and prepare (0.87 of 1.63 CPU-s in a
// 10 s profile), prepared again for every row; SELECT 1 spent 24% of the
// server's CPU there. So each connection keeps the statements it
// prepared, by text, and Prepare hands one back instead of preparing the
// same text again.
//
// What keeps a reused statement the one a fresh prepare would make:
//
//   - Only one statement alone, a SELECT, INSERT, UPDATE or DELETE, is
//     kept: nothing whose running changes what later statements bind to,
//     nor a COPY, an EXPLAIN or a checkpoint, whose preparing does more
//     than DuckDB's.
//   - DuckDB rebinds a prepared statement when a table it reads changes,
//     but not when a macro or a view is replaced, a temporary table comes
//     to shadow a name, or the search path or a variable changes (it folds
//     getvariable and current_setting when it binds). So a statement is
//     kept at the plan cache's generation and served only while the
//     connection may use that cache at that same generation
//     (planCacheGeneration): every statement that may change the catalog,
//     SET, USE and SET VARIABLE included, moves it.
//   - A statement whose text the prepare hook planned lake files for is
//     never kept: its files are the snapshot's of the moment.
//   - The prepare hook still runs on every Prepare, and the caller's
//     checks (Authorize, admission) run on the statement it gets as on a
//     fresh one: the cache saves DuckDB's work, no check.
//   - A statement is taken out of the cache while it is used and goes
//     back on Close, its bound values cleared; a text prepared twice at
//     once gets a second statement. Close of the connection destroys
//     them all.

// stmtCacheMax bounds the statements one connection keeps, the least
// recently used going first. Clients repeat a handful of statements (ADBC
// and JDBC prepare one per cursor), and each kept statement holds its
// DuckDB plan.
const stmtCacheMax = 32

// stmtCacheMaxText is the longest SQL kept: a long text is seldom
// repeated, and its plan (a generated IN list, say) may be large.
const stmtCacheMaxText = 4096

// stmtCache is a connection's kept statements, by text; lru holds them
// most recently used first. Like its Conn, it belongs to one goroutine at
// a time.
type stmtCache struct {
	entries map[string]*list.Element
	lru     list.List
}

type keptStmt struct {
	sql        string
	ps         duckdb.PreparedStatement
	generation uint64
}

// keepable reports whether s, just prepared alone from sql, may be kept
// once closed.
func (c *Conn) keepable(s *Stmt, sql string) bool {
	if len(sql) > stmtCacheMaxText || c.allowed != nil || containsFold(sql, checkpointWord) {
		return false
	}
	switch s.Type() {
	case duckdb.StatementTypeSelect, duckdb.StatementTypeInsert, duckdb.StatementTypeUpdate, duckdb.StatementTypeDelete:
		return true
	}
	return false
}

// takeStmt returns the kept statement for sql, taken out of the cache, or
// nil. A kept statement of an older generation is destroyed.
func (c *Conn) takeStmt(sql string) *Stmt {
	if len(c.stmts.entries) == 0 || len(sql) > stmtCacheMaxText || c.allowed != nil {
		return nil
	}
	el := c.stmts.entries[sql]
	if el == nil {
		return nil
	}
	k := c.stmts.remove(el)
	g, ok := c.planCacheGeneration()
	if !ok || g != k.generation {
		duckdb.DestroyPrepare(&k.ps)
		return nil
	}
	stmtCacheHits.Inc()
	return &Stmt{c: c, ps: k.ps, text: sql, keep: true, generation: g}
}

// keepStmt puts s back in its connection's cache, and reports whether it
// did; s no longer holds its statement then.
func (c *Conn) keepStmt(s *Stmt) bool {
	if c.conn.Ptr == nil || c.broken || s.done != nil {
		return false
	}
	if g, ok := c.planCacheGeneration(); !ok || g != s.generation {
		return false
	}
	if _, dup := c.stmts.entries[s.text]; dup {
		return false
	}
	if duckdb.ClearBindings(s.ps) == duckdb.StateError {
		return false
	}
	if c.stmts.entries == nil {
		c.stmts.entries = make(map[string]*list.Element)
	}
	c.stmts.entries[s.text] = c.stmts.lru.PushFront(&keptStmt{sql: s.text, ps: s.ps, generation: s.generation})
	stmtsKept.Inc()
	s.ps = duckdb.PreparedStatement{}
	for len(c.stmts.entries) > stmtCacheMax {
		k := c.stmts.remove(c.stmts.lru.Back())
		duckdb.DestroyPrepare(&k.ps)
	}
	return true
}

// remove takes el out of the cache and returns what it kept.
func (sc *stmtCache) remove(el *list.Element) *keptStmt {
	k := sc.lru.Remove(el).(*keptStmt)
	delete(sc.entries, k.sql)
	stmtsKept.Dec()
	return k
}

// clear destroys every kept statement.
func (sc *stmtCache) clear() {
	for el := sc.lru.Front(); el != nil; el = sc.lru.Front() {
		k := sc.remove(el)
		duckdb.DestroyPrepare(&k.ps)
	}
}
