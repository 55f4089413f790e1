package lakesql

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// ErrReadOnly is wrapped by the error that refuses a write to the lake.
var ErrReadOnly = &engine.Error{Kind: engine.KindPermission, Msg: "lake tables are read-only"}

// ref is a lake table a statement names, with how often it is named.
type ref struct {
	v     *view
	count int
}

// pin fixes what one part of a split query reads: the snapshot of one
// table and which of n groups of its files.
type pin struct {
	Table    string `json:"lake"`
	Snapshot int64  `json:"snap"`
	Part     int    `json:"i"`
	Parts    int    `json:"n"`
}

type pinKey struct{}

func withPin(ctx context.Context, p pin) context.Context { return context.WithValue(ctx, pinKey{}, p) }

func pinFrom(ctx context.Context) (pin, bool) {
	p, ok := ctx.Value(pinKey{}).(pin)
	return p, ok
}

// hook runs before each statement is prepared. It refuses writes to the
// lake and points the views a statement reads at the files of one
// snapshot.
func (c *Catalog) hook(ctx context.Context, conn *engine.Conn, sql string) error {
	toks := tokens(sql)
	if !c.mentions(toks) {
		return nil
	}
	stmts := statements(toks)
	cur := &currentCatalog{conn: conn}
	var refs []*ref
	byView := map[*view]*ref{}
	for i, s := range stmts {
		if s.keyword() == "USE" {
			cur.use(ctx, s.names(i))
		}
		for _, n := range s.writeTargets(i) {
			if lake, err := c.isLakeName(ctx, n, s.keyword(), cur); err != nil {
				return err
			} else if lake {
				return &engine.Error{Kind: engine.KindPermission, Msg: fmt.Sprintf(
					"lake tables are read-only: %s names the Iceberg lake (catalog %s); write to it with quiver ingest --lake, or copy what you need into a table of your own (CREATE TABLE t AS SELECT … FROM lake.…)",
					strings.Join(n.parts, "."), CatalogName)}
			}
		}
		var err error
		if refs, err = c.resolve(ctx, s, i, cur, refs, byView); err != nil {
			return err
		}
	}
	if len(refs) == 0 {
		return nil
	}
	var filterFor *ref
	if len(stmts) == 1 && len(refs) == 1 && refs[0].count == 1 {
		filterFor = refs[0]
	}
	var set strings.Builder
	for _, r := range refs {
		var filter iceberg.BooleanExpression
		if r == filterFor {
			if node := parseSelect(ctx, conn, sql); node != nil {
				filter = c.filterFor(node, r.v)
			}
		}
		files, err := c.files(ctx, r.v, filter, pinFor(ctx, r.v))
		if err != nil {
			return err
		}
		// The statement's reader of these files runs for whoever sent
		// it: the function check lets read_parquet read them, and only
		// them, for a user who may not read files.
		conn.AllowFiles(files)
		set.WriteString("SET VARIABLE " + r.v.variable + " = [")
		for i, f := range files {
			if i > 0 {
				set.WriteString(", ")
			}
			set.WriteString(engine.QuoteString(f))
		}
		set.WriteString("];\n")
	}
	if _, err := conn.Exec(ctx, set.String()); err != nil {
		return fmt.Errorf("point lake views at their files: %w", err)
	}
	return nil
}

// pinFor is the pin of ctx when it is about v.
func pinFor(ctx context.Context, v *view) *pin {
	p, ok := pinFrom(ctx)
	if !ok || v.spec != "" || !strings.EqualFold(p.Table, v.ns+"."+v.name) {
		return nil
	}
	return &p
}

// mentions reports whether a statement may name the lake: a word equal to
// the catalog's name or to one of its tables.
func (c *Catalog) mentions(toks []token) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range toks {
		if !isIdent(t) {
			continue
		}
		if strings.EqualFold(t.text, CatalogName) {
			return true
		}
		if c.known(t.text) {
			return true
		}
	}
	return false
}

// known reports whether name (a table name, perhaps with a time-travel
// suffix) is a lake table in some namespace. c.mu is held.
func (c *Catalog) known(name string) bool {
	base, _, _ := strings.Cut(name, "@")
	return c.names[strings.ToLower(base)] > 0
}

// currentCatalog asks the connection for its current catalog and schema
// once, when a name needs them.
type currentCatalog struct {
	conn            *engine.Conn
	done            bool
	catalog, schema string
	err             error
}

func (cc *currentCatalog) get(ctx context.Context) (string, string, error) {
	if !cc.done {
		cc.done = true
		rows, err := cc.conn.Query(ctx, "SELECT current_database(), current_schema()")
		if err != nil {
			cc.err = err
		} else {
			if rows.Next() {
				b := rows.RecordBatch()
				cc.catalog, cc.schema = strings.Clone(b.Column(0).ValueStr(0)), strings.Clone(b.Column(1).ValueStr(0))
			}
			cc.err = rows.Err()
			rows.Close()
		}
	}
	return cc.catalog, cc.schema, cc.err
}

// use follows a USE statement of the script: what it names is current for
// the statements after it.
func (cc *currentCatalog) use(ctx context.Context, names []name) {
	if len(names) < 2 { // USE and its target
		return
	}
	n := names[1]
	switch {
	case len(n.parts) >= 2:
		cc.catalog, cc.schema = n.parts[0], n.parts[1]
	case strings.EqualFold(n.parts[0], CatalogName):
		cc.catalog, cc.schema = CatalogName, "main"
	default:
		// One name is a catalog, or a schema of the current catalog.
		catalog, _, _ := cc.get(ctx)
		cc.catalog, cc.schema = catalog, n.parts[0]
	}
	cc.done, cc.err = true, nil
}

// isLakeName reports whether a write target n is in the lake catalog.
func (c *Catalog) isLakeName(ctx context.Context, n name, keyword string, cur *currentCatalog) (bool, error) {
	first := n.parts[0]
	if len(n.parts) >= 2 && strings.EqualFold(first, CatalogName) {
		return true, nil
	}
	if keyword == "DETACH" && len(n.parts) == 1 && strings.EqualFold(first, CatalogName) {
		return true, nil
	}
	if len(n.parts) >= 3 {
		return false, nil
	}
	catalog, _, err := cur.get(ctx)
	if err != nil {
		return false, err
	}
	return strings.EqualFold(catalog, CatalogName), nil
}

// resolve adds the lake tables statement i reads to refs, creating the
// views of time-travel names, and re-reading the list of tables when a
// name is missing from it.
func (c *Catalog) resolve(ctx context.Context, s statement, i int, cur *currentCatalog, refs []*ref, byView map[*view]*ref) ([]*ref, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.listed) > c.opts.Refresh {
		if err := c.list(ctx); err != nil {
			return nil, fmt.Errorf("read the lake's tables: %w", err)
		}
	}
	relisted := false
	for _, n := range s.names(i) {
		ns, tbl, ok, err := c.lakeName(ctx, n, cur)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		v, err := c.viewFor(ctx, ns, tbl)
		if err != nil {
			return nil, err
		}
		if v == nil && !relisted && len(n.parts) == 3 {
			relisted = true
			if err := c.list(ctx); err != nil {
				return nil, fmt.Errorf("read the lake's tables: %w", err)
			}
			if v, err = c.viewFor(ctx, ns, tbl); err != nil {
				return nil, err
			}
		}
		if v == nil {
			continue // DuckDB reports the missing table
		}
		r := byView[v]
		if r == nil {
			r = &ref{v: v}
			byView[v] = r
			refs = append(refs, r)
		}
		r.count++
	}
	return refs, nil
}

// lakeName says which namespace and table a name means, if the lake.
// c.mu is held.
func (c *Catalog) lakeName(ctx context.Context, n name, cur *currentCatalog) (ns, tbl string, ok bool, err error) {
	switch len(n.parts) {
	case 3:
		if !strings.EqualFold(n.parts[0], CatalogName) {
			return "", "", false, nil
		}
		return n.parts[1], n.parts[2], true, nil
	case 2, 1:
		if !c.known(n.parts[len(n.parts)-1]) {
			return "", "", false, nil
		}
		catalog, schema, err := cur.get(ctx)
		if err != nil || !strings.EqualFold(catalog, CatalogName) {
			return "", "", false, err
		}
		if len(n.parts) == 2 {
			return n.parts[0], n.parts[1], true, nil
		}
		return schema, n.parts[0], true, nil
	}
	return "", "", false, nil
}

// viewFor returns the view of ns.name, creating it for a time-travel
// name; nil when the lake has no such table. c.mu is held.
func (c *Catalog) viewFor(ctx context.Context, ns, name string) (*view, error) {
	if v := c.views[viewKey(ns, name)]; v != nil {
		return v, nil
	}
	base, spec, travel := strings.Cut(name, "@")
	if !travel {
		return nil, nil
	}
	bv := c.views[viewKey(ns, base)]
	if bv == nil {
		return nil, nil
	}
	tbl, err := c.load(ctx, bv)
	if err != nil {
		return nil, err
	}
	snap, err := snapshotFor(tbl, spec)
	if err != nil {
		return nil, &engine.Error{Kind: engine.KindInvalid, Msg: fmt.Sprintf("lake.%s.%q: %v", bv.ns, name, err)}
	}
	schemaID := tbl.Metadata().CurrentSchema().ID
	if snap.SchemaID != nil {
		schemaID = *snap.SchemaID
	}
	c.seq++
	v := &view{ns: bv.ns, name: bv.name, spec: spec, snapshot: snap.SnapshotID, variable: fmt.Sprintf("quiver_lake_%d", c.seq), schemaID: -1}
	err = c.maintain(ctx, func(conn *engine.Conn) error {
		if err := c.define(ctx, conn, v, tbl, schemaID); err != nil {
			return err
		}
		c.trimTravel(ctx, conn)
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.views[viewKey(ns, name)] = v
	return v, nil
}

// maxTravelViews caps the time-travel views kept.
const maxTravelViews = 64

// trimTravel drops the oldest time-travel views beyond maxTravelViews.
// c.mu is held.
func (c *Catalog) trimTravel(ctx context.Context, conn *engine.Conn) {
	var travel []*view
	for _, v := range c.views {
		if v.spec != "" {
			travel = append(travel, v)
		}
	}
	if len(travel) <= maxTravelViews {
		return
	}
	sort.Slice(travel, func(i, j int) bool { return travel[i].variable < travel[j].variable })
	for _, v := range travel[:len(travel)-maxTravelViews] {
		if _, err := conn.Exec(ctx, "DROP VIEW IF EXISTS "+v.qualified()); err == nil {
			delete(c.views, viewKey(v.ns, v.duckName()))
		}
	}
}

// snapshotFor resolves a time-travel suffix: a snapshot id, or a time.
func snapshotFor(tbl *table.Table, spec string) (*table.Snapshot, error) {
	if id, err := strconv.ParseInt(spec, 10, 64); err == nil {
		if s := tbl.SnapshotByID(id); s != nil {
			return s, nil
		}
		return nil, fmt.Errorf("the table has no snapshot %d", id)
	}
	var at time.Time
	var err error
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if at, err = time.Parse(layout, spec); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("after @ give a snapshot id or a time such as 2026-12-01T10:00:00Z, not %q", spec)
	}
	s := tbl.SnapshotAsOf(at.UnixMilli(), true)
	if s == nil {
		return nil, fmt.Errorf("the table has no snapshot as of %s", at.UTC().Format(time.RFC3339))
	}
	return s, nil
}

// load reads v's table afresh from the catalog.
func (c *Catalog) load(ctx context.Context, v *view) (*table.Table, error) {
	ident := append(strings.Split(v.ns, "."), v.name)
	tbl, err := c.opts.Lake.Catalog().LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load lake table %s.%s: %w", v.ns, v.name, err)
	}
	return tbl, nil
}

// parseSelect returns the parsed SELECT node of sql, or nil when sql is
// not one SELECT.
func parseSelect(ctx context.Context, conn *engine.Conn, sql string) *duckdbsql.Node {
	t, err := conn.SyntaxTree(ctx, sql)
	if err != nil {
		return nil
	}
	return t.Select()
}

// filterFor is the Iceberg row filter of a SELECT's WHERE clause for v.
func (c *Catalog) filterFor(node *duckdbsql.Node, v *view) iceberg.BooleanExpression {
	tables, ok := duckdbsql.BaseTables(node.From)
	if !ok || node.Where == nil {
		return nil
	}
	var me *duckdbsql.BaseTable
	for i := range tables {
		t := &tables[i]
		if strings.EqualFold(t.Catalog, CatalogName) && strings.EqualFold(t.Table, v.duckName()) {
			me = t
		}
	}
	if me == nil {
		return nil
	}
	matches := func(q string) bool {
		if q == "" {
			return len(tables) == 1
		}
		if me.Alias != "" {
			return strings.EqualFold(q, me.Alias)
		}
		return strings.EqualFold(q, me.Table)
	}
	c.mu.Lock()
	sch := v.sch
	c.mu.Unlock()
	if sch == nil {
		return nil
	}
	return pruneFilter(node.Where, sch, matches)
}
