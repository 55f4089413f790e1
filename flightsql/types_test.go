package flightsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	_ "github.com/apache/arrow-go/v18/arrow/flight/flightsql/driver"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// typeCase is one DuckDB type: a value of it as a SQL literal, the Arrow
// type its results have, and the same value appended to an Arrow builder
// of that type.
type typeCase struct {
	name    string
	sqlType string
	literal string
	want    arrow.DataType
	append  func(b array.Builder)
}

func dec(t *testing.T, s string, precision, scale int32) decimal128.Num {
	t.Helper()
	n, err := decimal128.FromString(s, precision, scale)
	if err != nil {
		t.Fatalf("decimal %s: %v", s, err)
	}
	return n
}

func nullable(name string, dt arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: true}
}

// typeCases covers every type PRODUCT.md lists.
func typeCases(t *testing.T) []typeCase {
	ts := time.Date(2024, 2, 29, 12, 34, 56, 789012345, time.UTC)
	utc := time.Date(2024, 2, 29, 10, 34, 56, 789012000, time.UTC) // 12:34:56.789012+02
	structType := arrow.StructOf(nullable("a", arrow.PrimitiveTypes.Int32), nullable("b", arrow.BinaryTypes.String))
	appendStruct := func(b array.Builder, a int32, s string) {
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(a)
		sb.FieldBuilder(1).(*array.StringBuilder).Append(s)
	}
	return []typeCase{
		{"TINYINT", "TINYINT", "-128", arrow.PrimitiveTypes.Int8,
			func(b array.Builder) { b.(*array.Int8Builder).Append(math.MinInt8) }},
		{"SMALLINT", "SMALLINT", "-32768", arrow.PrimitiveTypes.Int16,
			func(b array.Builder) { b.(*array.Int16Builder).Append(math.MinInt16) }},
		{"INTEGER", "INTEGER", "2147483647", arrow.PrimitiveTypes.Int32,
			func(b array.Builder) { b.(*array.Int32Builder).Append(math.MaxInt32) }},
		{"BIGINT", "BIGINT", "-9223372036854775808", arrow.PrimitiveTypes.Int64,
			func(b array.Builder) { b.(*array.Int64Builder).Append(math.MinInt64) }},
		{"UTINYINT", "UTINYINT", "255", arrow.PrimitiveTypes.Uint8,
			func(b array.Builder) { b.(*array.Uint8Builder).Append(math.MaxUint8) }},
		{"USMALLINT", "USMALLINT", "65535", arrow.PrimitiveTypes.Uint16,
			func(b array.Builder) { b.(*array.Uint16Builder).Append(math.MaxUint16) }},
		{"UINTEGER", "UINTEGER", "4294967295", arrow.PrimitiveTypes.Uint32,
			func(b array.Builder) { b.(*array.Uint32Builder).Append(math.MaxUint32) }},
		{"UBIGINT", "UBIGINT", "18446744073709551615", arrow.PrimitiveTypes.Uint64,
			func(b array.Builder) { b.(*array.Uint64Builder).Append(math.MaxUint64) }},
		{"HUGEINT", "HUGEINT", "-12345678901234567890123456789012345678", &arrow.Decimal128Type{Precision: 38, Scale: 0},
			func(b array.Builder) {
				b.(*array.Decimal128Builder).Append(dec(t, "-12345678901234567890123456789012345678", 38, 0))
			}},
		{"FLOAT", "FLOAT", "-1.5", arrow.PrimitiveTypes.Float32,
			func(b array.Builder) { b.(*array.Float32Builder).Append(-1.5) }},
		{"DOUBLE", "DOUBLE", "2.25e300", arrow.PrimitiveTypes.Float64,
			func(b array.Builder) { b.(*array.Float64Builder).Append(2.25e300) }},
		{"DECIMAL(4,1)", "DECIMAL(4,1)", "-123.4", &arrow.Decimal128Type{Precision: 4, Scale: 1},
			func(b array.Builder) { b.(*array.Decimal128Builder).Append(dec(t, "-123.4", 4, 1)) }},
		{"DECIMAL(9,2)", "DECIMAL(9,2)", "1234567.89", &arrow.Decimal128Type{Precision: 9, Scale: 2},
			func(b array.Builder) { b.(*array.Decimal128Builder).Append(dec(t, "1234567.89", 9, 2)) }},
		{"DECIMAL(18,6)", "DECIMAL(18,6)", "-123456789012.345678", &arrow.Decimal128Type{Precision: 18, Scale: 6},
			func(b array.Builder) { b.(*array.Decimal128Builder).Append(dec(t, "-123456789012.345678", 18, 6)) }},
		{"DECIMAL(38,10)", "DECIMAL(38,10)", "1234567890123456789012345678.0123456789", &arrow.Decimal128Type{Precision: 38, Scale: 10},
			func(b array.Builder) {
				b.(*array.Decimal128Builder).Append(dec(t, "1234567890123456789012345678.0123456789", 38, 10))
			}},
		{"VARCHAR short", "VARCHAR", "'héllo'", arrow.BinaryTypes.String,
			func(b array.Builder) { b.(*array.StringBuilder).Append("héllo") }},
		{"VARCHAR long", "VARCHAR", "'a string longer than twelve bytes, with ünïcödé'", arrow.BinaryTypes.String,
			func(b array.Builder) {
				b.(*array.StringBuilder).Append("a string longer than twelve bytes, with ünïcödé")
			}},
		{"BLOB", "BLOB", `'\x00\xFFabc'::BLOB`, arrow.BinaryTypes.Binary,
			func(b array.Builder) { b.(*array.BinaryBuilder).Append([]byte{0, 0xFF, 'a', 'b', 'c'}) }},
		{"BOOLEAN", "BOOLEAN", "true", arrow.FixedWidthTypes.Boolean,
			func(b array.Builder) { b.(*array.BooleanBuilder).Append(true) }},
		{"DATE", "DATE", "DATE '1969-07-20'", arrow.FixedWidthTypes.Date32,
			func(b array.Builder) {
				b.(*array.Date32Builder).Append(arrow.Date32FromTime(time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC)))
			}},
		{"TIME", "TIME", "TIME '23:59:59.123456'", arrow.FixedWidthTypes.Time64us,
			func(b array.Builder) {
				b.(*array.Time64Builder).Append(arrow.Time64((23*time.Hour + 59*time.Minute + 59*time.Second + 123456*time.Microsecond).Microseconds()))
			}},
		{"TIMESTAMP", "TIMESTAMP", "TIMESTAMP '2024-02-29 12:34:56.789012'", &arrow.TimestampType{Unit: arrow.Microsecond},
			func(b array.Builder) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro())) }},
		{"TIMESTAMP_S", "TIMESTAMP_S", "TIMESTAMP_S '2024-02-29 12:34:56'", &arrow.TimestampType{Unit: arrow.Second},
			func(b array.Builder) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts.Unix())) }},
		{"TIMESTAMP_MS", "TIMESTAMP_MS", "TIMESTAMP_MS '2024-02-29 12:34:56.789'", &arrow.TimestampType{Unit: arrow.Millisecond},
			func(b array.Builder) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMilli())) }},
		{"TIMESTAMP_NS", "TIMESTAMP_NS", "TIMESTAMP_NS '2024-02-29 12:34:56.789012345'", &arrow.TimestampType{Unit: arrow.Nanosecond},
			func(b array.Builder) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixNano())) }},
		{"TIMESTAMPTZ", "TIMESTAMPTZ", "TIMESTAMPTZ '2024-02-29 12:34:56.789012+02'", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
			func(b array.Builder) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(utc.UnixMicro())) }},
		{"INTERVAL", "INTERVAL", "INTERVAL '1 year 2 months 3 days 04:05:06.789'", arrow.FixedWidthTypes.MonthDayNanoInterval,
			func(b array.Builder) {
				b.(*array.MonthDayNanoIntervalBuilder).Append(arrow.MonthDayNanoInterval{Months: 14, Days: 3,
					Nanoseconds: (4*time.Hour + 5*time.Minute + 6789*time.Millisecond).Nanoseconds()})
			}},
		{"UUID", "UUID", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", arrow.BinaryTypes.String,
			func(b array.Builder) { b.(*array.StringBuilder).Append("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11") }},
		// ENUM arrives as plain utf8: the JDBC driver cannot read
		// dictionary arrays.
		{"ENUM", "mood", "'happy'", arrow.BinaryTypes.String,
			func(b array.Builder) { b.(*array.StringBuilder).Append("happy") }},
		{"LIST", "INTEGER[]", "[1, NULL, 3]", arrow.ListOfField(nullable("l", arrow.PrimitiveTypes.Int32)),
			func(b array.Builder) {
				lb := b.(*array.ListBuilder)
				lb.Append(true)
				vb := lb.ValueBuilder().(*array.Int32Builder)
				vb.Append(1)
				vb.AppendNull()
				vb.Append(3)
			}},
		{"LIST of VARCHAR", "VARCHAR[]", "['a', 'a string longer than twelve bytes', '']", arrow.ListOfField(nullable("l", arrow.BinaryTypes.String)),
			func(b array.Builder) {
				lb := b.(*array.ListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"a", "a string longer than twelve bytes", ""}, nil)
			}},
		{"LIST empty", "BIGINT[]", "[]", arrow.ListOfField(nullable("l", arrow.PrimitiveTypes.Int64)),
			func(b array.Builder) { b.(*array.ListBuilder).Append(true) }},
		{"ARRAY", "DOUBLE[3]", "[1.5, 2.5, 3.5]", arrow.FixedSizeListOfField(3, nullable("", arrow.PrimitiveTypes.Float64)),
			func(b array.Builder) {
				lb := b.(*array.FixedSizeListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.Float64Builder).AppendValues([]float64{1.5, 2.5, 3.5}, nil)
			}},
		{"STRUCT", "STRUCT(a INTEGER, b VARCHAR)", "{'a': 1, 'b': 'x'}", structType,
			func(b array.Builder) { appendStruct(b, 1, "x") }},
		{"LIST of STRUCT", "STRUCT(a INTEGER, b VARCHAR)[]", "[{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'yy'}]", arrow.ListOfField(nullable("l", structType)),
			func(b array.Builder) {
				lb := b.(*array.ListBuilder)
				lb.Append(true)
				appendStruct(lb.ValueBuilder(), 1, "x")
				appendStruct(lb.ValueBuilder(), 2, "yy")
			}},
		{"MAP", "MAP(VARCHAR, INTEGER)", "MAP {'k1': 1, 'k2': NULL}", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32),
			func(b array.Builder) {
				mb := b.(*array.MapBuilder)
				mb.Append(true)
				mb.KeyBuilder().(*array.StringBuilder).AppendValues([]string{"k1", "k2"}, nil)
				ib := mb.ItemBuilder().(*array.Int32Builder)
				ib.Append(1)
				ib.AppendNull()
			}},
		{"JSON", "JSON", `'{"a": [1, 2], "b": null}'`, arrow.BinaryTypes.String,
			func(b array.Builder) { b.(*array.StringBuilder).Append(`{"a": [1, 2], "b": null}`) }},
	}
}

// column reads the first column of a stream: its type and its cells.
func column(t *testing.T, r array.RecordReader) (arrow.DataType, []string) {
	t.Helper()
	var cells []string
	for r.Next() {
		col := r.RecordBatch().Column(0)
		for i := 0; i < col.Len(); i++ {
			cells = append(cells, cell(col, i))
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("read result: %v", err)
	}
	return r.Schema().Field(0).Type, cells
}

// prepared runs a prepared statement with params bound: a query returns
// its first column, an update its row count.
func prepared(t *testing.T, c *client.Client, sql string, params arrow.RecordBatch) (arrow.DataType, []string, int64) {
	t.Helper()
	ctx := c.Context(context.Background())
	st, err := c.SQL().Prepare(ctx, sql)
	if err != nil {
		t.Fatalf("prepare %s: %v", sql, err)
	}
	defer st.Close(ctx)
	st.SetParameters(params)
	if upd, _ := st.IsUpdate(); upd {
		n, err := st.ExecuteUpdate(ctx)
		if err != nil {
			t.Fatalf("execute %s: %v", sql, err)
		}
		return nil, nil, n
	}
	info, err := st.Execute(ctx)
	if err != nil {
		t.Fatalf("execute %s: %v", sql, err)
	}
	rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatalf("fetch %s: %v", sql, err)
	}
	defer rdr.Release()
	dt, cells := column(t, rdr)
	return dt, cells, 0
}

// TestTypes_RoundTrip checks, for every type: the Arrow type of a result,
// its values with a NULL row, and the same values bound as parameters,
// both to a query (SELECT ?::T) and to an INSERT read back.
func TestTypes_RoundTrip(t *testing.T) {
	mem := testmem.Checked(t)
	_, c := start(t)
	ctx := context.Background()
	if _, err := c.Exec(ctx, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')"); err != nil {
		t.Fatal(err)
	}
	for i, tc := range typeCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			b := array.NewBuilder(mem, tc.want)
			defer b.Release()
			tc.append(b)
			b.AppendNull()
			wantArr := b.NewArray()
			defer wantArr.Release()
			want := make([]string, wantArr.Len())
			for j := range want {
				want[j] = cell(wantArr, j)
			}
			check := func(what string, got arrow.DataType, cells []string) {
				t.Helper()
				if !arrow.TypeEqual(got, tc.want) {
					t.Errorf("%s: arrow type: got %s, want %s", what, got, tc.want)
				}
				if !slices.Equal(cells, want) {
					t.Errorf("%s: values: got %q, want %q", what, cells, want)
				}
			}

			// (a), (b): a stored value and a NULL come back as Arrow.
			table := fmt.Sprintf("t%d", i)
			if _, err := c.Exec(ctx, fmt.Sprintf("CREATE TABLE %[1]s (v %[2]s); INSERT INTO %[1]s VALUES (%[3]s), (NULL)", table, tc.sqlType, tc.literal)); err != nil {
				t.Fatal(err)
			}
			r, err := c.Query(ctx, "SELECT v FROM "+table+" ORDER BY rowid")
			if err != nil {
				t.Fatal(err)
			}
			dt, cells := column(t, r)
			r.Release()
			check("query", dt, cells)

			params := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{nullable("1", tc.want)}, nil), []arrow.Array{wantArr}, int64(wantArr.Len()))
			defer params.Release()

			// (c) As parameters of a query, one result row per parameter
			// row.
			dt, cells, _ = prepared(t, c, fmt.Sprintf("SELECT ?::%s AS v", tc.sqlType), params)
			check("SELECT ?", dt, cells)

			// ... and of an INSERT, read back.
			ptable := fmt.Sprintf("p%d", i)
			if _, err := c.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (v %s)", ptable, tc.sqlType)); err != nil {
				t.Fatal(err)
			}
			if _, _, n := prepared(t, c, "INSERT INTO "+ptable+" VALUES (?)", params); n != 2 {
				t.Errorf("INSERT ?: got %d rows, want 2", n)
			}
			r, err = c.Query(ctx, "SELECT v FROM "+ptable+" ORDER BY rowid")
			if err != nil {
				t.Fatal(err)
			}
			dt, cells = column(t, r)
			r.Release()
			check("INSERT ?", dt, cells)
		})
	}
}

// TestTypes_Null checks an untyped NULL. DuckDB gives a NULL literal the
// type INTEGER in a result, so it arrives as a null int32.
func TestTypes_Null(t *testing.T) {
	_, c := start(t)
	r, err := c.Query(context.Background(), "SELECT NULL AS n FROM range(3)")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	dt, cells := column(t, r)
	if dt.ID() != arrow.INT32 {
		t.Errorf("type: got %s, want int32", dt)
	}
	if want := []string{"NULL", "NULL", "NULL"}; !slices.Equal(cells, want) {
		t.Errorf("values: got %q, want %q", cells, want)
	}
}

// TestTypes_NoViews checks that no result carries utf8view, binaryview or
// large types, which JDBC and older pandas reject, even for strings
// nested in lists, structs and maps.
func TestTypes_NoViews(t *testing.T) {
	_, c := start(t)
	r, err := c.Query(context.Background(), `SELECT 'a' AS s, 'b'::BLOB AS b, ['x'] AS l,
		{'k': 'v'} AS st, MAP {'k': 'v'} AS m, gen_random_uuid() AS u, '{}'::JSON AS j`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	for r.Next() {
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, dt arrow.DataType)
	walk = func(path string, dt arrow.DataType) {
		switch dt.ID() {
		case arrow.STRING_VIEW, arrow.BINARY_VIEW, arrow.LARGE_STRING, arrow.LARGE_BINARY, arrow.LARGE_LIST, arrow.LIST_VIEW:
			t.Errorf("%s: got %s", path, dt)
		}
		if nt, ok := dt.(arrow.NestedType); ok {
			for _, f := range nt.Fields() {
				walk(path+"."+f.Name, f.Type)
			}
		}
	}
	for _, f := range r.Schema().Fields() {
		walk(f.Name, f.Type)
	}
}

// TestTypes_DatabaseSQL drives quiver through arrow-go's database/sql
// driver: a query scanned into Go values, a prepared statement with
// arguments, and transactions.
func TestTypes_DatabaseSQL(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Security: server.Security{
		Users: []server.UserSpec{{Name: "ana", Password: "pw-ana", Role: auth.RoleAdmin}},
	}})
	db, err := sql.Open("flightsql", "flightsql://ana:pw-ana@"+srv.FlightAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("query", func(t *testing.T) {
		var (
			i    int64
			s    string
			f    float64
			ok   bool
			d    time.Time
			ts   time.Time
			tz   time.Time
			num  float64
			blob []byte
			null sql.NullString
		)
		err := db.QueryRowContext(ctx, `SELECT 42::BIGINT, 'héllo', 1.5::DOUBLE, true, DATE '2024-02-29',
			TIMESTAMP '2024-02-29 12:34:56.5', TIMESTAMPTZ '2024-02-29 12:34:56+02', 12.25::DECIMAL(10, 2),
			'\x01\x02'::BLOB, NULL::VARCHAR`).Scan(&i, &s, &f, &ok, &d, &ts, &tz, &num, &blob, &null)
		if err != nil {
			t.Fatal(err)
		}
		if i != 42 || s != "héllo" || f != 1.5 || !ok || num != 12.25 || string(blob) != "\x01\x02" || null.Valid {
			t.Errorf("got %v %q %v %v %v %q %v, want 42 héllo 1.5 true 12.25 \\x01\\x02 NULL", i, s, f, ok, num, blob, null)
		}
		if want := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC); !d.Equal(want) {
			t.Errorf("date: got %v, want %v", d, want)
		}
		if want := time.Date(2024, 2, 29, 12, 34, 56, 5e8, time.UTC); !ts.Equal(want) {
			t.Errorf("timestamp: got %v, want %v", ts, want)
		}
		if want := time.Date(2024, 2, 29, 10, 34, 56, 0, time.UTC); !tz.Equal(want) || tz.Location() != time.UTC {
			t.Errorf("timestamptz: got %v, want %v in UTC", tz, want)
		}
	})

	if _, err := db.ExecContext(ctx, "CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR, price DOUBLE)"); err != nil {
		t.Fatal(err)
	}
	t.Run("prepared", func(t *testing.T) {
		ins, err := db.PrepareContext(ctx, "INSERT INTO items VALUES (?, ?, ?)")
		if err != nil {
			t.Fatal(err)
		}
		defer ins.Close()
		for i, name := range []string{"apple", "pear", "plum"} {
			res, err := ins.ExecContext(ctx, int64(i+1), name, float64(i)+0.5)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Errorf("rows affected: got %d, want 1", n)
			}
		}
		rows, err := db.QueryContext(ctx, "SELECT id, name, price FROM items WHERE id >= ? AND name <> ? ORDER BY id", int64(2), "plum")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var id int64
			var name string
			var price float64
			if err := rows.Scan(&id, &name, &price); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d %s %.1f", id, name, price))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if want := []string{"2 pear 1.5"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})

	t.Run("transaction", func(t *testing.T) {
		count := func() int64 {
			t.Helper()
			var n int64
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := count()
		for _, commit := range []bool{false, true} {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO items VALUES (?, ?, ?)", int64(100), "in a transaction", 9.5); err != nil {
				t.Fatal(err)
			}
			var name string
			if err := tx.QueryRowContext(ctx, "SELECT name FROM items WHERE id = 100").Scan(&name); err != nil || name != "in a transaction" {
				t.Errorf("inside the transaction: got %q, %v", name, err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			want := before
			if commit {
				want++
			}
			if got := count(); got != want {
				t.Errorf("after commit=%v: got %d rows, want %d", commit, got, want)
			}
		}
	})

	t.Run("error", func(t *testing.T) {
		_, err := db.ExecContext(ctx, "INSERT INTO items VALUES (1, 'dup', 0)")
		if err == nil || !strings.Contains(err.Error(), "Duplicate key") {
			t.Errorf("duplicate key: got %v", err)
		}
	})
}
