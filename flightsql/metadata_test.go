package flightsql_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// shopDDL is the database the metadata tests read: tables with primary
// keys, single- and multi-column foreign keys, a view, and a foreign key
// written in a different case from the table it references.
const shopDDL = `
	CREATE SCHEMA shop;
	CREATE TABLE shop.customers (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, note VARCHAR);
	CREATE TABLE shop.orders (
		region VARCHAR, order_no INTEGER, customer_id INTEGER REFERENCES shop.customers (id),
		amount DECIMAL(10, 2), PRIMARY KEY (region, order_no));
	CREATE TABLE shop.order_lines (
		region VARCHAR, order_no INTEGER, line INTEGER, sku VARCHAR,
		PRIMARY KEY (region, order_no, line),
		FOREIGN KEY (region, order_no) REFERENCES shop.orders (region, order_no));
	CREATE VIEW shop.big_orders AS SELECT region, order_no, amount FROM shop.orders WHERE amount > 100;
	CREATE TABLE shop."Parent" ("Key" INTEGER PRIMARY KEY);
	CREATE TABLE shop.child (parent_key INTEGER REFERENCES shop.parent (key));
	CREATE SEQUENCE main.ids;
	CREATE TABLE main.events (id BIGINT DEFAULT nextval('main.ids'), happened TIMESTAMPTZ NOT NULL, price DECIMAL(12, 3));
	COMMENT ON TABLE main.events IS 'things that happened';
`

// startShop starts a server holding shopDDL.
func startShop(t *testing.T) *client.Client {
	t.Helper()
	_, c := start(t)
	if _, err := c.Exec(context.Background(), shopDDL); err != nil {
		t.Fatalf("create shop: %v", err)
	}
	return c
}

// fetch reads every endpoint of info and returns the stream's schema and
// its rows, each value as a string ("NULL" for nulls).
func fetch(t *testing.T, c *client.Client, info *flight.FlightInfo) (*arrow.Schema, [][]string) {
	t.Helper()
	ctx := c.Context(context.Background())
	var schema *arrow.Schema
	var rows [][]string
	for _, ep := range info.GetEndpoint() {
		rdr, err := c.SQL().DoGet(ctx, ep.GetTicket())
		if err != nil {
			t.Fatalf("do get: %v", err)
		}
		schema = rdr.Schema()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				row := make([]string, rec.NumCols())
				for j, col := range rec.Columns() {
					row[j] = cell(col, i)
				}
				rows = append(rows, row)
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatalf("read stream: %v", err)
		}
		rdr.Release()
	}
	return schema, rows
}

func cell(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	return col.ValueStr(i)
}

// wantSchema checks a result has the reference schema exactly, in the
// FlightInfo and in the stream.
func wantSchema(t *testing.T, info *flight.FlightInfo, stream, want *arrow.Schema) {
	t.Helper()
	declared, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("flight info schema: %v", err)
	}
	if !declared.Equal(want) {
		t.Errorf("flight info schema: got %s, want %s", declared, want)
	}
	if stream != nil && !stream.Equal(want) {
		t.Errorf("stream schema: got %s, want %s", stream, want)
	}
}

func wantRows(t *testing.T, got, want [][]string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("rows:\ngot  %q\nwant %q", got, want)
	}
}

func ptr(s string) *string { return &s }

func TestMetadata_Catalogs(t *testing.T) {
	c := startShop(t)
	get := func() [][]string {
		t.Helper()
		info, err := c.SQL().GetCatalogs(c.Context(context.Background()))
		if err != nil {
			t.Fatal(err)
		}
		schema, rows := fetch(t, c, info)
		wantSchema(t, info, schema, schema_ref.Catalogs)
		return rows
	}
	wantRows(t, get(), [][]string{{"memory"}, {"temp"}})
	// An attached database is a catalog.
	if _, err := c.Exec(context.Background(), "ATTACH ':memory:' AS annex"); err != nil {
		t.Fatal(err)
	}
	wantRows(t, get(), [][]string{{"annex"}, {"memory"}, {"temp"}})
}

// TestMetadata_NoLeaks runs every metadata call against a server whose
// allocator is checked, and checks every buffer comes back.
func TestMetadata_NoLeaks(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	srv := testutil.StartServer(t, server.Config{Allocator: mem})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), shopDDL); err != nil {
		t.Fatal(err)
	}
	ctx := c.Context(context.Background())
	ref := flightsql.TableRef{Table: "orders"}
	calls := map[string]func() (*flight.FlightInfo, error){
		"catalogs": func() (*flight.FlightInfo, error) { return c.SQL().GetCatalogs(ctx) },
		"schemas":  func() (*flight.FlightInfo, error) { return c.SQL().GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{}) },
		"tables":   func() (*flight.FlightInfo, error) { return c.SQL().GetTables(ctx, &flightsql.GetTablesOpts{}) },
		"with schema": func() (*flight.FlightInfo, error) {
			return c.SQL().GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
		},
		"table types": func() (*flight.FlightInfo, error) { return c.SQL().GetTableTypes(ctx) },
		"primary":     func() (*flight.FlightInfo, error) { return c.SQL().GetPrimaryKeys(ctx, ref) },
		"imported":    func() (*flight.FlightInfo, error) { return c.SQL().GetImportedKeys(ctx, ref) },
		"exported":    func() (*flight.FlightInfo, error) { return c.SQL().GetExportedKeys(ctx, ref) },
		"cross":       func() (*flight.FlightInfo, error) { return c.SQL().GetCrossReference(ctx, ref, ref) },
		"xdbc":        func() (*flight.FlightInfo, error) { return c.SQL().GetXdbcTypeInfo(ctx, nil) },
		"sql info":    func() (*flight.FlightInfo, error) { return c.SQL().GetSqlInfo(ctx, nil) },
	}
	for name, call := range calls {
		info, err := call()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fetch(t, c, info)
	}
	testmem.WaitFreed(t, mem)
}

func TestMetadata_DBSchemas(t *testing.T) {
	c := startShop(t)
	tests := []struct {
		name string
		opts *flightsql.GetDBSchemasOpts
		want [][]string
	}{
		{"all", &flightsql.GetDBSchemasOpts{}, [][]string{{"memory", "main"}, {"memory", "shop"}, {"temp", "main"}}},
		{"catalog", &flightsql.GetDBSchemasOpts{Catalog: ptr("memory")}, [][]string{{"memory", "main"}, {"memory", "shop"}}},
		{"catalog any case", &flightsql.GetDBSchemasOpts{Catalog: ptr("MEMORY"), DbSchemaFilterPattern: ptr("s%")}, [][]string{{"memory", "shop"}}},
		{"pattern", &flightsql.GetDBSchemasOpts{DbSchemaFilterPattern: ptr("ma_n")}, [][]string{{"memory", "main"}, {"temp", "main"}}},
		{"empty catalog matches nothing", &flightsql.GetDBSchemasOpts{Catalog: ptr("")}, nil},
		{"unknown catalog", &flightsql.GetDBSchemasOpts{Catalog: ptr("nope")}, nil},
		// A quote in a pattern is a value, never SQL.
		{"injection", &flightsql.GetDBSchemasOpts{DbSchemaFilterPattern: ptr("x' OR '1'='1")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := c.SQL().GetDBSchemas(c.Context(context.Background()), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			schema, rows := fetch(t, c, info)
			wantSchema(t, info, schema, schema_ref.DBSchemas)
			wantRows(t, rows, tt.want)
		})
	}
}

func TestMetadata_TableTypes(t *testing.T) {
	c := startShop(t)
	info, err := c.SQL().GetTableTypes(c.Context(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	schema, rows := fetch(t, c, info)
	wantSchema(t, info, schema, schema_ref.TableTypes)
	wantRows(t, rows, [][]string{{"BASE TABLE"}, {"LOCAL TEMPORARY"}, {"VIEW"}})
}

func TestMetadata_Tables(t *testing.T) {
	c := startShop(t)
	row := func(schema, table, typ string) []string { return []string{"memory", schema, table, typ} }
	all := [][]string{
		row("main", "events", "BASE TABLE"),
		row("shop", "Parent", "BASE TABLE"),
		row("shop", "big_orders", "VIEW"),
		row("shop", "child", "BASE TABLE"),
		row("shop", "customers", "BASE TABLE"),
		row("shop", "order_lines", "BASE TABLE"),
		row("shop", "orders", "BASE TABLE"),
	}
	tests := []struct {
		name string
		opts *flightsql.GetTablesOpts
		want [][]string
	}{
		{"all", &flightsql.GetTablesOpts{}, all},
		{"catalog", &flightsql.GetTablesOpts{Catalog: ptr("memory")}, all},
		{"schema pattern", &flightsql.GetTablesOpts{DbSchemaFilterPattern: ptr("m%")}, all[:1]},
		{"views", &flightsql.GetTablesOpts{TableTypes: []string{"VIEW"}}, [][]string{row("shop", "big_orders", "VIEW")}},
		{"two types", &flightsql.GetTablesOpts{DbSchemaFilterPattern: ptr("shop"), TableTypes: []string{"VIEW", "BASE TABLE"}}, all[1:]},
		{"unknown type", &flightsql.GetTablesOpts{TableTypes: []string{"SYNONYM"}}, nil},
		// '_' is a wildcard unless escaped.
		{"wildcard", &flightsql.GetTablesOpts{TableNameFilterPattern: ptr("order_%")}, [][]string{row("shop", "order_lines", "BASE TABLE"), row("shop", "orders", "BASE TABLE")}},
		{"escaped", &flightsql.GetTablesOpts{TableNameFilterPattern: ptr(`order\_%`)}, [][]string{row("shop", "order_lines", "BASE TABLE")}},
		{"any case", &flightsql.GetTablesOpts{TableNameFilterPattern: ptr("PARENT")}, [][]string{row("shop", "Parent", "BASE TABLE")}},
		{"empty catalog", &flightsql.GetTablesOpts{Catalog: ptr("")}, nil},
		{"injection", &flightsql.GetTablesOpts{TableNameFilterPattern: ptr("%'; DROP TABLE shop.orders; --")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := c.SQL().GetTables(c.Context(context.Background()), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			schema, rows := fetch(t, c, info)
			wantSchema(t, info, schema, schema_ref.Tables)
			wantRows(t, rows, tt.want)
		})
	}
	if _, first := queryAll(t, c, "SELECT count(*) FROM shop.orders"); first[0] != "0" {
		t.Errorf("shop.orders after injection attempts: got %v", first)
	}
}

func TestMetadata_TablesWithSchema(t *testing.T) {
	c := startShop(t)
	ctx := c.Context(context.Background())
	info, err := c.SQL().GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	wantSchema(t, info, nil, schema_ref.TablesWithIncludedSchema)
	rdr, err := c.SQL().DoGet(ctx, info.GetEndpoint()[0].GetTicket())
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Schema().Equal(schema_ref.TablesWithIncludedSchema) {
		t.Errorf("stream schema: got %s", rdr.Schema())
	}
	schemas := map[string]*arrow.Schema{}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			name := rec.Column(1).ValueStr(i) + "." + rec.Column(2).ValueStr(i)
			sch, err := flight.DeserializeSchema(rec.Column(4).(*array.Binary).Value(i), memory.DefaultAllocator)
			if err != nil {
				t.Fatalf("table_schema of %s: %v", name, err)
			}
			schemas[name] = sch
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := len(schemas), 7; got != want {
		t.Errorf("tables: got %d, want %d", got, want)
	}

	type col struct {
		name     string
		typ      arrow.DataType
		nullable bool
		md       map[string]string // metadata keys to check
	}
	tests := []struct {
		table string
		cols  []col
	}{
		{"shop.orders", []col{
			{"region", arrow.BinaryTypes.String, false, map[string]string{"ARROW:FLIGHT:SQL:TYPE_NAME": "VARCHAR", "ARROW:FLIGHT:SQL:IS_CASE_SENSITIVE": "1"}},
			{"order_no", arrow.PrimitiveTypes.Int32, false, map[string]string{"ARROW:FLIGHT:SQL:TYPE_NAME": "INTEGER", "ARROW:FLIGHT:SQL:IS_CASE_SENSITIVE": "0"}},
			{"customer_id", arrow.PrimitiveTypes.Int32, true, map[string]string{"ARROW:FLIGHT:SQL:TABLE_NAME": "orders", "ARROW:FLIGHT:SQL:SCHEMA_NAME": "shop", "ARROW:FLIGHT:SQL:CATALOG_NAME": "memory"}},
			{"amount", &arrow.Decimal128Type{Precision: 10, Scale: 2}, true, map[string]string{
				"ARROW:FLIGHT:SQL:TYPE_NAME": "DECIMAL(10,2)", "ARROW:FLIGHT:SQL:PRECISION": "10", "ARROW:FLIGHT:SQL:SCALE": "2"}},
		}},
		{"shop.customers", []col{
			{"id", arrow.PrimitiveTypes.Int32, false, nil},
			{"name", arrow.BinaryTypes.String, false, nil},
			{"note", arrow.BinaryTypes.String, true, nil},
		}},
		{"shop.big_orders", []col{
			{"region", arrow.BinaryTypes.String, true, map[string]string{"ARROW:FLIGHT:SQL:IS_READ_ONLY": "1"}},
			{"order_no", arrow.PrimitiveTypes.Int32, true, nil},
			{"amount", &arrow.Decimal128Type{Precision: 10, Scale: 2}, true, nil},
		}},
		{"main.events", []col{
			{"id", arrow.PrimitiveTypes.Int64, true, map[string]string{"ARROW:FLIGHT:SQL:IS_AUTO_INCREMENT": "1"}},
			{"happened", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, false, map[string]string{
				"ARROW:FLIGHT:SQL:TYPE_NAME": "TIMESTAMP WITH TIME ZONE", "ARROW:FLIGHT:SQL:IS_AUTO_INCREMENT": "0"}},
			{"price", &arrow.Decimal128Type{Precision: 12, Scale: 3}, true, nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			sch := schemas[tt.table]
			if sch == nil {
				t.Fatalf("no schema for %s", tt.table)
			}
			if got, want := sch.NumFields(), len(tt.cols); got != want {
				t.Fatalf("fields: got %d (%s), want %d", got, sch, want)
			}
			for i, want := range tt.cols {
				f := sch.Field(i)
				if f.Name != want.name || !arrow.TypeEqual(f.Type, want.typ) || f.Nullable != want.nullable {
					t.Errorf("field %d: got %s %s nullable=%v, want %s %s nullable=%v", i, f.Name, f.Type, f.Nullable, want.name, want.typ, want.nullable)
				}
				for k, v := range want.md {
					if got, _ := f.Metadata.GetValue(k); got != v {
						t.Errorf("field %s metadata %s: got %q, want %q", f.Name, k, got, v)
					}
				}
			}
		})
	}
	// The schema of a table is the schema its rows come back with.
	r, err := c.Query(context.Background(), "SELECT * FROM shop.orders")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	for i, f := range r.Schema().Fields() {
		if g := schemas["shop.orders"].Field(i); !arrow.TypeEqual(g.Type, f.Type) || g.Name != f.Name {
			t.Errorf("query field %d: got %s %s, table_schema says %s %s", i, f.Name, f.Type, g.Name, g.Type)
		}
	}
}

// TestMetadata_TablesBrokenView checks a view that no longer binds is
// listed with an empty schema instead of failing the listing.
func TestMetadata_TablesBrokenView(t *testing.T) {
	_, c := start(t)
	if _, err := c.Exec(context.Background(), "CREATE TABLE base (a INT); CREATE VIEW v AS SELECT a FROM base; DROP TABLE base"); err != nil {
		t.Fatal(err)
	}
	info, err := c.SQL().GetTables(c.Context(context.Background()), &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	_, rows := fetch(t, c, info)
	if len(rows) != 1 || rows[0][2] != "v" {
		t.Fatalf("rows: got %q, want the view v", rows)
	}
}

func keyRow(pkSchema, pkTable, pkCol, fkSchema, fkTable, fkCol string, seq int, fkName, pkName string) []string {
	return []string{"memory", pkSchema, pkTable, pkCol, "memory", fkSchema, fkTable, fkCol, fmt.Sprint(seq), fkName, pkName, "3", "3"}
}

func TestMetadata_PrimaryKeys(t *testing.T) {
	c := startShop(t)
	tests := []struct {
		name string
		ref  flightsql.TableRef
		want [][]string
	}{
		{"composite", flightsql.TableRef{Table: "order_lines"}, [][]string{
			{"memory", "shop", "order_lines", "region", "1", "order_lines_region_order_no_line_pkey"},
			{"memory", "shop", "order_lines", "order_no", "2", "order_lines_region_order_no_line_pkey"},
			{"memory", "shop", "order_lines", "line", "3", "order_lines_region_order_no_line_pkey"},
		}},
		{"qualified", flightsql.TableRef{Catalog: ptr("memory"), DBSchema: ptr("shop"), Table: "customers"}, [][]string{
			{"memory", "shop", "customers", "id", "1", "customers_id_pkey"},
		}},
		{"any case", flightsql.TableRef{Table: "parent"}, [][]string{
			{"memory", "shop", "Parent", "Key", "1", "Parent_key_pkey"},
		}},
		{"wrong schema", flightsql.TableRef{DBSchema: ptr("main"), Table: "customers"}, nil},
		{"no key", flightsql.TableRef{Table: "events"}, nil},
		{"no table", flightsql.TableRef{Table: "nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := c.SQL().GetPrimaryKeys(c.Context(context.Background()), tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			schema, rows := fetch(t, c, info)
			wantSchema(t, info, schema, schema_ref.PrimaryKeys)
			wantRows(t, rows, tt.want)
		})
	}
}

func TestMetadata_ForeignKeys(t *testing.T) {
	c := startShop(t)
	ordersFK := "orders_customer_id_id_fkey"
	linesFK := "order_lines_region_order_no_region_order_no_fkey"
	childFK := "child_parent_key_key_fkey"
	linesToOrders := [][]string{
		keyRow("shop", "orders", "region", "shop", "order_lines", "region", 1, linesFK, "orders_region_order_no_pkey"),
		keyRow("shop", "orders", "order_no", "shop", "order_lines", "order_no", 2, linesFK, "orders_region_order_no_pkey"),
	}
	ordersToCustomers := [][]string{
		keyRow("shop", "customers", "id", "shop", "orders", "customer_id", 1, ordersFK, "customers_id_pkey"),
	}
	// The foreign key names "parent (key)"; the catalog has "Parent" ("Key").
	childToParent := [][]string{
		keyRow("shop", "Parent", "Key", "shop", "child", "parent_key", 1, childFK, "Parent_key_pkey"),
	}
	ctx := c.Context(context.Background())
	tests := []struct {
		name string
		get  func() (*flight.FlightInfo, error)
		want [][]string
	}{
		{"imported", func() (*flight.FlightInfo, error) {
			return c.SQL().GetImportedKeys(ctx, flightsql.TableRef{DBSchema: ptr("shop"), Table: "order_lines"})
		}, linesToOrders},
		{"imported case", func() (*flight.FlightInfo, error) {
			return c.SQL().GetImportedKeys(ctx, flightsql.TableRef{Table: "child"})
		}, childToParent},
		{"imported none", func() (*flight.FlightInfo, error) {
			return c.SQL().GetImportedKeys(ctx, flightsql.TableRef{Table: "customers"})
		}, nil},
		{"exported", func() (*flight.FlightInfo, error) {
			return c.SQL().GetExportedKeys(ctx, flightsql.TableRef{Catalog: ptr("memory"), Table: "customers"})
		}, ordersToCustomers},
		{"exported orders", func() (*flight.FlightInfo, error) {
			return c.SQL().GetExportedKeys(ctx, flightsql.TableRef{Table: "orders"})
		}, linesToOrders},
		{"exported case", func() (*flight.FlightInfo, error) {
			return c.SQL().GetExportedKeys(ctx, flightsql.TableRef{Table: "Parent"})
		}, childToParent},
		{"cross", func() (*flight.FlightInfo, error) {
			return c.SQL().GetCrossReference(ctx, flightsql.TableRef{Table: "orders"}, flightsql.TableRef{DBSchema: ptr("shop"), Table: "order_lines"})
		}, linesToOrders},
		{"cross unrelated", func() (*flight.FlightInfo, error) {
			return c.SQL().GetCrossReference(ctx, flightsql.TableRef{Table: "customers"}, flightsql.TableRef{Table: "order_lines"})
		}, nil},
		{"cross wrong catalog", func() (*flight.FlightInfo, error) {
			return c.SQL().GetCrossReference(ctx, flightsql.TableRef{Catalog: ptr("temp"), Table: "orders"}, flightsql.TableRef{Table: "order_lines"})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := tt.get()
			if err != nil {
				t.Fatal(err)
			}
			schema, rows := fetch(t, c, info)
			wantSchema(t, info, schema, schema_ref.ImportedExportedKeysAndCrossReference)
			wantRows(t, rows, tt.want)
		})
	}
}

func TestMetadata_XdbcTypeInfo(t *testing.T) {
	c := startShop(t)
	ctx := c.Context(context.Background())
	info, err := c.SQL().GetXdbcTypeInfo(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, rows := fetch(t, c, info)
	wantSchema(t, info, schema, schema_ref.XdbcTypeInfo)
	byName := map[string][]string{}
	for i, r := range rows {
		byName[r[0]] = r
		if i > 0 {
			prev := rows[i-1]
			if p, q := atoi(t, prev[1]), atoi(t, r[1]); p > q || (p == q && prev[0] > r[0]) {
				t.Errorf("order: %s (%s) before %s (%s), want data_type then type_name", prev[0], prev[1], r[0], r[1])
			}
		}
	}
	// Every type a column can have is described, and every one named is
	// a type DuckDB accepts.
	for _, name := range []string{"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
		"UINTEGER", "UBIGINT", "HUGEINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "VARCHAR", "BLOB", "DATE", "TIME",
		"TIMETZ", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ", "INTERVAL", "UUID",
		"JSON", "ENUM", "LIST", "ARRAY", "STRUCT", "MAP", "UNION", "BIT", "BIGNUM"} {
		if byName[name] == nil {
			t.Errorf("type %s is missing", name)
		}
	}
	declare := map[string]string{"DECIMAL": "DECIMAL(10, 2)", "ENUM": "ENUM('a', 'b')", "LIST": "INTEGER[]",
		"ARRAY": "INTEGER[3]", "STRUCT": "STRUCT(a INTEGER)", "MAP": "MAP(VARCHAR, INTEGER)", "UNION": "UNION(n INTEGER, s VARCHAR)"}
	for name := range byName {
		decl := name
		if d, ok := declare[name]; ok {
			decl = d
		}
		if _, err := c.Exec(context.Background(), fmt.Sprintf(`CREATE TABLE "xdbc_%s" (v %s)`, name, decl)); err != nil {
			t.Errorf("type %s is listed but a column cannot have it: %v", name, err)
		}
	}
	// Columns: type_name, data_type, column_size, literal_prefix,
	// literal_suffix, create_params, nullable, case_sensitive, searchable,
	// unsigned_attribute, fixed_prec_scale, auto_increment,
	// local_type_name, minimum_scale, maximum_scale, sql_data_type,
	// datetime_subcode, num_prec_radix, interval_precision.
	for _, want := range [][]string{
		{"INTEGER", "4", "10", "NULL", "NULL", "NULL", "1", "false", "2", "false", "false", "false", "INTEGER", "0", "0", "4", "NULL", "10", "NULL"},
		{"UBIGINT", "-5", "20", "NULL", "NULL", "NULL", "1", "false", "2", "true", "false", "false", "UBIGINT", "0", "0", "-5", "NULL", "10", "NULL"},
		{"DECIMAL", "3", "38", "NULL", "NULL", `["precision","scale"]`, "1", "false", "2", "false", "false", "false", "DECIMAL", "0", "38", "3", "NULL", "10", "NULL"},
		{"VARCHAR", "12", "NULL", "'", "'", "NULL", "1", "true", "3", "NULL", "false", "false", "VARCHAR", "NULL", "NULL", "12", "NULL", "NULL", "NULL"},
		{"TIMESTAMPTZ", "2014", "32", "TIMESTAMPTZ '", "'", "NULL", "1", "false", "2", "NULL", "false", "false", "TIMESTAMPTZ", "6", "6", "9", "5", "NULL", "NULL"},
		{"DATE", "91", "10", "DATE '", "'", "NULL", "1", "false", "2", "NULL", "false", "false", "DATE", "NULL", "NULL", "9", "1", "NULL", "NULL"},
		{"BOOLEAN", "16", "1", "NULL", "NULL", "NULL", "1", "false", "2", "NULL", "false", "false", "BOOLEAN", "NULL", "NULL", "16", "NULL", "NULL", "NULL"},
	} {
		if got := byName[want[0]]; !slices.Equal(got, want) {
			t.Errorf("%s:\ngot  %q\nwant %q", want[0], got, want)
		}
	}

	filters := []struct {
		name     string
		dataType int32
		want     []string
	}{
		{"varchar", int32(pb.XdbcDataType_XDBC_VARCHAR), []string{"ENUM", "JSON", "UUID", "VARCHAR"}},
		{"timestamp", int32(pb.XdbcDataType_XDBC_TIMESTAMP), []string{"TIMESTAMP", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMP_S"}},
		{"decimal", int32(pb.XdbcDataType_XDBC_DECIMAL), []string{"DECIMAL", "HUGEINT", "UHUGEINT"}},
		{"none", 9999, nil},
	}
	for _, tt := range filters {
		t.Run(tt.name, func(t *testing.T) {
			info, err := c.SQL().GetXdbcTypeInfo(ctx, &tt.dataType)
			if err != nil {
				t.Fatal(err)
			}
			schema, rows := fetch(t, c, info)
			wantSchema(t, info, schema, schema_ref.XdbcTypeInfo)
			var got []string
			for _, r := range rows {
				got = append(got, r[0])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("types: got %q, want %q", got, tt.want)
			}
		})
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// sqlInfo fetches GetSqlInfo for ids (all when none) as a map.
func sqlInfo(t *testing.T, c *client.Client, ids ...flightsql.SqlInfo) map[uint32]any {
	t.Helper()
	ctx := c.Context(context.Background())
	info, err := c.SQL().GetSqlInfo(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	wantSchema(t, info, nil, schema_ref.SqlInfo)
	rdr, err := c.SQL().DoGet(ctx, info.GetEndpoint()[0].GetTicket())
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	out := map[uint32]any{}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		names := rec.Column(0).(*array.Uint32)
		vals := rec.Column(1).(*array.DenseUnion)
		for i := 0; i < int(rec.NumRows()); i++ {
			child := vals.Field(vals.ChildID(i))
			j := int(vals.ValueOffset(i))
			switch a := child.(type) {
			case *array.String:
				out[names.Value(i)] = a.Value(j)
			case *array.Boolean:
				out[names.Value(i)] = a.Value(j)
			case *array.Int64:
				out[names.Value(i)] = a.Value(j)
			case *array.Int32:
				out[names.Value(i)] = a.Value(j)
			case *array.List:
				start, end := a.ValueOffsets(j)
				strs := a.ListValues().(*array.String)
				var l []string
				for k := start; k < end; k++ {
					l = append(l, strs.Value(int(k)))
				}
				out[names.Value(i)] = l
			case *array.Map:
				start, end := a.ValueOffsets(j)
				keys := a.Keys().(*array.Int32)
				items := a.Items().(*array.List)
				m := map[int32][]int32{}
				for k := start; k < end; k++ {
					s, e := items.ValueOffsets(int(k))
					vals := items.ListValues().(*array.Int32)
					for v := s; v < e; v++ {
						m[keys.Value(int(k))] = append(m[keys.Value(int(k))], vals.Value(int(v)))
					}
				}
				out[names.Value(i)] = m
			}
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMetadata_SqlInfo(t *testing.T) {
	_, c := start(t)
	all := sqlInfo(t, c)
	// Every id Flight SQL defines has a value, so clients asking for all
	// of them (the JDBC driver does) get an answer for each.
	for id, name := range pb.SqlInfo_name {
		if _, ok := all[uint32(id)]; !ok {
			t.Errorf("%s (%d) has no value", name, id)
		}
	}
	// Value types are the ones the JDBC driver casts to.
	tests := []struct {
		id   flightsql.SqlInfo
		want any
	}{
		{flightsql.SqlInfoFlightSqlServerName, "quiver"},
		{flightsql.SqlInfoFlightSqlServerArrowVersion, arrow.PkgVersion},
		{flightsql.SqlInfoFlightSqlServerReadOnly, false},
		{flightsql.SqlInfoFlightSqlServerSubstrait, false},
		{flightsql.SqlInfoFlightSqlServerTransaction, int32(flightsql.SqlTransactionTransaction)},
		{flightsql.SqlInfoFlightSqlServerStatementTimeout, int32(30 * 60 * 1000)},
		{flightsql.SqlInfoFlightSqlServerTransactionTimeout, int32(60 * 1000)},
		{flightsql.SqlInfoDDLCatalog, false},
		{flightsql.SqlInfoDDLTable, true},
		{flightsql.SqlInfoIdentifierCase, int64(flightsql.SqlCaseSensitivityCaseInsensitive)},
		{flightsql.SqlInfoIdentifierQuoteChar, `"`},
		{flightsql.SqlInfoSearchStringEscape, `\`},
		{flightsql.SqlInfoNullOrdering, int32(pb.SqlNullOrdering_SQL_NULLS_SORTED_AT_END)},
		{flightsql.SqlInfoSupportedGroupBy, int32(3)},
		{flightsql.SqlInfoSupportedUnions, int32(3)},
		{flightsql.SqlInfoSupportedSubqueries, int32(15)},
		{flightsql.SqlInfoOuterJoinsSupportLevel, int32(6)},
		{flightsql.SqlInfoSavePointsSupported, false},
		{flightsql.SqlInfoSelectForUpdateSupported, false},
		{flightsql.SqlInfoStoredProceduresSupported, false},
		{flightsql.SqlInfoMaxColumnNameLen, int64(0)},
		{flightsql.SqlInfoDefaultTransactionIsolation, int64(pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_REPEATABLE_READ)},
		{flightsql.SqlInfoSupportedTransactionsIsolationlevels, int32(1 << pb.SqlTransactionIsolationLevel_SQL_TRANSACTION_REPEATABLE_READ)},
		{flightsql.SqlInfoSupportedResultSetTypes, int32(1 << pb.SqlSupportedResultSetType_SQL_RESULT_SET_TYPE_FORWARD_ONLY)},
	}
	for _, tt := range tests {
		t.Run(pb.SqlInfo(tt.id).String(), func(t *testing.T) {
			if got := all[uint32(tt.id)]; got != tt.want {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
	if v, _ := all[uint32(flightsql.SqlInfoFlightSqlServerVersion)].(string); !strings.Contains(v, "DuckDB") {
		t.Errorf("version: got %q, want it to name DuckDB's", v)
	}
	for id, want := range map[flightsql.SqlInfo]string{
		flightsql.SqlInfoKeywords:          "SELECT",
		flightsql.SqlInfoNumericFunctions:  "abs",
		flightsql.SqlInfoStringFunctions:   "lower",
		flightsql.SqlInfoSystemFunctions:   "current_database",
		flightsql.SqlInfoDateTimeFunctions: "date_trunc",
	} {
		if l, _ := all[uint32(id)].([]string); !slices.Contains(l, want) {
			t.Errorf("%s: got %q, want it to hold %q", pb.SqlInfo(id), l, want)
		}
	}
	// Every function listed exists.
	var funcs []string
	for _, id := range []flightsql.SqlInfo{flightsql.SqlInfoNumericFunctions, flightsql.SqlInfoStringFunctions,
		flightsql.SqlInfoSystemFunctions, flightsql.SqlInfoDateTimeFunctions} {
		funcs = append(funcs, all[uint32(id)].([]string)...)
	}
	quoted := make([]string, len(funcs))
	for i, f := range funcs {
		quoted[i] = "'" + f + "'"
	}
	_, missing := queryAll(t, c, "SELECT f FROM (VALUES "+strings.Join(wrapEach(quoted), ", ")+") v(f) "+
		"WHERE f NOT IN (SELECT function_name FROM duckdb_functions())")
	if len(missing) > 0 {
		t.Errorf("functions listed that DuckDB lacks: %q", missing)
	}

	// Asking for some ids returns just those; ids Flight SQL does not
	// define are left out.
	some := sqlInfo(t, c, flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoTransactionsSupported, flightsql.SqlInfo(9999))
	if len(some) != 2 || some[uint32(flightsql.SqlInfoFlightSqlServerName)] != "quiver" || some[uint32(flightsql.SqlInfoTransactionsSupported)] != true {
		t.Errorf("some ids: got %v", some)
	}
	if got := sqlInfo(t, c, flightsql.SqlInfo(9999)); len(got) != 0 {
		t.Errorf("unknown id only: got %v, want nothing", got)
	}
}

func wrapEach(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = "(" + v + ")"
	}
	return out
}

// TestMetadata_SupportsConvert checks every conversion GetSqlInfo claims
// by running it.
func TestMetadata_SupportsConvert(t *testing.T) {
	_, c := start(t)
	conv := sqlInfo(t, c, flightsql.SqlInfoSupportsConvert)[uint32(flightsql.SqlInfoSupportsConvert)].(map[int32][]int32)
	if len(conv) == 0 {
		t.Fatal("no conversions reported")
	}
	type kind struct{ sqlType, sample string }
	kinds := map[pb.SqlSupportsConvert]kind{
		pb.SqlSupportsConvert_SQL_CONVERT_BIGINT:              {"BIGINT", "42"},
		pb.SqlSupportsConvert_SQL_CONVERT_BINARY:              {"BLOB", "'ab'"},
		pb.SqlSupportsConvert_SQL_CONVERT_BIT:                 {"BOOLEAN", "true"},
		pb.SqlSupportsConvert_SQL_CONVERT_CHAR:                {"VARCHAR", ""},
		pb.SqlSupportsConvert_SQL_CONVERT_DATE:                {"DATE", "'2024-01-02'"},
		pb.SqlSupportsConvert_SQL_CONVERT_DECIMAL:             {"DECIMAL(18, 3)", "12.5"},
		pb.SqlSupportsConvert_SQL_CONVERT_FLOAT:               {"FLOAT", "1.5"},
		pb.SqlSupportsConvert_SQL_CONVERT_INTEGER:             {"INTEGER", "7"},
		pb.SqlSupportsConvert_SQL_CONVERT_INTERVAL_DAY_TIME:   {"INTERVAL", "'1 day 02:00:00'"},
		pb.SqlSupportsConvert_SQL_CONVERT_INTERVAL_YEAR_MONTH: {"INTERVAL", "'1 year 2 months'"},
		pb.SqlSupportsConvert_SQL_CONVERT_LONGVARBINARY:       {"BLOB", "'ab'"},
		pb.SqlSupportsConvert_SQL_CONVERT_LONGVARCHAR:         {"VARCHAR", ""},
		pb.SqlSupportsConvert_SQL_CONVERT_NUMERIC:             {"DECIMAL(18, 3)", "12.5"},
		pb.SqlSupportsConvert_SQL_CONVERT_REAL:                {"REAL", "2.5"},
		pb.SqlSupportsConvert_SQL_CONVERT_SMALLINT:            {"SMALLINT", "3"},
		pb.SqlSupportsConvert_SQL_CONVERT_TIME:                {"TIME", "'12:34:56'"},
		pb.SqlSupportsConvert_SQL_CONVERT_TIMESTAMP:           {"TIMESTAMP", "'2024-01-02 12:34:56'"},
		pb.SqlSupportsConvert_SQL_CONVERT_TINYINT:             {"TINYINT", "1"},
		pb.SqlSupportsConvert_SQL_CONVERT_VARBINARY:           {"BLOB", "'ab'"},
		pb.SqlSupportsConvert_SQL_CONVERT_VARCHAR:             {"VARCHAR", ""},
	}
	// Strings convert to a type when they spell one of its values.
	spelled := map[string]string{"BIGINT": "42", "BLOB": "ab", "BOOLEAN": "true", "VARCHAR": "text", "DATE": "2024-01-02",
		"DECIMAL(18, 3)": "12.5", "FLOAT": "1.5", "INTEGER": "7", "INTERVAL": "1 day", "REAL": "2.5", "SMALLINT": "3",
		"TIME": "12:34:56", "TIMESTAMP": "2024-01-02 12:34:56", "TINYINT": "1"}
	for from, tos := range conv {
		src := kinds[pb.SqlSupportsConvert(from)]
		t.Run(pb.SqlSupportsConvert(from).String(), func(t *testing.T) {
			for _, to := range tos {
				dst := kinds[pb.SqlSupportsConvert(to)]
				sample := src.sample
				if src.sqlType == "VARCHAR" {
					sample = "'" + spelled[dst.sqlType] + "'"
				}
				sql := fmt.Sprintf("SELECT CAST(CAST(%s AS %s) AS %s)", sample, src.sqlType, dst.sqlType)
				if n, _ := queryAllErr(c, sql); n != 1 {
					t.Errorf("%s to %s claimed, but %s fails", pb.SqlSupportsConvert(from), pb.SqlSupportsConvert(to), sql)
				}
			}
		})
	}
}

// queryAllErr is queryAll returning the error instead of failing.
func queryAllErr(c *client.Client, sql string) (int64, error) {
	return testutil.CountRows(context.Background(), c, sql)
}

// TestMetadata_Unsupported checks the Flight SQL calls quiver does not
// support say so, and the ones it answers trivially work.
func TestMetadata_Unsupported(t *testing.T) {
	_, c := start(t)
	ctx := c.Context(context.Background())
	plan := flightsql.SubstraitPlan{Plan: []byte{1, 2, 3}, Version: "0.50.0"}
	_, err := c.SQL().ExecuteSubstrait(ctx, plan)
	wantCode(t, err, codes.Unimplemented, "send the query as SQL")
	_, err = c.SQL().PrepareSubstrait(ctx, plan)
	wantCode(t, err, codes.Unimplemented, "Substrait")
	_, err = c.SQL().ExecuteSubstraitUpdate(ctx, plan)
	wantCode(t, err, codes.Unimplemented, "Substrait")

	info, err := c.SQL().Execute(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.SQL().RenewFlightEndpoint(ctx, &flight.RenewFlightEndpointRequest{Endpoint: info.Endpoint[0]})
	if err != nil {
		t.Fatal(err)
	}
	if string(ep.GetTicket().GetTicket()) != string(info.Endpoint[0].GetTicket().GetTicket()) {
		t.Errorf("renewed endpoint: got a different ticket")
	}
	if n, _ := queryAllErr(c, "SELECT 1"); n != 1 {
		t.Errorf("after renew: got %d rows", n)
	}

	// PollFlightInfo on a metadata command completes at once.
	desc, err := descriptorFor(&pb.CommandGetCatalogs{})
	if err != nil {
		t.Fatal(err)
	}
	poll, err := c.SQL().Client.PollFlightInfo(ctx, desc)
	if err != nil {
		t.Fatal(err)
	}
	if poll.GetInfo() == nil || poll.GetProgress() != 1 || poll.GetFlightDescriptor() != nil {
		t.Errorf("poll: got %v, want a complete FlightInfo", poll)
	}
	if _, rows := fetch(t, c, poll.GetInfo()); len(rows) != 2 {
		t.Errorf("poll result: got %q", rows)
	}
}

// descriptorFor is the command descriptor of a Flight SQL command.
func descriptorFor(cmd proto.Message) (*flight.FlightDescriptor, error) {
	a, err := anypb.New(cmd)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(a)
	if err != nil {
		return nil, err
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}, nil
}
