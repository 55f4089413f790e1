// Package engine owns quiver's embedded DuckDB database: one database per
// process, a pool of connections, and queries that stream their results as
// Arrow record batches without materialising them.
//
// quiver stays on DuckDB 1.5 (duckdb-go-bindings v0.105xx) rather than
// 2.0 for two reasons measured against 2.0's bindings (v0.20000.0):
// 2.0's duckdb_arrow_scan makes a persistent view over process-local
// bind data, so every Arrow insert into a file database (Conn.ExecArrow,
// and with it DoPut, quiver ingest and the lake pipeline) fails to commit
// with "Cannot serialize a table function with process-local bind input";
// and its streaming results copy and lock per chunk, so draining 2M num20
// rows took 205–313 ms against 1.5's 50–75 ms.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/engine/convert"
	"github.com/quiverdata/quiver/mempool"
)

// BundledExtensions are the DuckDB extensions linked into quiver's binary.
// Nothing is downloaded at run time.
var BundledExtensions = []string{"parquet", "json", "icu"}

// Options configure Open.
type Options struct {
	// Path is a database file, or ":memory:".
	Path string
	// Threads caps DuckDB's worker threads; 0 keeps DuckDB's default.
	Threads int
	// MemoryLimit is DuckDB's memory_limit, e.g. "4GB"; empty keeps the default.
	MemoryLimit string
	// TempDir is where DuckDB spills what does not fit in MemoryLimit.
	// Empty keeps DuckDB's default, FILE.tmp beside a database file; an
	// in-memory database, whose default is .tmp in the working directory,
	// gets a private directory among the system's temporary files
	// instead, removed by Close.
	TempDir string
	// BatchRows is the row count result batches are coalesced to.
	BatchRows int
	// MaxBatchBytes cuts result batches by size; zero keeps
	// convert.DefaultMaxBatchBytes, under the 16 MiB message clients
	// accept by default. Tests set it low to cut batches often.
	MaxBatchBytes int
	// MaxIdle is how many idle connections the pool keeps.
	MaxIdle int
	// ExternalAccess leaves DuckDB's file system and network access on.
	// When false, SQL cannot read or write files outside AllowedDirs, and
	// the configuration is locked so SQL cannot turn access back on.
	ExternalAccess bool
	// AllowedDirs stay reachable when ExternalAccess is false.
	AllowedDirs []string
	// LateMaterialization keeps DuckDB's late-materialization optimizer on.
	// In DuckDB 1.5.6 it rewrites SELECT … LIMIT n into a rowid semi-join
	// and sort even for n far above late_materialization_max_rows:
	// SELECT id FROM t LIMIT 1000000 took 348 ms with it, 32 ms without,
	// while top-10 queries took about the same either way. Off by default.
	LateMaterialization bool
	// FallbackOnly converts every result column with DuckDB's own Arrow
	// conversion instead of the direct vector copy. It exists to check and
	// measure the fast path against DuckDB's output.
	FallbackOnly bool
	// Shape bounds the shape of every statement, before DuckDB parses
	// it (ShapeLimits); zero fields take the defaults.
	Shape ShapeLimits
	// Settings are more DuckDB settings, "name = value", applied with SET
	// GLOBAL before the configuration is locked.
	Settings []string
	// Allocator allocates result buffers; nil means a mempool.Allocator.
	Allocator memory.Allocator
	// Logger receives the engine's logs; nil means slog.Default().
	Logger *slog.Logger
}

// DB is one embedded DuckDB database. It is safe for concurrent use; the
// connections it hands out are not.
type DB struct {
	opts Options
	log  *slog.Logger
	mem  memory.Allocator
	db   duckdb.Database
	// spill is the private temp_directory Open made, which Close removes.
	spill string

	catalog string
	hook    PrepareHook
	// plans keeps the function check's readings of statements.
	plans planCache

	mu     sync.Mutex
	idle   []*Conn
	open   int
	closed bool
}

// Open opens (or creates) the database at opts.Path.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if opts.Path == "" {
		opts.Path = ":memory:"
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = convert.DefaultBatchRows
	}
	if opts.MaxIdle <= 0 {
		opts.MaxIdle = 16
	}
	opts.Shape = opts.Shape.withDefaults()
	d := &DB{opts: opts, log: opts.Logger, mem: opts.Allocator}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.mem == nil {
		d.mem = mempool.New()
	}

	var cfg duckdb.Config
	if duckdb.CreateConfig(&cfg) == duckdb.StateError {
		return nil, fmt.Errorf("open database %s: create config", opts.Path)
	}
	defer duckdb.DestroyConfig(&cfg)
	settings := map[string]string{
		"autoinstall_known_extensions": "false",
		"autoload_known_extensions":    "true",
	}
	if opts.Threads > 0 {
		settings["threads"] = fmt.Sprint(opts.Threads)
	}
	if opts.MemoryLimit != "" {
		settings["memory_limit"] = opts.MemoryLimit
	}
	if opts.TempDir == "" && opts.Path == ":memory:" {
		dir, err := os.MkdirTemp("", "quiver-spill-")
		if err != nil {
			return nil, fmt.Errorf("open database %s: its spill directory: %w", opts.Path, err)
		}
		d.spill, opts.TempDir = dir, dir
	}
	if opts.TempDir != "" {
		settings["temp_directory"] = opts.TempDir
	}
	ok := false
	defer func() {
		if !ok {
			d.removeSpill()
		}
	}()
	for k, v := range settings {
		if duckdb.SetConfig(cfg, k, v) == duckdb.StateError {
			return nil, fmt.Errorf("open database %s: set %s=%s", opts.Path, k, v)
		}
	}
	var errMsg string
	if duckdb.OpenExt(opts.Path, &d.db, cfg, &errMsg) == duckdb.StateError {
		return nil, fmt.Errorf("open database %s: %s", opts.Path, errMsg)
	}
	if err := d.setup(ctx); err != nil {
		duckdb.Close(&d.db)
		return nil, err
	}
	ok = true
	return d, nil
}

// removeSpill removes the spill directory Open made, if it made one.
func (d *DB) removeSpill() {
	if d.spill == "" {
		return
	}
	if err := os.RemoveAll(d.spill); err != nil {
		d.log.Warn("could not remove the database's spill directory", "dir", d.spill, "err", err)
	}
}

// setup applies database-wide settings through a short-lived connection.
func (d *DB) setup(ctx context.Context) error {
	c, err := d.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rows, err := c.Query(ctx, "SELECT current_database()")
	if err != nil {
		return fmt.Errorf("read catalog name: %w", err)
	}
	if rows.Next() {
		d.catalog = strings.Clone(rows.RecordBatch().Column(0).ValueStr(0)) // the batch is recycled on Close
	}
	rows.Close()
	// Load the statically linked extensions now: once external access is
	// off, DuckDB refuses to autoload even bundled ones.
	for _, ext := range BundledExtensions {
		if _, err := c.Exec(ctx, "LOAD "+ext); err != nil {
			d.log.Warn("bundled extension did not load", "extension", ext, "err", err)
		}
	}
	stmts := []string{"SET GLOBAL TimeZone = 'UTC'"}
	for _, set := range d.opts.Settings {
		stmts = append(stmts, "SET GLOBAL "+set)
	}
	if !d.opts.LateMaterialization {
		stmts = append(stmts, "SET GLOBAL disabled_optimizers = 'late_materialization'")
	}
	if !d.opts.ExternalAccess {
		if len(d.opts.AllowedDirs) > 0 {
			quoted := make([]string, len(d.opts.AllowedDirs))
			for i, dir := range d.opts.AllowedDirs {
				quoted[i] = QuoteString(strings.TrimSuffix(dir, "/") + "/")
			}
			stmts = append(stmts, "SET GLOBAL allowed_directories = ["+strings.Join(quoted, ", ")+"]")
		}
		stmts = append(stmts,
			"SET GLOBAL enable_external_access = false",
			"SET GLOBAL lock_configuration = true")
	}
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			return fmt.Errorf("configure database: %s: %w", s, err)
		}
	}
	return nil
}

// DefaultCatalog is the name DuckDB gives the database file's catalog
// (the file name without extension, or "memory").
func (d *DB) DefaultCatalog() string { return d.catalog }

// Allocator is the allocator result batches are built with.
func (d *DB) Allocator() memory.Allocator { return d.mem }

// Path is the database's file, or ":memory:".
func (d *DB) Path() string { return d.opts.Path }

// Conn takes a connection from the pool, or opens a new one. The caller
// owns it until Release (back to the pool) or Close.
func (d *DB) Conn(ctx context.Context) (*Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrClosed
	}
	if n := len(d.idle); n > 0 {
		c := d.idle[n-1]
		d.idle = d.idle[:n-1]
		d.mu.Unlock()
		return c, nil
	}
	d.open++
	d.mu.Unlock()

	c := &Conn{db: d}
	if duckdb.Connect(d.db, &c.conn) == duckdb.StateError {
		d.mu.Lock()
		d.open--
		d.mu.Unlock()
		return nil, fmt.Errorf("connect to %s: failed", d.opts.Path)
	}
	duckdb.ConnectionGetArrowOptions(c.conn, &c.arrowOpts)
	connsOpen.Inc()
	return c, nil
}

// put returns a healthy connection to the pool.
func (d *DB) put(c *Conn) {
	d.mu.Lock()
	if !d.closed && len(d.idle) < d.opts.MaxIdle {
		d.idle = append(d.idle, c)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	c.Close()
}

// Close closes idle connections and the database. Connections still held
// by callers must be closed by them first.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	idle := d.idle
	d.idle = nil
	d.mu.Unlock()
	for _, c := range idle {
		c.Close()
	}
	d.mu.Lock()
	open := d.open
	d.mu.Unlock()
	if open > 0 {
		d.log.Warn("closing database with connections still open", "open", open)
	}
	duckdb.Close(&d.db)
	d.removeSpill()
	return nil
}

// QuoteIdent quotes a SQL identifier for DuckDB.
func QuoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// QuoteString quotes a SQL string literal for DuckDB.
func QuoteString(s string) string {
	return `'` + strings.ReplaceAll(s, `'`, `''`) + `'`
}
