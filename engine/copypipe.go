package engine

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// A COPY (query) TO whose query ends in a large LIMIT runs on one thread:
// while insertion order is kept, DuckDB plans the LIMIT as a streaming
// limit that only one thread may run, and the whole pipeline into the
// COPY, the file format's encoding included, runs with it. Measured on
// 10M rows of twenty short VARCHAR columns into uncompressed Parquet, on
// two cores (BenchmarkCopy_Str20Limit): 40 s as one statement, 26 s piped
// (below), where the query streams from its own connection and a COPY
// over an Arrow scan of that stream encodes on every thread, in the
// stream's order. A query that DuckDB already runs in parallel is faster
// as one statement (20-23 s against 26 s without the LIMIT), so only the
// first kind is piped.

// copyPipe is a COPY run as its query, streamed from the statement's
// connection, into a COPY of an Arrow scan on another connection.
type copyPipe struct {
	query *Stmt
	copy  func(view string) string
}

// PipeCopy makes s, a COPY (query) TO without parameters, run piped when
// DuckDB would run it on one thread (see above): query streams from s's
// connection, which keeps its session and transaction, and copyTo(view),
// the same COPY of the Arrow scan view, writes the file from another
// connection. It reports whether s will run piped. Its result is what the
// COPY's would be: the rows written.
func (s *Stmt) PipeCopy(ctx context.Context, query string, copyTo func(view string) string) (bool, error) {
	if s.NumParams() > 0 {
		return false, nil
	}
	one, err := s.c.oneThreadPipeline(ctx, query)
	if err != nil || !one {
		return false, err
	}
	q, err := s.c.Prepare(ctx, query)
	if err != nil {
		return false, err
	}
	if s.pipe != nil {
		s.pipe.query.Close()
	}
	s.pipe = &copyPipe{query: q, copy: copyTo}
	return true, nil
}

// oneThreadPipeline reports whether the pipeline at the top of query's
// plan, the one that would feed a COPY, passes through DuckDB's streaming
// limit, which runs on one thread while insertion order is kept. It walks
// down from the plan's root through the operators that stream a single
// child into the same pipeline.
func (c *Conn) oneThreadPipeline(ctx context.Context, query string) (bool, error) {
	rows, err := c.Query(ctx, "EXPLAIN (FORMAT json) "+query)
	if err != nil {
		return false, fmt.Errorf("plan the export's query: %w", err)
	}
	defer rows.Close()
	var plan string
	for rows.Next() {
		rec := rows.RecordBatch()
		if rec.NumCols() < 2 || rec.NumRows() == 0 {
			continue
		}
		if col, ok := rec.Column(1).(*array.String); ok {
			plan = col.Value(0)
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("plan the export's query: %w", err)
	}
	return streamingLimitOnTop(plan)
}

// streamingLimitOnTop reads a JSON plan (see oneThreadPipeline).
func streamingLimitOnTop(plan string) (bool, error) {
	roots, err := duckdbsql.ReadExplain([]byte(plan))
	if err != nil {
		return false, fmt.Errorf("read the export query's plan: %w", err)
	}
	if len(roots) != 1 {
		return false, nil
	}
	n := roots[0]
	for {
		switch n.Name {
		case "STREAMING_LIMIT":
			return true, nil
		case "PROJECTION", "FILTER":
			if len(n.Children) != 1 {
				return false, nil
			}
			n = n.Children[0]
		default:
			return false, nil
		}
	}
}

// runPipe runs s's piped COPY and returns the rows it wrote.
func (s *Stmt) runPipe(ctx context.Context) (int64, error) {
	other, err := s.c.db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("open a connection for the COPY: %w", err)
	}
	defer other.Release()
	copiesPiped.Inc()
	rows, err := s.pipe.query.Query(ctx)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n, err := other.ExecArrow(ctx, rows, s.pipe.copy)
	if err != nil {
		if qerr := rows.Err(); qerr != nil {
			return 0, qerr // the query's own failure, as the COPY would give it
		}
		return 0, err
	}
	if got := rows.RowCount(); got != n {
		return 0, errorf(KindInternal, "the COPY wrote %d rows of the %d its query gave", n, got)
	}
	return n, nil
}

// pipeResult is the piped COPY's result as a query's: one row, the rows
// written, in the column the COPY's own result has.
func (s *Stmt) pipeResult(ctx context.Context, transient bool) (*Rows, error) {
	n, err := s.runPipe(ctx)
	if err = s.finish(ctx, err); err != nil {
		return nil, err
	}
	name := "Count"
	if schema, err := s.Schema(); err == nil && schema.NumFields() == 1 {
		name = schema.Field(0).Name
	}
	return s.c.query(ctx, transient, "SELECT ?::BIGINT AS "+QuoteIdent(name), n)
}
