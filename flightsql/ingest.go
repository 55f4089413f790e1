package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/panics"
	"github.com/quiverdata/quiver/ipcx"
)

// The ingest metrics.
var (
	ingestRows = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_flight_ingest_rows_total",
		Help: "Rows committed by bulk ingest (CommandStatementIngest).",
	})
	ingestBytes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_flight_ingest_bytes_total",
		Help: "Arrow buffer bytes received by bulk ingests that succeeded (after decompression).",
	})
	ingestReceived = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_flight_ingest_received_rows_total",
		Help: "Rows received by bulk ingests, whether they committed or not.",
	})
	ingestFailures = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_flight_ingest_failures_total",
		Help: "Bulk ingests that failed and wrote nothing.",
	})
	paramBatchesColumnar = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_flight_param_batches_columnar_total",
		Help: "Prepared-statement executions whose parameter rows ran as one columnar INSERT … SELECT.",
	})
)

// ingestPlan is what a CommandStatementIngest asks for, checked.
type ingestPlan struct {
	table, catalog, schema string
	temporary              bool
	ifMissing              flightsql.TableDefinitionOptionsTableNotExistOption
	ifExists               flightsql.TableDefinitionOptionsTableExistsOption
	txn                    []byte
}

func planIngest(cmd flightsql.StatementIngest) (ingestPlan, error) {
	p := ingestPlan{
		table: cmd.GetTable(), catalog: cmd.GetCatalog(), schema: cmd.GetSchema(),
		temporary: cmd.GetTemporary(), txn: cmd.GetTransactionId(),
	}
	if p.table == "" {
		return p, invalidf("ingest: no table named")
	}
	opts := cmd.GetTableDefinitionOptions()
	if opts == nil {
		return p, invalidf("ingest into %q: table_definition_options is required", p.table)
	}
	p.ifMissing, p.ifExists = opts.GetIfNotExist(), opts.GetIfExists()
	switch p.ifMissing {
	case flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableNotExistOptionFail:
	default:
		return p, invalidf("ingest into %q: if_not_exist must be CREATE or FAIL, got %v", p.table, p.ifMissing)
	}
	switch p.ifExists {
	case flightsql.TableDefinitionOptionsTableExistsOptionFail, flightsql.TableDefinitionOptionsTableExistsOptionAppend,
		flightsql.TableDefinitionOptionsTableExistsOptionReplace:
	default:
		return p, invalidf("ingest into %q: if_exists must be FAIL, APPEND or REPLACE, got %v", p.table, p.ifExists)
	}
	if p.temporary && len(p.txn) == 0 {
		return p, invalidf("ingest into %q: a temporary table lives as long as its transaction here, "+
			"because each call runs on a pooled connection; begin a transaction and ingest in it", p.table)
	}
	return p, nil
}

// DoPutCommandStatementIngest bulk-loads the Arrow stream r into a table,
// columnar: the stream is scanned by DuckDB as it arrives and goes in with
// one INSERT … SELECT, so memory stays bounded by a few batches.
//
// The table definition options decide what happens to the target: created
// from the stream's schema when missing (or refused with NotFound),
// appended to, replaced, or refused with AlreadyExists when it exists.
// Appending matches the stream's columns to the table's by name; a missing
// or extra column is InvalidArgument, and so is a value DuckDB cannot cast
// to its column's type.
//
// The ingest joins the client's transaction when one is named; otherwise
// it runs in one of its own, so a CREATE or REPLACE and the INSERT commit
// together. On any failure, including a client that goes away mid-stream,
// nothing is written and the target is left as it was. A temporary table
// needs a transaction and is dropped when the transaction ends. Backend
// options (CommandStatementIngest.options) are ignored.
func (s *Server) DoPutCommandStatementIngest(ctx context.Context, cmd flightsql.StatementIngest, r flight.MessageReader) (n int64, err error) {
	return s.ingestStream(ctx, cmd, r)
}

// ingestStream is DoPutCommandStatementIngest over any reader: the
// service's own DoPut reads uploads into recycled memory.
func (s *Server) ingestStream(ctx context.Context, cmd flightsql.StatementIngest, r array.RecordReader) (n int64, err error) {
	start := time.Now()
	p, err := planIngest(cmd)
	if err != nil {
		return 0, err
	}
	if len(cmd.GetOptions()) > 0 {
		s.log.Debug("ignoring ingest options quiver does not know", "table", p.table, "options", cmd.GetOptions())
	}
	in := &ingestReader{ctx: ctx, r: r}
	defer func() {
		if err != nil {
			ingestFailures.Inc()
			s.log.Info("ingest failed", "table", p.table, "rows_read", in.rows, "err", err)
			return
		}
		ingestRows.Add(float64(n))
		ingestBytes.Add(float64(in.bytes))
		s.log.Info("ingested", "table", p.table, "rows", n, "bytes", in.bytes,
			"took", time.Since(start).Round(time.Millisecond))
	}()
	schema := r.Schema()
	if schema == nil {
		return 0, invalidf("ingest into %q: read the stream's schema: %v", p.table, r.Err())
	}
	if err := checkIngestSchema(schema); err != nil {
		return 0, invalidf("ingest into %q: %v", p.table, err)
	}
	// An ingest runs in the bulk lane, and gives its run slot back while
	// it waits for the client's next batch. The query timeout does not
	// bound it: a bulk load may take as long as its data takes to come.
	slot, err := s.opts.Admission.Admit(ctx, admit.Bulk)
	if err != nil {
		return 0, s.admitStatus(ctx, err)
	}
	defer slot.Done()
	in.slot = slot
	c, release, err := s.acquire(ctx, p.txn)
	if err != nil {
		return 0, err
	}
	defer release()
	own := len(p.txn) == 0
	if own {
		if _, err := c.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
			return 0, toStatus(err)
		}
	}
	n, err = s.ingest(ctx, c, p, schema, in)
	if err != nil {
		if own {
			c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return 0, err
	}
	if own {
		if _, err := c.Exec(ctx, "COMMIT"); err != nil {
			return 0, toStatus(fmt.Errorf("ingest into %q: commit: %w", p.table, err))
		}
	}
	return n, nil
}

// ingest prepares the target and inserts the stream, on c inside a
// transaction.
func (s *Server) ingest(ctx context.Context, c *engine.Conn, p ingestPlan, schema *arrow.Schema, in *ingestReader) (int64, error) {
	tgt, err := resolveTarget(ctx, c, p)
	if err != nil {
		return 0, err
	}
	if !p.temporary {
		// DuckDB's Arrow scan registers a view through the current
		// catalog; once a transaction has written to another catalog the
		// registration fails and aborts the transaction. Writing to the
		// target's catalog as the current one avoids that. The next call
		// on this connection re-applies its session's defaults.
		if err := c.Use(ctx, tgt.catalog, tgt.schema); err != nil {
			return 0, toStatus(fmt.Errorf("ingest into %s: %w", tgt.name, err))
		}
	}
	if tgt.isView {
		return 0, invalidf("ingest into %s: it is a view; ingest needs a table", tgt.name)
	}
	var columns []string
	switch {
	case tgt.exists && p.ifExists == flightsql.TableDefinitionOptionsTableExistsOptionFail:
		return 0, status.Errorf(codes.AlreadyExists, "ingest into %s: the table already exists; "+
			"ingest with if_exists APPEND or REPLACE (quiver load --mode append, replace or create_append)", tgt.name)
	case !tgt.exists && p.ifMissing == flightsql.TableDefinitionOptionsTableNotExistOptionFail:
		return 0, status.Errorf(codes.NotFound, "ingest into %s: the table does not exist; "+
			"ingest with if_not_exist CREATE (quiver load --mode create or create_append)", tgt.name)
	case tgt.exists && p.ifExists == flightsql.TableDefinitionOptionsTableExistsOptionAppend:
		if columns, err = matchColumns(schema, tgt.columns); err != nil {
			return 0, invalidf("ingest into %s: %v", tgt.name, err)
		}
		if err := s.authorizeAppend(ctx, c, tgt.name, columns); err != nil {
			return 0, err
		}
	default: // create, or replace
		replace := tgt.exists
		ddl, err := createTableSQL(tgt.name, p.temporary, replace, schema)
		if err != nil {
			return 0, invalidf("ingest into %s: %v", tgt.name, err)
		}
		if err := s.execAuthorized(ctx, c, ddl); err != nil {
			return 0, err
		}
		if p.temporary {
			s.trackTemp(p.txn, tgt.name)
		}
	}
	n, err := c.InsertArrow(ctx, tgt.name, columns, in)
	if err != nil {
		if pe := panics.As(err); pe != nil {
			return 0, pe // reading the upload panicked (on a DuckDB thread)
		}
		if rerr := in.Err(); rerr != nil {
			if _, grpcErr := status.FromError(rerr); !grpcErr && ctx.Err() == nil && !errors.Is(rerr, context.Canceled) {
				// Not the call failing: the client sent something that is not Arrow.
				return 0, invalidf("ingest into %s: the client's stream is malformed after %d rows: %v", tgt.name, in.rows, rerr)
			}
			return 0, toStatus(fmt.Errorf("ingest into %s: read the client's stream after %d rows: %w", tgt.name, in.rows, rerr))
		}
		if ctx.Err() != nil {
			return 0, toStatus(fmt.Errorf("ingest into %s: %w", tgt.name, ctx.Err()))
		}
		msg := err.Error()
		if engine.KindOf(err) == engine.KindInvalid && tgt.exists {
			msg += typeHint(schema, tgt.columns)
		}
		return 0, toStatus(&engine.Error{Kind: engine.KindOf(err), Msg: fmt.Sprintf("ingest into %s: %s", tgt.name, msg)})
	}
	return n, nil
}

// target is the resolved table an ingest writes.
type target struct {
	name            string // quoted, fully qualified
	catalog, schema string
	exists          bool
	isView          bool
	columns         []tableColumn // when exists
}

type tableColumn struct{ name, typ string }

// resolveTarget qualifies the table with the command's catalog and schema,
// or the connection's defaults (the session's), and looks it up.
func resolveTarget(ctx context.Context, c *engine.Conn, p ingestPlan) (target, error) {
	catalog, schema := p.catalog, p.schema
	if p.temporary {
		catalog, schema = "temp", "main" // the spec: temporary ignores catalog and schema
	}
	if catalog == "" || schema == "" {
		curCatalog, curSchema, err := currentNamespace(ctx, c)
		if err != nil {
			return target{}, err
		}
		switch {
		case catalog == "":
			catalog = curCatalog
			if schema == "" {
				schema = curSchema
			}
		case schema == "":
			schema = "main"
		}
	}
	if !p.temporary && strings.EqualFold(catalog, "temp") {
		return target{}, invalidf("ingest into %q: catalog temp holds temporary tables; ingest with temporary set, in a transaction", p.table)
	}
	t := target{
		name:    engine.QuoteIdent(catalog) + "." + engine.QuoteIdent(schema) + "." + engine.QuoteIdent(p.table),
		catalog: catalog, schema: schema,
	}
	rows, err := c.Query(ctx, `
		SELECT kind, column_name, data_type FROM (
			SELECT 'table' AS kind, column_name, data_type, column_index AS pos FROM duckdb_columns()
			WHERE lower(database_name) = lower(?) AND lower(schema_name) = lower(?) AND lower(table_name) = lower(?)
			  AND table_oid IN (SELECT table_oid FROM duckdb_tables())
			UNION ALL
			SELECT 'view', NULL, NULL, 0 FROM duckdb_views()
			WHERE lower(database_name) = lower(?) AND lower(schema_name) = lower(?) AND lower(view_name) = lower(?)
		) ORDER BY pos`,
		catalog, schema, p.table, catalog, schema, p.table)
	if err != nil {
		return t, toStatus(fmt.Errorf("ingest into %s: look up the table: %w", t.name, err))
	}
	defer rows.Close()
	for rows.Next() {
		rec := rows.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			if rec.Column(0).ValueStr(i) == "view" {
				t.isView = true
				continue
			}
			t.exists = true
			t.columns = append(t.columns, tableColumn{name: rec.Column(1).ValueStr(i), typ: rec.Column(2).ValueStr(i)})
		}
	}
	if err := rows.Err(); err != nil {
		return t, toStatus(fmt.Errorf("ingest into %s: look up the table: %w", t.name, err))
	}
	return t, nil
}

func currentNamespace(ctx context.Context, c *engine.Conn) (catalog, schema string, err error) {
	rows, err := c.Query(ctx, "SELECT current_database(), current_schema()")
	if err != nil {
		return "", "", toStatus(err)
	}
	defer rows.Close()
	if !rows.Next() {
		return "", "", status.Errorf(codes.Internal, "read the current schema: %v", rows.Err())
	}
	rec := rows.RecordBatch()
	return rec.Column(0).ValueStr(0), rec.Column(1).ValueStr(0), nil
}

// checkIngestSchema refuses streams a table cannot be made of: no columns,
// or names that are empty or repeated (DuckDB names are case-insensitive).
func checkIngestSchema(schema *arrow.Schema) error {
	if schema.NumFields() == 0 {
		return errors.New("the stream has no columns")
	}
	seen := make(map[string]bool, schema.NumFields())
	for i, f := range schema.Fields() {
		if f.Name == "" {
			return fmt.Errorf("column %d has no name", i+1)
		}
		key := strings.ToLower(f.Name)
		if seen[key] {
			return fmt.Errorf("column %q appears twice (names are case-insensitive)", f.Name)
		}
		seen[key] = true
	}
	return nil
}

// matchColumns maps the stream's columns to the table's by name, case-
// insensitively, and returns the table's names in stream order. The stream
// must have exactly the table's columns.
func matchColumns(schema *arrow.Schema, cols []tableColumn) ([]string, error) {
	byName := make(map[string]string, len(cols))
	for _, c := range cols {
		byName[strings.ToLower(c.name)] = c.name
	}
	out := make([]string, 0, schema.NumFields())
	var extra []string
	for _, f := range schema.Fields() {
		name, ok := byName[strings.ToLower(f.Name)]
		if !ok {
			extra = append(extra, f.Name)
			continue
		}
		delete(byName, strings.ToLower(f.Name))
		out = append(out, name)
	}
	var missing []string
	for _, c := range cols {
		if _, ok := byName[strings.ToLower(c.name)]; ok {
			missing = append(missing, c.name)
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return out, nil
	}
	msg := fmt.Sprintf("the stream's %d columns do not match the table's %d", schema.NumFields(), len(cols))
	if len(extra) > 0 {
		msg += fmt.Sprintf("; not in the table: %s", strings.Join(extra, ", "))
	}
	if len(missing) > 0 {
		msg += fmt.Sprintf("; missing from the stream: %s", strings.Join(missing, ", "))
	}
	return nil, errors.New(msg)
}

// typeHint names the columns whose stream type differs from the table's,
// to explain a cast that failed.
func typeHint(schema *arrow.Schema, cols []tableColumn) string {
	norm := func(s string) string {
		return strings.ToUpper(strings.NewReplacer(`"`, "", " ", "").Replace(s))
	}
	byName := make(map[string]string, len(cols))
	for _, c := range cols {
		byName[strings.ToLower(c.name)] = c.typ
	}
	var diffs []string
	for _, f := range schema.Fields() {
		want, ok := byName[strings.ToLower(f.Name)]
		if !ok {
			continue
		}
		got, err := columnSQL(f.Type)
		if err != nil || norm(got) != norm(want) {
			diffs = append(diffs, fmt.Sprintf("%s (stream %s, table %s)", f.Name, f.Type, want))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return "; columns whose types differ from the table's: " + strings.Join(diffs, ", ")
}

// execAuthorized prepares one statement, asks Options.Authorize, and runs
// it.
func (s *Server) execAuthorized(ctx context.Context, c *engine.Conn, sql string) error {
	st, err := c.Prepare(ctx, sql)
	if err != nil {
		return toStatus(err)
	}
	defer st.Close()
	if err := s.authorize(ctx, st); err != nil {
		return err
	}
	_, err = st.Exec(ctx)
	return toStatus(err)
}

// authorizeAppend asks Options.Authorize about an INSERT into the table,
// with a statement of the same kind that is prepared and never run.
func (s *Server) authorizeAppend(ctx context.Context, c *engine.Conn, table string, columns []string) error {
	if s.opts.Authorize == nil {
		return nil
	}
	quoted := make([]string, len(columns))
	for i, col := range columns {
		quoted[i] = engine.QuoteIdent(col)
	}
	list := strings.Join(quoted, ", ")
	st, err := c.Prepare(ctx, fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE false", table, list, list, table))
	if err != nil {
		return toStatus(err)
	}
	defer st.Close()
	return s.authorize(ctx, st)
}

// trackTemp remembers a temporary table made in a transaction, so the
// transaction's end drops it before its connection goes back to the pool.
// The caller holds the transaction (acquire locked it).
func (s *Server) trackTemp(txnID []byte, name string) {
	s.mu.Lock()
	t := s.txns[string(txnID)]
	s.mu.Unlock()
	if t != nil {
		t.temps = append(t.temps, name)
	}
}

// release drops the transaction's temporary tables, which would otherwise
// outlive it on a pooled connection where other sessions could read them,
// and gives the connection back. The caller holds t.mu.
func (t *txn) release() {
	for _, name := range t.temps {
		t.conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+name)
	}
	t.temps = nil
	t.conn.Release()
	t.lease.Release()
}

// ingestReader is the client's DoPut stream as the array.RecordReader
// DuckDB's Arrow scan pulls from. It counts what passed through and stops
// as soon as the call's context ends.
type ingestReader struct {
	ctx         context.Context
	slot        *admit.Slot // paused while the client's next batch comes
	r           array.RecordReader
	rows, bytes int64
	err         error
}

func (in *ingestReader) Schema() *arrow.Schema { return in.r.Schema() }

func (in *ingestReader) Next() bool {
	if in.err != nil {
		return false
	}
	if err := in.ctx.Err(); err != nil {
		in.err = err
		return false
	}
	in.slot.Pause()
	more := in.r.Next()
	if err := in.slot.Resume(in.ctx); err != nil {
		in.err = err
		return false
	}
	if !more {
		return false
	}
	rec := in.r.RecordBatch()
	in.rows += rec.NumRows()
	ingestReceived.Add(float64(rec.NumRows()))
	for _, col := range rec.Columns() {
		in.bytes += ipcx.ArrayBytes(col.Data())
	}
	return true
}

func (in *ingestReader) RecordBatch() arrow.RecordBatch { return in.r.RecordBatch() }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (in *ingestReader) Record() arrow.RecordBatch { return in.r.RecordBatch() }

// Err is the stream's error: the client went away, or sent a malformed
// message. The end of the stream is not an error.
func (in *ingestReader) Err() error {
	if in.err != nil {
		return in.err
	}
	if err := in.r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func (in *ingestReader) Retain()  { in.r.Retain() }
func (in *ingestReader) Release() { in.r.Release() }
