package backup

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
)

// copyAlias is the name the backup's new database is attached as.
const copyAlias = "quiver_backup_copy"

// snapshot copies the database c is connected to into a new database
// file at path, in one transaction (see the package doc), and returns
// its tables' row counts and checksums at that snapshot. c is left in
// an unknown state and must be closed, not pooled.
func snapshot(ctx context.Context, c *engine.Conn, path string) ([]Table, error) {
	src := c.DB().DefaultCatalog()
	if _, err := c.Exec(ctx, "ATTACH "+engine.QuoteString(path)+" AS "+copyAlias); err != nil {
		return nil, fmt.Errorf("create the backup database: %w", err)
	}
	attached := true
	defer func() {
		if attached {
			// A context that ended must not keep the file attached.
			c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
			c.Exec(context.WithoutCancel(ctx), "DETACH "+copyAlias)
		}
	}()
	if _, err := c.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, err
	}
	tables, err := copyCatalog(ctx, c, src, copyAlias)
	if err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, "COMMIT"); err != nil {
		return nil, fmt.Errorf("commit the backup database: %w", err)
	}
	// The checkpoint leaves everything in the file, nothing in a WAL.
	if _, err := c.Exec(ctx, "CHECKPOINT "+copyAlias); err != nil {
		return nil, fmt.Errorf("checkpoint the backup database: %w", err)
	}
	if _, err := c.Exec(ctx, "USE "+engine.QuoteIdent(src)); err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, "DETACH "+copyAlias); err != nil {
		return nil, fmt.Errorf("close the backup database: %w", err)
	}
	attached = false
	if _, err := os.Stat(path + ".wal"); err == nil {
		return nil, fmt.Errorf("the backup database %s kept a WAL after its checkpoint", path)
	}
	return tables, nil
}

// copyCatalog recreates the objects of catalog src in dst and copies the
// tables' rows, in the order their dependencies need: schemas,
// sequences, tables (in creation order, for foreign keys), rows, macros,
// views, and indexes last, built once over all the rows.
func copyCatalog(ctx context.Context, c *engine.Conn, src, dst string) ([]Table, error) {
	q := engine.QuoteString(src)
	schemas, err := queryStrings(ctx, c, "SELECT schema_name FROM duckdb_schemas() WHERE database_name = "+q+
		" AND schema_name NOT IN ('main', 'information_schema', 'pg_catalog') ORDER BY oid")
	if err != nil {
		return nil, fmt.Errorf("read the schemas: %w", err)
	}
	for _, s := range schemas {
		if _, err := c.Exec(ctx, "CREATE SCHEMA "+engine.QuoteIdent(dst)+"."+engine.QuoteIdent(s[0])); err != nil {
			return nil, fmt.Errorf("copy schema %s: %w", s[0], err)
		}
	}
	ddl := func(what, sql string) error {
		objs, err := queryStrings(ctx, c, sql)
		if err != nil {
			return fmt.Errorf("read the %s: %w", what, err)
		}
		for _, o := range objs {
			if err := execIn(ctx, c, dst, o[0], o[1]); err != nil {
				return fmt.Errorf("copy %s %s.%s: %w", what, o[0], o[2], err)
			}
		}
		return nil
	}
	if err := ddl("sequences", "SELECT schema_name, sql, sequence_name FROM duckdb_sequences() WHERE database_name = "+q+
		" AND NOT temporary ORDER BY sequence_oid"); err != nil {
		return nil, err
	}
	tabs, err := queryStrings(ctx, c, "SELECT schema_name, sql, table_name FROM duckdb_tables() WHERE database_name = "+q+
		" AND NOT temporary ORDER BY table_oid")
	if err != nil {
		return nil, fmt.Errorf("read the tables: %w", err)
	}
	var tables []Table
	for _, t := range tabs {
		schema, name := t[0], t[2]
		if err := execIn(ctx, c, dst, schema, t[1]); err != nil {
			return nil, fmt.Errorf("copy table %s.%s: %w", schema, name, err)
		}
		from := qualify(src, schema, name)
		if _, err := c.Exec(ctx, "INSERT INTO "+qualify(dst, schema, name)+" SELECT * FROM "+from); err != nil {
			return nil, fmt.Errorf("copy the rows of %s.%s: %w", schema, name, err)
		}
		tb, err := tableSum(ctx, c, src, schema, name)
		if err != nil {
			return nil, err
		}
		tables = append(tables, tb)
	}
	macros := "SELECT schema_name, 'CREATE MACRO ' || function_name || '(' || array_to_string(parameters, ', ') || ') AS ' || " +
		"CASE function_type WHEN 'table_macro' THEN 'TABLE ' ELSE '' END || macro_definition, function_name " +
		"FROM duckdb_functions() WHERE database_name = " + q + " AND NOT internal AND function_type IN ('macro', 'table_macro')"
	if err := ddl("macros", macros); err != nil {
		return nil, err
	}
	if err := ddl("views", "SELECT schema_name, sql, view_name FROM duckdb_views() WHERE database_name = "+q+
		" AND NOT internal AND NOT temporary ORDER BY view_oid"); err != nil {
		return nil, err
	}
	if err := ddl("indexes", "SELECT schema_name, sql, index_name FROM duckdb_indexes() WHERE database_name = "+q+
		" AND sql IS NOT NULL ORDER BY index_oid"); err != nil {
		return nil, err
	}
	return tables, nil
}

// tableSum counts a table's rows and sums their hashes.
func tableSum(ctx context.Context, c *engine.Conn, catalog, schema, name string) (Table, error) {
	rows, err := queryStrings(ctx, c, "SELECT count(*)::VARCHAR, coalesce(sum(hash(*COLUMNS(*))), 0)::VARCHAR FROM "+qualify(catalog, schema, name))
	if err != nil {
		return Table{}, fmt.Errorf("checksum %s.%s: %w", schema, name, err)
	}
	if len(rows) != 1 {
		return Table{}, fmt.Errorf("checksum %s.%s: %d rows, want 1", schema, name, len(rows))
	}
	t := Table{Schema: schema, Name: name, Checksum: rows[0][1]}
	if _, err := fmt.Sscan(rows[0][0], &t.Rows); err != nil {
		return Table{}, fmt.Errorf("checksum %s.%s: row count %q: %w", schema, name, rows[0][0], err)
	}
	return t, nil
}

// tableSums is tableSum for every table of catalog.
func tableSums(ctx context.Context, c *engine.Conn, catalog string) ([]Table, error) {
	tabs, err := queryStrings(ctx, c, "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = "+
		engine.QuoteString(catalog)+" AND NOT temporary ORDER BY table_oid")
	if err != nil {
		return nil, fmt.Errorf("read the tables: %w", err)
	}
	var out []Table
	for _, t := range tabs {
		tb, err := tableSum(ctx, c, catalog, t[0], t[1])
		if err != nil {
			return nil, err
		}
		out = append(out, tb)
	}
	return out, nil
}

// execIn runs DDL that DuckDB printed for an object of schema, with
// dst.schema as the default, where its unqualified names then land.
func execIn(ctx context.Context, c *engine.Conn, dst, schema, sql string) error {
	if _, err := c.Exec(ctx, "USE "+engine.QuoteIdent(dst)+"."+engine.QuoteIdent(schema)); err != nil {
		return err
	}
	_, err := c.Exec(ctx, sql)
	return err
}

func qualify(catalog, schema, name string) string {
	return engine.QuoteIdent(catalog) + "." + engine.QuoteIdent(schema) + "." + engine.QuoteIdent(name)
}

// queryStrings runs sql and returns its rows with every value as text
// (NULL as "").
func queryStrings(ctx context.Context, c *engine.Conn, sql string) ([][]string, error) {
	rows, err := c.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		rec := rows.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, rec.NumCols())
			for j, col := range rec.Columns() {
				if col.IsNull(i) {
					continue
				}
				if s, ok := col.(*array.String); ok {
					row[j] = strings.Clone(s.Value(i)) // the batch is recycled
				} else {
					row[j] = col.ValueStr(i)
				}
			}
			out = append(out, row)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
