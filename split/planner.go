package split

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// Defaults of the Planner's knobs.
const (
	// DefaultMinRows is the smallest table worth splitting. A million rows
	// stream in about a tenth of a second on one connection; below that,
	// the extra round trips of several endpoints cost more than they save.
	DefaultMinRows = 1_000_000
	// DefaultRowsPerPart is the fewest rows a part is made of.
	DefaultRowsPerPart = 1_000_000
	// DefaultMaxParts caps the endpoints of one query.
	DefaultMaxParts = 64
)

// Planner splits a scan of one large table of DB into row-id ranges. It
// implements flightsql.Planner. Every replica must configure it alike. A
// Planner is safe for concurrent use; do not copy one once used.
type Planner struct {
	// DB is the database the planner's queries run on: the server's own.
	// Bind takes a connection from it to rewrite the SQL of a part.
	DB *engine.DB
	// MinRows is the row count from which a table is split (its
	// estimated_size in duckdb_tables(), which counts deleted rows not yet
	// compacted). Zero means DefaultMinRows.
	MinRows int64
	// RowsPerPart is the fewest rows of a part; a table of n rows makes
	// n/RowsPerPart parts. Zero means DefaultRowsPerPart.
	RowsPerPart int64
	// MaxParts caps the parts of one query. Zero means DefaultMaxParts.
	MaxParts int
	// AskedRows, when set, returns the rows per part the caller of Plan
	// asked for (a Flight SQL session option): when positive it stands
	// for both MinRows and RowsPerPart in that plan.
	AskedRows func(context.Context) int64

	// scalars caches the names of functions found scalar, for Bind, which
	// checks a ticket's SQL on every fetch: asking duckdb_functions() takes
	// some 20 ms. Plan always asks.
	mu      sync.Mutex
	scalars map[string]bool
}

// maxCachedScalars bounds Planner.scalars, which forged tickets could
// otherwise grow.
const maxCachedScalars = 4096

// part is what a ticket carries for one part: the row-id range
// [Lo, Hi), either end open when absent.
type part struct {
	Lo *int64 `json:"lo,omitempty"`
	Hi *int64 `json:"hi,omitempty"`
}

// ErrNotSplittable is returned by Bind for SQL that is not a pure scan of
// one table, or that DuckDB does not print back faithfully.
var ErrNotSplittable = errors.New("not a plain scan of one table")

// Plan returns the parts of sql, or nil when sql is not a pure scan of one
// table of at least MinRows rows. c must have the session's catalog and
// schema applied; Plan only reads.
func (p *Planner) Plan(ctx context.Context, c *engine.Conn, sql string) ([]json.RawMessage, error) {
	doc, err := c.SyntaxTree(ctx, sql)
	if err != nil {
		// Not a SELECT, or not one the json extension handles.
		return nil, ctx.Err()
	}
	sc, ok := scan(doc)
	if !ok {
		return nil, nil
	}
	rows, err := estimatedRows(ctx, c, sc.table)
	if err != nil {
		return nil, err
	}
	minRows, perPart := p.minRows(), p.rowsPerPart()
	if p.AskedRows != nil {
		if n := p.AskedRows(ctx); n > 0 {
			minRows, perPart = n, n
		}
	}
	if rows < minRows {
		return nil, nil
	}
	k := min(rows/perPart, int64(p.maxParts()))
	if k < 2 {
		return nil, nil
	}
	if ok, err := scalarOnly(ctx, c, sc.functions); err != nil || !ok {
		return nil, err
	}
	p.rememberScalars(sc.functions)
	if ok, err := isTable(ctx, c, sc.table); err != nil || !ok {
		return nil, err
	}
	parts := ranges(rows, k)
	// The part SQL must parse back to the tree it came from, and give the
	// columns the whole query gives.
	partSQL, err := rewrite(ctx, c, doc, parts[0])
	if errors.Is(err, ErrNotSplittable) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if same, err := sameColumns(ctx, c, sql, partSQL); err != nil || !same {
		return nil, err
	}
	out := make([]json.RawMessage, len(parts))
	for i, pt := range parts {
		if out[i], err = json.Marshal(pt); err != nil {
			return nil, fmt.Errorf("encode part: %w", err)
		}
	}
	return out, nil
}

// Bind returns the SQL that runs one part of sql: sql with the part's
// row-id range added to its WHERE clause. The part comes from a client's
// ticket, so it is checked, and so is the shape of sql; an error means the
// ticket is not one Plan made.
func (p *Planner) Bind(ctx context.Context, sql string, raw json.RawMessage) (context.Context, string, error) {
	pt, err := decodePart(raw)
	if err != nil {
		return nil, "", err
	}
	if p.DB == nil {
		return nil, "", errors.New("split planner has no database")
	}
	c, err := p.DB.Conn(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("get connection: %w", err)
	}
	defer c.Release()
	doc, err := c.SyntaxTree(ctx, sql)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNotSplittable, err)
	}
	sc, ok := scan(doc)
	if !ok {
		return nil, "", ErrNotSplittable
	}
	if unknown := p.unknownScalars(sc.functions); len(unknown) > 0 {
		ok, err := scalarOnly(ctx, c, unknown)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, "", fmt.Errorf("%w: it calls an aggregate, window or table function or a macro", ErrNotSplittable)
		}
		p.rememberScalars(unknown)
	}
	partSQL, err := rewrite(ctx, c, doc, pt)
	if err != nil {
		return nil, "", err
	}
	return ctx, partSQL, nil
}

// unknownScalars returns the names not known to be scalar functions.
func (p *Planner) unknownScalars(names []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, n := range names {
		if !p.scalars[n] {
			out = append(out, n)
		}
	}
	return out
}

func (p *Planner) rememberScalars(names []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.scalars == nil || len(p.scalars)+len(names) > maxCachedScalars {
		p.scalars = map[string]bool{}
	}
	for _, n := range names {
		p.scalars[n] = true
	}
}

// decodePart reads a part strictly: known fields, one JSON value, and a
// range that is not empty.
func decodePart(raw json.RawMessage) (part, error) {
	var pt part
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pt); err != nil {
		return part{}, fmt.Errorf("malformed row-id part: %v", err)
	}
	if dec.More() {
		return part{}, errors.New("malformed row-id part: trailing data")
	}
	switch {
	case pt.Lo == nil && pt.Hi == nil:
		return part{}, errors.New("row-id part has neither bound")
	case pt.Lo != nil && *pt.Lo < 0, pt.Hi != nil && *pt.Hi < 0:
		return part{}, errors.New("row-id part has a negative bound")
	case pt.Lo != nil && pt.Hi != nil && *pt.Lo >= *pt.Hi:
		return part{}, errors.New("row-id part is empty")
	}
	return pt, nil
}

// ranges cuts [0, rows) into k ranges of about equal size, the first open
// below and the last open above.
func ranges(rows, k int64) []part {
	size := (rows + k - 1) / k
	parts := make([]part, k)
	for i := range k {
		if i > 0 {
			lo := i * size
			parts[i].Lo = &lo
		}
		if i < k-1 {
			hi := (i + 1) * size
			parts[i].Hi = &hi
		}
	}
	return parts
}

func (p *Planner) minRows() int64 {
	if p.MinRows > 0 {
		return p.MinRows
	}
	return DefaultMinRows
}

func (p *Planner) rowsPerPart() int64 {
	if p.RowsPerPart > 0 {
		return p.RowsPerPart
	}
	return DefaultRowsPerPart
}

func (p *Planner) maxParts() int {
	if p.MaxParts > 0 {
		return p.MaxParts
	}
	return DefaultMaxParts
}

// estimatedRows is the largest estimated_size of the tables the name may
// denote. It only sets how many parts there are: the ranges are open at
// both ends, so a wrong estimate never loses a row.
func estimatedRows(ctx context.Context, c *engine.Conn, t duckdbsql.BaseTable) (int64, error) {
	const q = `SELECT coalesce(max(estimated_size), 0)::BIGINT FROM duckdb_tables()
		WHERE lower(table_name) = lower($1)
		AND ($2 = '' OR lower(database_name) = lower($2))
		AND ($3 = '' OR lower(schema_name) = lower($3) OR ($2 = '' AND lower(database_name) = lower($3)))`
	n, err := c.QueryInt64(ctx, q, t.Table, t.Catalog, t.Schema)
	if err != nil {
		return 0, fmt.Errorf("estimate rows of %s: %w", tableSQL(t), err)
	}
	return n, nil
}

// scalarOnly reports whether every function named is a scalar function in
// every overload DuckDB knows: not an aggregate, window, table function or
// macro (a macro may hide any of them). names must be distinct and lower
// case.
func scalarOnly(ctx context.Context, c *engine.Conn, names []string) (bool, error) {
	if len(names) == 0 {
		return true, nil
	}
	args := make([]any, len(names))
	marks := make([]string, len(names))
	for i, n := range names {
		args[i], marks[i] = n, fmt.Sprintf("$%d", i+1)
	}
	q := `SELECT count(DISTINCT lower(function_name)) FILTER (WHERE function_type = 'scalar') * 2
			+ (count(*) FILTER (WHERE function_type <> 'scalar') > 0)::BIGINT
		FROM duckdb_functions() WHERE lower(function_name) IN (` + strings.Join(marks, ", ") + `)`
	n, err := c.QueryInt64(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("look up functions: %w", err)
	}
	// Twice the names found as scalar, plus one if any is also something
	// else.
	return n == 2*int64(len(names)), nil
}

// isTable reports whether the name denotes a table of DuckDB's (a view,
// a replacement scan of a file or a table with a column of its own called
// rowid does not qualify): preparing SELECT rowid FROM it succeeds, and no
// column of it is named rowid.
func isTable(ctx context.Context, c *engine.Conn, t duckdbsql.BaseTable) (bool, error) {
	st, err := c.Prepare(ctx, "SELECT * FROM "+tableSQL(t))
	if err != nil {
		return false, nil
	}
	schema, err := st.Schema()
	st.Close()
	if err != nil {
		return false, nil
	}
	for _, f := range schema.Fields() {
		if strings.EqualFold(f.Name, "rowid") {
			return false, nil
		}
	}
	st, err = c.Prepare(ctx, "SELECT rowid FROM "+tableSQL(t))
	if err != nil {
		return false, nil
	}
	st.Close()
	return true, nil
}

// sameColumns reports whether two queries have the same result columns.
func sameColumns(ctx context.Context, c *engine.Conn, a, b string) (bool, error) {
	sa, err := columns(ctx, c, a)
	if err != nil {
		return false, nil
	}
	sb, err := columns(ctx, c, b)
	if err != nil {
		return false, nil
	}
	return sa == sb, nil
}

func columns(ctx context.Context, c *engine.Conn, sql string) (string, error) {
	st, err := c.Prepare(ctx, sql)
	if err != nil {
		return "", err
	}
	defer st.Close()
	schema, err := st.Schema()
	if err != nil {
		return "", err
	}
	return schema.String(), nil
}

// queryStrings runs a query returning one row of VARCHAR columns.
func queryStrings(ctx context.Context, c *engine.Conn, sql string, args ...any) ([]string, error) {
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("no row")
	}
	rec := rows.RecordBatch()
	out := make([]string, rec.NumCols())
	for i := range out {
		col, ok := rec.Column(i).(*array.String)
		if !ok || col.Len() == 0 || col.IsNull(0) {
			return nil, fmt.Errorf("column %d: want a VARCHAR, got %s", i, rec.Column(i).DataType())
		}
		out[i] = strings.Clone(col.Value(0)) // the batch is recycled on Close
	}
	return out, nil
}
