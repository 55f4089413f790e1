package flightsql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/engine"
)

// Metadata commands answer from DuckDB's catalog functions. Their
// FlightInfo ticket is the command itself, which arrow-go's router decodes
// and hands to the DoGet* method; every result has exactly the schema in
// schema_ref.
//
// Names: DuckDB resolves identifiers case-insensitively (GetSqlInfo says
// so), so catalog, schema and table names given to these commands match
// case-insensitively, and patterns are matched with ILIKE, '%' and '_' as
// wildcards and '\' as the escape (SQL_SEARCH_STRING_ESCAPE). A nil filter
// does not narrow the search; an empty catalog or schema name matches
// nothing, as no DuckDB object lives outside a catalog and schema. Values
// are always bound as parameters.
//
// The internal "system" catalog (information_schema, pg_catalog and the
// built-in functions) is not listed. The "temp" catalog is: DuckDB
// temporary tables belong to one connection, so outside a transaction a
// client sees the temporary tables of whichever pooled connection answers.

// Table types, as GetTableTypes lists them and DuckDB's information_schema
// names them.
var tableTypes = []string{"BASE TABLE", "LOCAL TEMPORARY", "VIEW"}

// metadataInfo is the FlightInfo of a metadata command: its ticket is the
// command, its schema the reference schema.
func (s *Server) metadataInfo(desc *flight.FlightDescriptor, schema *arrow.Schema) (*flight.FlightInfo, error) {
	if desc == nil || len(desc.GetCmd()) == 0 {
		return nil, invalidf("metadata request has no command")
	}
	return s.flightInfo(desc, schema, desc.GetCmd()), nil
}

// GetFlightInfoCatalogs plans GetCatalogs.
func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.Catalogs)
}

// DoGetCatalogs lists the catalogs: the database, every ATTACHed database
// and "temp".
func (s *Server) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.streamQuery(ctx, schema_ref.Catalogs, `
		SELECT DISTINCT catalog_name FROM information_schema.schemata
		WHERE catalog_name <> 'system'
		ORDER BY catalog_name`)
}

// GetFlightInfoSchemas plans GetDbSchemas.
func (s *Server) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.DBSchemas)
}

// DoGetDBSchemas lists schemas, optionally of one catalog and matching a
// pattern.
func (s *Server) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.streamQuery(ctx, schema_ref.DBSchemas, `
		SELECT catalog_name, schema_name AS db_schema_name
		FROM information_schema.schemata
		WHERE catalog_name <> 'system'
		  AND ($1::VARCHAR IS NULL OR lower(catalog_name) = lower($1))
		  AND ($2::VARCHAR IS NULL OR schema_name ILIKE $2 ESCAPE '\')
		ORDER BY catalog_name, db_schema_name`,
		optString(cmd.GetCatalog()), optString(cmd.GetDBSchemaFilterPattern()))
}

// GetFlightInfoTableTypes plans GetTableTypes.
func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.TableTypes)
}

// DoGetTableTypes lists the table types GetTables reports.
func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewStringBuilder(s.mem)
	defer b.Release()
	b.AppendValues(tableTypes, nil)
	col := b.NewArray()
	defer col.Release()
	return schema_ref.TableTypes, oneBatch(array.NewRecordBatch(schema_ref.TableTypes, []arrow.Array{col}, int64(col.Len()))), nil
}

// GetFlightInfoTables plans GetTables.
func (s *Server) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return s.metadataInfo(desc, schema_ref.TablesWithIncludedSchema)
	}
	return s.metadataInfo(desc, schema_ref.Tables)
}

// DoGetTables lists tables and views. With include_schema, each row also
// carries the table's Arrow schema, IPC-serialized: the schema a SELECT *
// of it returns, with NOT NULL columns marked non-nullable and Flight SQL
// column metadata (type name, precision and scale, auto-increment).
func (s *Server) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	args := []any{optString(cmd.GetCatalog()), optString(cmd.GetDBSchemaFilterPattern()), optString(cmd.GetTableNameFilterPattern())}
	where := `table_catalog <> 'system'
		  AND ($1::VARCHAR IS NULL OR lower(table_catalog) = lower($1))
		  AND ($2::VARCHAR IS NULL OR table_schema ILIKE $2 ESCAPE '\')
		  AND ($3::VARCHAR IS NULL OR table_name ILIKE $3 ESCAPE '\')`
	if types := cmd.GetTableTypes(); len(types) > 0 {
		marks := make([]string, len(types))
		for i, t := range types {
			marks[i] = fmt.Sprintf("$%d", len(args)+1)
			args = append(args, t)
		}
		where += "\n\t\t  AND table_type IN (" + strings.Join(marks, ", ") + ")"
	}
	query := `
		SELECT table_catalog AS catalog_name, table_schema AS db_schema_name, table_name, table_type
		FROM information_schema.tables
		WHERE ` + where + `
		ORDER BY catalog_name, db_schema_name, table_name, table_type`
	if !cmd.GetIncludeSchema() {
		return s.streamQuery(ctx, schema_ref.Tables, query, args...)
	}
	return s.tablesWithSchemas(ctx, query, args)
}

// GetFlightInfoPrimaryKeys plans GetPrimaryKeys.
func (s *Server) GetFlightInfoPrimaryKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.PrimaryKeys)
}

// DoGetPrimaryKeys lists the columns of a table's primary key, in key
// order (key_sequence counts from 1).
func (s *Server) DoGetPrimaryKeys(ctx context.Context, ref flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.streamQuery(ctx, schema_ref.PrimaryKeys, `
		SELECT * FROM (
			SELECT database_name AS catalog_name, schema_name AS db_schema_name, table_name,
			       unnest(constraint_column_names) AS column_name,
			       unnest(generate_series(1, len(constraint_column_names)))::INTEGER AS key_sequence,
			       constraint_name AS key_name
			FROM duckdb_constraints()
			WHERE constraint_type = 'PRIMARY KEY'
			  AND ($1::VARCHAR IS NULL OR lower(database_name) = lower($1))
			  AND ($2::VARCHAR IS NULL OR lower(schema_name) = lower($2))
			  AND lower(table_name) = lower($3))
		ORDER BY catalog_name, db_schema_name, table_name, key_name, key_sequence`,
		optString(ref.Catalog), optString(ref.DBSchema), ref.Table)
}

// foreignKeys is one row per column of every foreign key, in the shape
// of schema_ref.ImportedExportedKeysAndCrossReference. DuckDB keeps a
// foreign key's referenced table and columns as they were written, so
// they are resolved to the names the catalog holds; a foreign key
// references a table in its own catalog and schema. pk_key_name is the
// PRIMARY KEY (or else UNIQUE) constraint whose columns the foreign key
// references. DuckDB has no ON UPDATE/ON DELETE actions: both rules are
// NO ACTION (3).
const foreignKeys = `
	WITH fk AS (
		SELECT database_name AS cat, schema_name AS sch, table_name AS fk_table, constraint_name AS fk_name,
		       referenced_table AS ref_table, referenced_column_names AS ref_cols,
		       unnest(constraint_column_names) AS fk_col,
		       unnest(referenced_column_names) AS ref_col,
		       unnest(generate_series(1, len(constraint_column_names)))::INTEGER AS seq
		FROM duckdb_constraints()
		WHERE constraint_type = 'FOREIGN KEY'),
	keys AS (
		SELECT database_name AS cat, schema_name AS sch, table_name,
		       list_sort(list_transform(constraint_column_names, c -> lower(c))) AS cols,
		       arg_min(constraint_name, constraint_type <> 'PRIMARY KEY') AS key_name
		FROM duckdb_constraints()
		WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE')
		GROUP BY ALL)
	SELECT fk.cat AS pk_catalog_name, fk.sch AS pk_db_schema_name,
	       coalesce(t.table_name, fk.ref_table) AS pk_table_name,
	       coalesce(c.column_name, fk.ref_col) AS pk_column_name,
	       fk.cat AS fk_catalog_name, fk.sch AS fk_db_schema_name, fk.fk_table AS fk_table_name,
	       fk.fk_col AS fk_column_name, fk.seq AS key_sequence,
	       fk.fk_name AS fk_key_name, k.key_name AS pk_key_name,
	       3::UTINYINT AS update_rule, 3::UTINYINT AS delete_rule
	FROM fk
	LEFT JOIN duckdb_tables() t
	       ON t.database_name = fk.cat AND t.schema_name = fk.sch AND lower(t.table_name) = lower(fk.ref_table)
	LEFT JOIN duckdb_columns() c
	       ON c.database_name = fk.cat AND c.schema_name = fk.sch AND c.table_name = t.table_name
	      AND lower(c.column_name) = lower(fk.ref_col)
	LEFT JOIN keys k
	       ON k.cat = fk.cat AND k.sch = fk.sch AND k.table_name = t.table_name
	      AND k.cols = list_sort(list_transform(fk.ref_cols, c -> lower(c)))`

// keysQuery filters and orders foreignKeys.
func keysQuery(where, order string) string {
	return "SELECT * FROM (" + foreignKeys + ")\nWHERE " + where + "\nORDER BY " + order
}

// tableFilter matches one table by the columns prefix_catalog_name,
// prefix_db_schema_name and prefix_table_name against parameters $n,
// $n+1 and $n+2.
func tableFilter(prefix string, n int) string {
	return fmt.Sprintf(`($%[2]d::VARCHAR IS NULL OR lower(%[1]s_catalog_name) = lower($%[2]d))
		AND ($%[3]d::VARCHAR IS NULL OR lower(%[1]s_db_schema_name) = lower($%[3]d))
		AND lower(%[1]s_table_name) = lower($%[4]d)`, prefix, n, n+1, n+2)
}

func tableArgs(ref flightsql.TableRef) []any {
	return []any{optString(ref.Catalog), optString(ref.DBSchema), ref.Table}
}

const (
	pkOrder = "pk_catalog_name, pk_db_schema_name, pk_table_name, pk_key_name, key_sequence"
	fkOrder = "fk_catalog_name, fk_db_schema_name, fk_table_name, fk_key_name, key_sequence"
)

// GetFlightInfoImportedKeys plans GetImportedKeys.
func (s *Server) GetFlightInfoImportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.ImportedKeys)
}

// DoGetImportedKeys lists the foreign keys of a table: the primary key
// columns its foreign key columns reference.
func (s *Server) DoGetImportedKeys(ctx context.Context, ref flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.streamQuery(ctx, schema_ref.ImportedKeys, keysQuery(tableFilter("fk", 1), pkOrder), tableArgs(ref)...)
}

// GetFlightInfoExportedKeys plans GetExportedKeys.
func (s *Server) GetFlightInfoExportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.ExportedKeys)
}

// DoGetExportedKeys lists the foreign keys that reference a table.
func (s *Server) DoGetExportedKeys(ctx context.Context, ref flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.streamQuery(ctx, schema_ref.ExportedKeys, keysQuery(tableFilter("pk", 1), fkOrder), tableArgs(ref)...)
}

// GetFlightInfoCrossReference plans GetCrossReference.
func (s *Server) GetFlightInfoCrossReference(_ context.Context, _ flightsql.CrossTableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metadataInfo(desc, schema_ref.CrossReference)
}

// DoGetCrossReference lists the foreign keys of one table that reference
// another.
func (s *Server) DoGetCrossReference(ctx context.Context, ref flightsql.CrossTableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	where := tableFilter("pk", 1) + "\n\t\tAND " + tableFilter("fk", 4)
	args := append(tableArgs(ref.PKRef), tableArgs(ref.FKRef)...)
	return s.streamQuery(ctx, schema_ref.CrossReference, keysQuery(where, pkOrder), args...)
}

// optString is a command's optional string as a parameter: NULL when
// unset.
func optString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// streamQuery runs a metadata query on a pooled connection and streams
// its batches under schema, whose field types the query's columns must
// have. The connection is held until the stream ends.
func (s *Server) streamQuery(ctx context.Context, schema *arrow.Schema, sql string, args ...any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	c, release, err := s.acquire(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	var rows *engine.Rows
	streaming := false // the goroutine owns the rows and connection from then on
	defer func() {
		if streaming {
			return
		}
		if rows != nil {
			rows.Close()
		}
		release()
	}()
	rows, err = c.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, toStatus(err)
	}
	if err := sameTypes(rows.Schema(), schema); err != nil {
		return nil, nil, err
	}
	ch := make(chan flight.StreamChunk, 1)
	streaming = true
	go func() {
		defer close(ch)
		defer release()
		defer rows.Close()
		defer recoverChunk(ctx, ch)
		for rows.Next() {
			rec := rows.RecordBatch()
			if !send(ctx, ch, array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			sendErr(ctx, ch, toStatus(err))
		}
	}()
	return schema, ch, nil
}

// sameTypes checks that got has want's column types, so its columns can
// be relabelled with want's names and nullability.
func sameTypes(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return status.Errorf(codes.Internal, "metadata query returned %d columns, want %d", got.NumFields(), want.NumFields())
	}
	for i, f := range want.Fields() {
		if !arrow.TypeEqual(got.Field(i).Type, f.Type) {
			return status.Errorf(codes.Internal, "metadata column %s is %s, want %s", f.Name, got.Field(i).Type, f.Type)
		}
	}
	return nil
}

// send hands rec to the stream, or releases it when the stream is gone.
func send(ctx context.Context, ch chan<- flight.StreamChunk, rec arrow.RecordBatch) bool {
	select {
	case ch <- flight.StreamChunk{Data: rec}:
		return true
	case <-ctx.Done():
		rec.Release()
		return false
	}
}

func sendErr(ctx context.Context, ch chan<- flight.StreamChunk, err error) {
	select {
	case ch <- flight.StreamChunk{Err: err}:
	case <-ctx.Done():
	}
}

// oneBatch is a closed stream holding rec.
func oneBatch(rec arrow.RecordBatch) <-chan flight.StreamChunk {
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: rec}
	close(ch)
	return ch
}
