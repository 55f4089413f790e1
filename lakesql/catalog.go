// Package lakesql makes the tables of an Iceberg lake queryable in quiver's
// DuckDB database, read-only, as lake.<namespace>.<table>.
//
// DuckDB 1.5.6 as linked into quiver has no Iceberg extension, and none
// may be downloaded, so the lake is wired in from the outside:
//
//   - The database gets an in-memory catalog named lake, with one schema
//     per Iceberg namespace and one view per table. A view reads
//     read_parquet(getvariable('…'), schema = MAP{field id: column}): the
//     Parquet files come from a variable, and columns are matched by
//     Iceberg field id, so renamed and added columns read as Iceberg
//     says.
//   - Before a statement that names a lake table is prepared, a hook plans
//     the table's scan with iceberg-go (one snapshot, and, for a single
//     SELECT, the WHERE clause's comparisons as a row filter, so that
//     iceberg-go prunes partitions and files by their statistics), and sets
//     the variable, on that connection only, to the files to read.
//     Variables are per connection, so concurrent queries each see their
//     own snapshot.
//   - The table's metadata is read from the catalog for every statement,
//     as it is prepared: no cache holds a snapshot, so a commit (an ingest
//     commit every few seconds, or a compaction's replace snapshot) is seen
//     by the next statement. Only the list of tables is kept, for
//     Options.Refresh, and a name it does not know makes it read at once.
//   - A file:// lake is read in place by DuckDB's Parquet reader. An s3://
//     lake's planned files are copied once into a local cache directory,
//     then read from there: data files are immutable, so a copy never goes
//     stale.
//
// Time travel names a snapshot in the table name, as Delta Lake does:
// lake.quiver."events@5831250133958617611" reads that snapshot, and
// lake.quiver."events@2026-12-01T10:00:00Z" the one current at that time.
//
// Statements that would write to the lake catalog are refused before
// DuckDB sees them; the lake is written by quiver ingest --lake.
package lakesql

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/lake"
)

// CatalogName is the DuckDB catalog the lake's tables appear in.
const CatalogName = "lake"

// Options configure Attach.
type Options struct {
	// Lake is the open Iceberg catalog.
	Lake *lake.Lake
	// CacheDir holds local copies of an s3:// lake's data files, and a
	// zero-row Parquet file that stands for an empty table. The database
	// must be allowed to read it.
	CacheDir string
	// CacheBytes caps the copies kept; 0 means 8 GiB. Files used in the
	// last CacheHold are never evicted, so a running query keeps its files.
	CacheBytes int64
	CacheHold  time.Duration
	// Refresh is how old the list of tables may get before a statement
	// that names the lake reads it again; 0 means 5 s. A name the list
	// does not know makes it read at once.
	Refresh time.Duration
	// PartBytes is the data a result part (Flight endpoint) aims at;
	// 0 means 64 MiB. MaxParts caps the parts; 0 means 64.
	PartBytes int64
	MaxParts  int
	// Replicas is how many servers the parts' endpoints list: parts are
	// made a multiple of it, so the load spreads evenly.
	Replicas int
	Logger   *slog.Logger
}

// Catalog is a lake attached to a database.
type Catalog struct {
	opts  Options
	db    *engine.DB
	log   *slog.Logger
	empty string
	cache *fileCache

	mu    sync.Mutex
	views map[string]*view // by viewKey
	// names counts the base views by lower-cased table name, for a
	// quick look at whether a word may name a lake table.
	names      map[string]int
	namespaces map[string]string
	listed     time.Time
	seq        int
	aggregates map[string]bool
}

// view is one DuckDB view over an Iceberg table, or over one of its
// snapshots for time travel.
type view struct {
	ns, name string // the Iceberg namespace and table
	spec     string // the time-travel suffix, or ""
	snapshot int64  // the snapshot a time-travel view reads
	variable string
	schemaID int
	// defined is the view's read_parquet schema map, as created, and sch
	// the Iceberg schema it came from.
	defined string
	sch     *iceberg.Schema
}

// duckName is the view's table name in DuckDB.
func (v *view) duckName() string {
	if v.spec == "" {
		return v.name
	}
	return v.name + "@" + v.spec
}

func (v *view) qualified() string {
	return CatalogName + "." + engine.QuoteIdent(v.ns) + "." + engine.QuoteIdent(v.duckName())
}

func viewKey(ns, name string) string { return strings.ToLower(ns) + "\x00" + strings.ToLower(name) }

// Attach creates the lake catalog in db, lists the lake's tables, and
// installs the hook that plans their scans.
func Attach(ctx context.Context, db *engine.DB, opts Options) (*Catalog, error) {
	if opts.Lake == nil {
		return nil, errors.New("attach lake: no lake")
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 8 << 30
	}
	if opts.CacheHold <= 0 {
		opts.CacheHold = 15 * time.Minute
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.PartBytes <= 0 {
		opts.PartBytes = 64 << 20
	}
	if opts.MaxParts <= 0 {
		opts.MaxParts = 64
	}
	c := &Catalog{opts: opts, db: db, log: opts.Logger, views: map[string]*view{}, names: map[string]int{}, namespaces: map[string]string{}}
	if c.log == nil {
		c.log = slog.Default()
	}
	if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("attach lake: cache directory: %w", err)
	}
	if strings.HasPrefix(opts.Lake.Warehouse(), "s3://") {
		c.cache = newFileCache(filepath.Join(opts.CacheDir, "files"), opts.CacheBytes, opts.CacheHold, c.log)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	c.empty = filepath.Join(opts.CacheDir, "empty.parquet")
	stmts := []string{
		"ATTACH ':memory:' AS " + CatalogName,
		"COPY (SELECT NULL::INTEGER AS __quiver_empty LIMIT 0) TO " + engine.QuoteString(c.empty) + " (FORMAT parquet)",
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("attach lake: %s: %w", s, err)
		}
	}
	if err := c.loadAggregates(ctx, conn); err != nil {
		return nil, err
	}
	c.mu.Lock()
	err = c.list(ctx)
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("attach lake: %w", err)
	}
	db.SetPrepareHook(c.hook)
	return c, nil
}

// loadAggregates reads the names of DuckDB's aggregate functions and of
// user macros, which make a query unsplittable.
func (c *Catalog) loadAggregates(ctx context.Context, conn *engine.Conn) error {
	rows, err := conn.Query(ctx, "SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE function_type = 'aggregate'")
	if err != nil {
		return fmt.Errorf("attach lake: list aggregates: %w", err)
	}
	defer rows.Close()
	c.aggregates = map[string]bool{}
	for rows.Next() {
		col := rows.RecordBatch().Column(0)
		for i := 0; i < col.Len(); i++ {
			c.aggregates[strings.Clone(col.ValueStr(i))] = true
		}
	}
	return rows.Err()
}

// Tables lists the lake's tables as namespace.table, for logs.
func (c *Catalog) Tables() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, v := range c.views {
		if v.spec == "" {
			out = append(out, v.ns+"."+v.name)
		}
	}
	sort.Strings(out)
	return out
}

// maintain runs fn on a pooled connection of the catalog's own, with the
// hook off: views are created and dropped outside any user's transaction.
func (c *Catalog) maintain(ctx context.Context, fn func(conn *engine.Conn) error) error {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return conn.WithoutHook(func() error { return fn(conn) })
}

// list reads the lake's namespaces and tables and brings the views up to
// date: new tables get a view, changed schemas a new one, dropped tables
// lose theirs. c.mu is held.
func (c *Catalog) list(ctx context.Context) error {
	return c.maintain(ctx, func(conn *engine.Conn) error { return c.listOn(ctx, conn) })
}

func (c *Catalog) listOn(ctx context.Context, conn *engine.Conn) error {
	cat := c.opts.Lake.Catalog()
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	seen := map[string]bool{}
	for _, ns := range nss {
		nsName := strings.Join(ns, ".")
		if _, ok := c.namespaces[strings.ToLower(nsName)]; !ok {
			if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+CatalogName+"."+engine.QuoteIdent(nsName)); err != nil {
				return fmt.Errorf("create schema for namespace %s: %w", nsName, err)
			}
			c.namespaces[strings.ToLower(nsName)] = nsName
		}
		for ident, err := range cat.ListTables(ctx, ns) {
			if err != nil {
				return fmt.Errorf("list tables of %s: %w", nsName, err)
			}
			name := ident[len(ident)-1]
			key := viewKey(nsName, name)
			seen[key] = true
			v := c.views[key]
			if v == nil {
				c.seq++
				v = &view{ns: nsName, name: name, variable: fmt.Sprintf("quiver_lake_%d", c.seq), schemaID: -1}
			}
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				return fmt.Errorf("load table %s.%s: %w", nsName, name, err)
			}
			if err := c.define(ctx, conn, v, tbl, tbl.Metadata().CurrentSchema().ID); err != nil {
				return err
			}
			if c.views[key] == nil {
				c.names[strings.ToLower(name)]++
			}
			c.views[key] = v
		}
	}
	for key, v := range c.views {
		base := viewKey(v.ns, v.name)
		if !seen[base] {
			if _, err := conn.Exec(ctx, "DROP VIEW IF EXISTS "+v.qualified()); err != nil {
				return fmt.Errorf("drop view of %s.%s: %w", v.ns, v.name, err)
			}
			delete(c.views, key)
			if v.spec == "" {
				if c.names[strings.ToLower(v.name)]--; c.names[strings.ToLower(v.name)] <= 0 {
					delete(c.names, strings.ToLower(v.name))
				}
			}
		}
	}
	c.listed = time.Now()
	return nil
}

// define (re)creates v's DuckDB view for the schema schemaID of tbl, if
// it changed. c.mu is held.
func (c *Catalog) define(ctx context.Context, conn *engine.Conn, v *view, tbl *table.Table, schemaID int) error {
	if v.schemaID == schemaID && v.defined != "" {
		return nil
	}
	var sch = tbl.Metadata().CurrentSchema()
	for _, s := range tbl.Metadata().Schemas() {
		if s.ID == schemaID {
			sch = s
		}
	}
	cols, err := schemaMap(sch)
	if err != nil {
		return fmt.Errorf("table %s.%s: %w", v.ns, v.name, err)
	}
	sql := "SET VARIABLE " + v.variable + " = [" + engine.QuoteString(c.empty) + "];\n" +
		"CREATE OR REPLACE VIEW " + v.qualified() + " AS SELECT * FROM read_parquet(getvariable(" +
		engine.QuoteString(v.variable) + "), schema = " + cols + ", hive_partitioning = false)"
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create view for %s.%s: %w", v.ns, v.name, err)
	}
	v.schemaID, v.defined, v.sch = schemaID, cols, sch
	return nil
}
