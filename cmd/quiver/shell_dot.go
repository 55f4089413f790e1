package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// shellHelp is what .help prints.
const shellHelp = `Statements end with ';' and may span lines. Tab completes keywords,
tables and columns. Ctrl-C cancels the running statement, or clears the
input; Ctrl-D leaves. BEGIN opens a transaction (the prompt turns to
quiver*>), COMMIT or ROLLBACK ends it.

.help            this list
.mode [MODE]     print results as table, csv, json or arrow (arrow needs .output)
.output [FILE]   write results to FILE; alone, back to stdout
.tables [LIKE]   list the tables and views, those whose name is LIKE the pattern
.schema [TABLE]  show the columns of TABLE, or of every table
.quit, .exit     leave
`

// dot runs a dot-command and reports whether it asks to quit.
func (s *session) dot(ctx context.Context, cmd []string) (quit bool, err error) {
	name, args := cmd[0], cmd[1:]
	maxArgs := 1
	switch name {
	case ".quit", ".exit", ".help":
		maxArgs = 0
	}
	if len(args) > maxArgs {
		return false, fmt.Errorf("%s takes at most %d argument(s); see .help", name, maxArgs)
	}
	arg := ""
	if len(args) == 1 {
		arg = args[0]
	}
	switch name {
	case ".quit", ".exit":
		return true, nil
	case ".help":
		fmt.Fprint(s.errw, shellHelp)
		return false, nil
	case ".mode":
		if arg == "" {
			fmt.Fprintf(s.errw, "%s\n", s.mode)
			return false, nil
		}
		if !contains(shellModes, arg) {
			return false, fmt.Errorf("unknown mode %q: use %s", arg, strings.Join(shellModes, ", "))
		}
		s.mode = arg
		return false, nil
	case ".output":
		return false, s.setOutput(arg)
	case ".tables":
		return false, s.tables(ctx, arg)
	case ".schema":
		return false, s.schema(ctx, arg)
	}
	return false, fmt.Errorf("unknown command %s: see .help", name)
}

// tables prints the server's tables and views (Flight SQL GetTables),
// those whose name is LIKE pattern when it is given.
func (s *session) tables(ctx context.Context, pattern string) error {
	opts := &flightsql.GetTablesOpts{}
	if pattern != "" {
		opts.TableNameFilterPattern = &pattern
	}
	var rw client.ResultWriter
	out := bufio.NewWriter(s.out)
	err := readMetadata(ctx, s.c, opts, func(rec arrow.RecordBatch) error {
		if rw == nil {
			var err error
			if rw, err = client.NewResultWriter("table", out, rec.Schema(), 1<<20); err != nil {
				return err
			}
		}
		return rw.Write(rec)
	})
	if err != nil {
		return s.cf.serverError("list tables", err)
	}
	if rw == nil {
		fmt.Fprintln(s.errw, "(no tables)")
		return nil
	}
	if err := rw.Close(); err != nil {
		return err
	}
	return out.Flush()
}

// schema prints the columns of the table named name (schema.table, the
// parts quoted as in SQL when they need it), or of every table, as
// CREATE statements with DuckDB's types.
func (s *session) schema(ctx context.Context, name string) error {
	opts := &flightsql.GetTablesOpts{IncludeSchema: true}
	var schemaName, tableName string
	if name != "" {
		var err error
		if schemaName, tableName, err = splitTableName(name); err != nil {
			return err
		}
		pt := likeLiteral(tableName)
		opts.TableNameFilterPattern = &pt
		if schemaName != "" {
			ps := likeLiteral(schemaName)
			opts.DbSchemaFilterPattern = &ps
		}
	}
	tables, err := listTables(ctx, s.c, opts)
	if err != nil {
		return s.cf.serverError("list tables", err)
	}
	catalogs := map[string]bool{}
	for _, t := range tables {
		catalogs[t.catalog] = true
	}
	out := bufio.NewWriter(s.out)
	n := 0
	for _, t := range tables {
		// The server matches names as LIKE patterns, without regard to
		// case; only the table named counts.
		if name != "" && (!strings.EqualFold(t.name, tableName) || schemaName != "" && !strings.EqualFold(t.schema, schemaName)) {
			continue
		}
		n++
		kind := strings.TrimPrefix(t.kind, "BASE ")
		fmt.Fprintf(out, "CREATE %s %s (\n", kind, qualifiedName(t, len(catalogs) > 1))
		for i, c := range t.columns {
			sep := ","
			if i == len(t.columns)-1 {
				sep = ""
			}
			null := ""
			if !c.nullable {
				null = " NOT NULL"
			}
			fmt.Fprintf(out, "  %s %s%s%s\n", quoteName(c.name), c.typeName, null, sep)
		}
		fmt.Fprintln(out, ");")
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if n == 0 {
		if name != "" {
			return fmt.Errorf("no table %s", name)
		}
		fmt.Fprintln(s.errw, "(no tables)")
	}
	return nil
}

// splitTableName reads a table name as SQL writes it: table or
// schema.table, each part bare or "quoted".
func splitTableName(name string) (schema, table string, err error) {
	toks, err := duckdbsql.Lex(name)
	if err != nil {
		return "", "", fmt.Errorf("bad table name %s: %w", name, err)
	}
	var parts []string
	for i, t := range toks {
		switch {
		case i%2 == 1 && t.Is("."):
		case i%2 == 0 && (t.Kind == duckdbsql.Ident || t.Kind == duckdbsql.Quoted):
			parts = append(parts, t.Value)
		default:
			return "", "", fmt.Errorf("bad table name %s: want table or schema.table", name)
		}
	}
	switch {
	case len(toks)%2 == 0:
		return "", "", fmt.Errorf("bad table name %s: want table or schema.table", name)
	case len(parts) == 1:
		return "", parts[0], nil
	case len(parts) == 2:
		return parts[0], parts[1], nil
	}
	return "", "", fmt.Errorf("bad table name %s: want table or schema.table", name)
}

// likeLiteral is a LIKE pattern that matches s alone: the server's
// patterns escape with a backslash.
func likeLiteral(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// qualifiedName is a table's name as a statement would write it: with
// its schema, and its catalog when withCatalog (the server has more than
// one, such as its lake's).
func qualifiedName(t tableInfo, withCatalog bool) string {
	name := quoteName(t.schema) + "." + quoteName(t.name)
	if withCatalog && t.catalog != "" {
		name = quoteName(t.catalog) + "." + name
	}
	return name
}

// quoteName quotes a name that SQL could not read bare.
func quoteName(name string) string {
	toks, err := duckdbsql.Lex(name)
	if err == nil && len(toks) == 1 && toks[0].Kind == duckdbsql.Ident && toks[0].Text == name && strings.ToLower(name) == name && !isKeyword(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// tableInfo is one table or view and its columns.
type tableInfo struct {
	catalog, schema, name, kind string
	columns                     []columnInfo
}

// columnInfo is a column as GetTables describes it.
type columnInfo struct {
	name, typeName string
	nullable       bool
}

// listTables asks the server for its tables (Flight SQL GetTables), with
// their columns when opts.IncludeSchema.
func listTables(ctx context.Context, c *client.Client, opts *flightsql.GetTablesOpts) ([]tableInfo, error) {
	var out []tableInfo
	err := readMetadata(ctx, c, opts, func(rec arrow.RecordBatch) error {
		str := func(name string) *array.String {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				return nil
			}
			col, _ := rec.Column(idx[0]).(*array.String)
			return col
		}
		cat, sch, name, kind := str("catalog_name"), str("db_schema_name"), str("table_name"), str("table_type")
		if name == nil || kind == nil {
			return errors.New("the server's table list lacks table_name or table_type")
		}
		var schemas *array.Binary
		if idx := rec.Schema().FieldIndices("table_schema"); len(idx) > 0 {
			schemas, _ = rec.Column(idx[0]).(*array.Binary)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			t := tableInfo{name: name.Value(i), kind: kind.Value(i)}
			if cat != nil {
				t.catalog = cat.Value(i)
			}
			if sch != nil {
				t.schema = sch.Value(i)
			}
			if schemas != nil && !schemas.IsNull(i) {
				sc, err := flight.DeserializeSchema(schemas.Value(i), memory.DefaultAllocator)
				if err != nil {
					return fmt.Errorf("read the columns of %s: %w", t.name, err)
				}
				for _, f := range sc.Fields() {
					md := flightsql.ColumnMetadata{Data: &f.Metadata}
					typ, ok := md.TypeName()
					if !ok {
						typ = f.Type.String()
					}
					t.columns = append(t.columns, columnInfo{name: f.Name, typeName: typ, nullable: f.Nullable})
				}
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// readMetadata streams the answer to GetTables to fn, batch by batch.
func readMetadata(ctx context.Context, c *client.Client, opts *flightsql.GetTablesOpts, fn func(arrow.RecordBatch) error) error {
	ctx = c.Context(ctx)
	info, err := c.SQL().GetTables(ctx, opts)
	if err != nil {
		return err
	}
	for _, ep := range info.GetEndpoint() {
		r, err := c.SQL().DoGet(ctx, ep.GetTicket())
		if err != nil {
			return err
		}
		for r.Next() {
			if err := fn(r.RecordBatch()); err != nil {
				r.Release()
				return err
			}
		}
		err = r.Err()
		r.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
