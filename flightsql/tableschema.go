package flightsql

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/quiverdata/quiver/engine"
)

// tablesWithSchemas answers GetTables with include_schema. The listing is
// read whole first: each table's schema is then found on the same
// connection, which is the one whose temporary tables the listing shows.
// A listing holds one row per table, so it stays small.
func (s *Server) tablesWithSchemas(ctx context.Context, query string, args []any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	c, release, err := s.acquire(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	streaming := false // the goroutine owns the connection from then on
	defer func() {
		if !streaming {
			release()
		}
	}()
	recs, err := readAll(ctx, c, schema_ref.Tables, query, args...)
	if err != nil {
		return nil, nil, err
	}
	cols, err := columnInfos(ctx, c, args[:3])
	if err != nil {
		releaseRecs(recs)
		return nil, nil, err
	}
	ch := make(chan flight.StreamChunk, 1)
	streaming = true
	go func() {
		defer close(ch)
		defer release()
		defer recoverChunk(ctx, ch)
		for i, rec := range recs {
			out := s.withSchemas(ctx, c, rec, cols)
			rec.Release()
			if !send(ctx, ch, out) {
				releaseRecs(recs[i+1:])
				return
			}
		}
	}()
	return schema_ref.TablesWithIncludedSchema, ch, nil
}

// readAll runs a metadata query to the end and returns its batches under
// schema.
func readAll(ctx context.Context, c *engine.Conn, schema *arrow.Schema, query string, args ...any) ([]arrow.RecordBatch, error) {
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		return nil, toStatus(err)
	}
	defer rows.Close()
	if err := sameTypes(rows.Schema(), schema); err != nil {
		return nil, err
	}
	var recs []arrow.RecordBatch
	for rows.Next() {
		rec := rows.RecordBatch()
		recs = append(recs, array.NewRecordBatch(schema, rec.Columns(), rec.NumRows()))
	}
	if err := rows.Err(); err != nil {
		releaseRecs(recs)
		return nil, toStatus(err)
	}
	return recs, nil
}

// withSchemas adds the table_schema column to a batch of the listing.
func (s *Server) withSchemas(ctx context.Context, c *engine.Conn, rec arrow.RecordBatch, cols map[tableKey][]columnInfo) arrow.RecordBatch {
	catalogs := rec.Column(0).(*array.String)
	schemas := rec.Column(1).(*array.String)
	tables := rec.Column(2).(*array.String)
	types := rec.Column(3).(*array.String)
	b := array.NewBinaryBuilder(s.mem, arrow.BinaryTypes.Binary)
	defer b.Release()
	for i := 0; i < int(rec.NumRows()); i++ {
		key := tableKey{catalogs.Value(i), schemas.Value(i), tables.Value(i)}
		sch, err := tableSchema(ctx, c, key, types.Value(i) == "VIEW", cols[key])
		if err != nil {
			// A view whose query no longer binds (a table it reads was
			// dropped) has no schema; list it with an empty one rather
			// than fail the whole listing.
			s.log.Warn("table schema unavailable", "table", key.String(), "err", err)
			sch = arrow.NewSchema(nil, nil)
		}
		b.Append(flight.SerializeSchema(sch, s.mem))
	}
	col := b.NewArray()
	defer col.Release()
	arrs := append(append([]arrow.Array{}, rec.Columns()...), col)
	return array.NewRecordBatch(schema_ref.TablesWithIncludedSchema, arrs, rec.NumRows())
}

// tableSchema is the Arrow schema of SELECT * from the table, with what
// the catalog knows about its columns added.
func tableSchema(ctx context.Context, c *engine.Conn, key tableKey, view bool, cols []columnInfo) (*arrow.Schema, error) {
	st, err := c.Prepare(ctx, "SELECT * FROM "+quoteTable(key.catalog, key.schema, key.table))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	sch, err := st.Schema()
	if err != nil {
		return nil, err
	}
	fields := sch.Fields()
	if len(cols) != len(fields) {
		return sch, nil // the catalog changed under us; keep the plain schema
	}
	for i := range fields {
		fields[i] = cols[i].decorate(fields[i], key, view)
	}
	return arrow.NewSchema(fields, nil), nil
}

// quoteTable is the fully qualified, quoted name of a table.
func quoteTable(catalog, schema, table string) string {
	return engine.QuoteIdent(catalog) + "." + engine.QuoteIdent(schema) + "." + engine.QuoteIdent(table)
}

// tableKey names a table.
type tableKey struct{ catalog, schema, table string }

func (k tableKey) String() string { return k.catalog + "." + k.schema + "." + k.table }

// columnInfo is what duckdb_columns() says about a column.
type columnInfo struct {
	name      string
	typeName  string
	nullable  bool
	def       string
	hasDef    bool
	precision int32
	scale     int32
	decimal   bool
	comment   string
}

// decorate sets a field's nullability from the catalog and adds Flight
// SQL's column metadata, which JDBC's getColumns reports.
func (ci columnInfo) decorate(f arrow.Field, key tableKey, view bool) arrow.Field {
	if ci.name != f.Name {
		return f
	}
	md := flightsql.NewColumnMetadataBuilder().
		CatalogName(key.catalog).SchemaName(key.schema).TableName(key.table).
		TypeName(ci.typeName).
		IsAutoIncrement(ci.hasDef && strings.HasPrefix(strings.ToLower(ci.def), "nextval(")).
		IsCaseSensitive(isString(f.Type)).
		IsReadOnly(view).
		IsSearchable(true)
	if ci.decimal {
		md.Precision(ci.precision).Scale(ci.scale)
	}
	if ci.comment != "" {
		md.Remarks(ci.comment)
	}
	f.Nullable = ci.nullable
	f.Metadata = md.Metadata()
	return f
}

func isString(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.StringType, *arrow.LargeStringType:
		return true
	case *arrow.DictionaryType:
		return isString(t.ValueType)
	}
	return false
}

// columnInfos reads the columns of the tables a listing may hold: the
// listing's catalog, schema and table filters, args[:3], apply.
func columnInfos(ctx context.Context, c *engine.Conn, args []any) (map[tableKey][]columnInfo, error) {
	rows, err := c.Query(ctx, `
		SELECT database_name, schema_name, table_name, column_name, data_type, is_nullable,
		       column_default, numeric_precision::INTEGER, numeric_scale::INTEGER,
		       data_type LIKE 'DECIMAL(%', comment
		FROM duckdb_columns()
		WHERE database_name <> 'system'
		  AND ($1::VARCHAR IS NULL OR lower(database_name) = lower($1))
		  AND ($2::VARCHAR IS NULL OR schema_name ILIKE $2 ESCAPE '\')
		  AND ($3::VARCHAR IS NULL OR table_name ILIKE $3 ESCAPE '\')
		ORDER BY database_name, schema_name, table_name, column_index`, args...)
	if err != nil {
		return nil, toStatus(err)
	}
	defer rows.Close()
	out := map[tableKey][]columnInfo{}
	for rows.Next() {
		rec := rows.RecordBatch()
		str := func(col, i int) string { return rec.Column(col).(*array.String).Value(i) }
		for i := 0; i < int(rec.NumRows()); i++ {
			key := tableKey{str(0, i), str(1, i), str(2, i)}
			ci := columnInfo{
				name:     str(3, i),
				typeName: str(4, i),
				nullable: rec.Column(5).(*array.Boolean).Value(i),
				hasDef:   rec.Column(6).IsValid(i),
				decimal:  rec.Column(9).(*array.Boolean).Value(i),
			}
			if ci.hasDef {
				ci.def = str(6, i)
			}
			if rec.Column(7).IsValid(i) {
				ci.precision = rec.Column(7).(*array.Int32).Value(i)
			}
			if rec.Column(8).IsValid(i) {
				ci.scale = rec.Column(8).(*array.Int32).Value(i)
			}
			if rec.Column(10).IsValid(i) {
				ci.comment = str(10, i)
			}
			out[key] = append(out[key], ci)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, toStatus(err)
	}
	return out, nil
}
