package engine

import "context"

// PrepareHook is called before SQL is prepared on a connection, with the
// text as the caller gave it (a whole script, when it is one). It may run
// statements of its own on c; those do not call the hook again. An error
// stops the statement before DuckDB sees it.
type PrepareHook func(ctx context.Context, c *Conn, sql string) error

// SetPrepareHook installs h for every connection of the database. Set it
// once, before the database is shared.
func (d *DB) SetPrepareHook(h PrepareHook) { d.hook = h }

// PrepareHook is the hook SetPrepareHook installed, or nil: a second hook
// calls it, so that both run.
func (d *DB) PrepareHook() PrepareHook { return d.hook }

// runHook calls the database's hook unless c is already inside it.
func (c *Conn) runHook(ctx context.Context, sql string) error {
	h := c.db.hook
	if h == nil || c.inHook {
		return nil
	}
	c.inHook = true
	defer func() { c.inHook = false }()
	return h(ctx, c, sql)
}

// WithoutHook runs fn with the database's PrepareHook off for statements
// on c: for a hook's own bookkeeping on connections of its own.
func (c *Conn) WithoutHook(fn func() error) error {
	was := c.inHook
	c.inHook = true
	defer func() { c.inHook = was }()
	return fn()
}
