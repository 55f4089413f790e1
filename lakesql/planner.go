package lakesql

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// Planner splits a scan of one lake table into parts, one result endpoint
// each: groups of the planned data files of one snapshot, of about
// Options.PartBytes each. Any replica that shares the catalog can run a
// part: the part names the snapshot and the group, and the files are
// planned again from them.
type Planner struct{ c *Catalog }

// Planner returns the catalog's result planner.
func (c *Catalog) Planner() *Planner { return &Planner{c: c} }

// Plan returns the parts of sql, or nil when it runs as one: it must be a
// plain scan of one lake table (projection and filter, no aggregate,
// window, DISTINCT, ORDER BY, LIMIT, join or subquery), whose planned
// files hold more than one part's bytes.
func (p *Planner) Plan(ctx context.Context, conn *engine.Conn, sql string) (parts []json.RawMessage, err error) {
	// The statements Plan runs on conn are its own: the hook must not
	// run for them (it would take c.mu, which resolve holds).
	err = conn.WithoutHook(func() error {
		parts, err = p.plan(ctx, conn, sql)
		return err
	})
	return parts, err
}

// MayPlan reports whether sql names the lake or one of its tables: only
// such a query is split, and telling from its tokens spares a query that
// is not the connection the planner would prepare it on.
func (p *Planner) MayPlan(_ context.Context, sql string) bool {
	return p.c.mentions(tokens(sql))
}

func (p *Planner) plan(ctx context.Context, conn *engine.Conn, sql string) ([]json.RawMessage, error) {
	c := p.c
	toks := tokens(sql)
	if !c.mentions(toks) {
		return nil, nil
	}
	stmts := statements(toks)
	if len(stmts) != 1 {
		return nil, nil
	}
	refs, err := c.resolve(ctx, stmts[0], 0, &currentCatalog{conn: conn}, nil, map[*view]*ref{})
	if err != nil || len(refs) != 1 || refs[0].count != 1 || refs[0].v.spec != "" {
		return nil, err
	}
	v := refs[0].v
	node := parseSelect(ctx, conn, sql)
	if node == nil || !c.splittable(node, v) {
		return nil, nil
	}
	sp, err := c.plan(ctx, v, c.filterFor(node, v), 0)
	if err != nil {
		return nil, err
	}
	n := partCount(sp.weight, c.opts.PartBytes, len(sp.files), c.opts.MaxParts, c.opts.Replicas)
	if n < 2 {
		return nil, nil
	}
	parts := make([]json.RawMessage, n)
	for i := range parts {
		b, err := json.Marshal(pin{Table: v.ns + "." + v.name, Snapshot: sp.snapshot, Part: i, Parts: n})
		if err != nil {
			return nil, err
		}
		parts[i] = b
	}
	return parts, nil
}

// partCount is how many parts a scan of files weighing weight in all
// (planned.weight) is split into: one per partBytes, rounded up to a
// multiple of the replicas so that each serves as many parts, and never
// more than the files or maxParts.
func partCount(weight, partBytes int64, files, maxParts, replicas int) int {
	n := int((weight + partBytes - 1) / partBytes)
	if replicas > 1 && n > 1 {
		n = (n + replicas - 1) / replicas * replicas
	}
	return min(n, files, maxParts)
}

// Bind returns the context that runs one part of sql.
func (p *Planner) Bind(ctx context.Context, sql string, part json.RawMessage) (context.Context, string, error) {
	var pn pin
	if err := json.Unmarshal(part, &pn); err != nil || pn.Table == "" || pn.Parts < 1 || pn.Part < 0 || pn.Part >= pn.Parts {
		return nil, "", &engine.Error{Kind: engine.KindInvalid, Msg: fmt.Sprintf("malformed lake part %q", part)}
	}
	return withPin(ctx, pn), sql, nil
}

// splittable reports whether a SELECT is a plain scan of v, whose rows
// can be read in parts and concatenated.
func (c *Catalog) splittable(n *duckdbsql.Node, v *view) bool {
	if len(n.Modifiers) > 0 || len(n.CTEMap.Map) > 0 || len(n.GroupBy) > 0 || n.Having != nil || n.Qualify != nil ||
		(len(n.Sample) > 0 && string(n.Sample) != "null") || (n.Aggregate != "" && n.Aggregate != "STANDARD_HANDLING") {
		return false
	}
	tables, ok := duckdbsql.BaseTables(n.From)
	if !ok || len(tables) != 1 || n.From.Type != "BASE_TABLE" {
		return false
	}
	t := tables[0]
	if !strings.EqualFold(t.Table, v.name) || (t.Catalog != "" && !strings.EqualFold(t.Catalog, CatalogName)) {
		return false
	}
	for _, e := range n.SelectList {
		if !c.plainExpr(e) {
			return false
		}
	}
	return n.Where == nil || c.plainExpr(n.Where)
}

// plainExpr reports whether an expression has no aggregate, window or
// subquery anywhere in it. It visits every expression in its JSON, so no
// kind of child is missed.
func (c *Catalog) plainExpr(e *duckdbsql.Expr) bool {
	return !duckdbsql.WalkExprs(e.Raw, func(x *duckdbsql.Expr) bool {
		switch x.Class {
		case "WINDOW", "SUBQUERY":
			return false
		case "FUNCTION":
			return !c.aggregates[strings.ToLower(x.Function)]
		}
		return true
	})
}
