package mysqlvalue

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/quiverdata/quiver/engine"
)

// openConn opens an in-memory engine and one connection to it.
func openConn(t *testing.T) *engine.Conn {
	t.Helper()
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("open engine: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("engine conn: %v", err)
	}
	t.Cleanup(conn.Release)
	return conn
}

// columnOf runs a one-row query and returns its first column, as the
// engine hands it to the MySQL endpoint.
func columnOf(t *testing.T, conn *engine.Conn, sql string) arrow.Array {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("%s: no rows (%v)", sql, rows.Err())
	}
	col := rows.RecordBatch().Column(0)
	col.Retain()
	t.Cleanup(col.Release)
	return col
}

// written returns row i of arr as a result column sends it: its text, or
// "NULL" for a value sent as NULL.
func written(t *testing.T, arr arrow.Array, i int, binary bool) string {
	t.Helper()
	if arr.IsNull(i) {
		return "NULL"
	}
	c, err := NewColumn(arr, binary)
	if err != nil {
		t.Fatalf("NewColumn(%s): %v", arr.DataType(), err)
	}
	b, ok := c.Append(nil, i)
	if !ok {
		return "NULL"
	}
	return string(b)
}

// TestTypes_Column checks, for each type DuckDB hands the endpoint, the
// table's column definition and how a value is written: as a result
// column in the text and binary protocols, as NULL, inside DuckDB's text
// of a LIST, and inside the JSON text of a json column.
func TestTypes_Column(t *testing.T) {
	conn := openConn(t)
	const same = "\x00" // binary: as the text protocol
	tests := []struct {
		expr     string
		typ      querypb.Type
		length   uint32
		decimals uint32
		charset  uint32
		text     string // the value in a result column
		binary   string // in the binary protocol
		nested   string // DuckDB's text of [value, NULL]
		json     string // the JSON of [value, NULL]
	}{
		{"true", sqltypes.Int8, 1, 0, CharsetBinary, "1", same, "[true, NULL]", "[true, null]"},
		{"(-5)::TINYINT", sqltypes.Int8, 4, 0, CharsetBinary, "-5", same, "[-5, NULL]", "[-5, null]"},
		{"(-300)::SMALLINT", sqltypes.Int16, 6, 0, CharsetBinary, "-300", same, "[-300, NULL]", "[-300, null]"},
		{"(-70000)::INTEGER", sqltypes.Int32, 11, 0, CharsetBinary, "-70000", same, "[-70000, NULL]", "[-70000, null]"},
		{"(-9223372036854775807)::BIGINT", sqltypes.Int64, 20, 0, CharsetBinary, "-9223372036854775807", same,
			"[-9223372036854775807, NULL]", "[-9223372036854775807, null]"},
		{"255::UTINYINT", sqltypes.Uint8, 3, 0, CharsetBinary, "255", same, "[255, NULL]", "[255, null]"},
		{"65535::USMALLINT", sqltypes.Uint16, 5, 0, CharsetBinary, "65535", same, "[65535, NULL]", "[65535, null]"},
		{"4294967295::UINTEGER", sqltypes.Uint32, 10, 0, CharsetBinary, "4294967295", same, "[4294967295, NULL]", "[4294967295, null]"},
		{"18446744073709551615::UBIGINT", sqltypes.Uint64, 20, 0, CharsetBinary, "18446744073709551615", same,
			"[18446744073709551615, NULL]", "[18446744073709551615, null]"},
		{"(-170141183460469231731687303715884105727)::HUGEINT", sqltypes.Decimal, 39, 0, CharsetBinary,
			"-170141183460469231731687303715884105727", same,
			"[-170141183460469231731687303715884105727, NULL]", "[-170141183460469231731687303715884105727, null]"},
		{"(-12.5)::DECIMAL(10,2)", sqltypes.Decimal, 12, 2, CharsetBinary, "-12.50", same, "[-12.50, NULL]", "[-12.50, null]"},
		{"1.5::FLOAT", sqltypes.Float32, 12, DecimalsNotFixed, CharsetBinary, "1.5", same, "[1.5, NULL]", "[1.5, null]"},
		{"'nan'::DOUBLE", sqltypes.Float64, 22, DecimalsNotFixed, CharsetBinary, "nan", same, "[nan, NULL]", `["nan", null]`},
		{"'-inf'::DOUBLE", sqltypes.Float64, 22, DecimalsNotFixed, CharsetBinary, "-inf", same, "[-inf, NULL]", `["-inf", null]`},
		{"3::DOUBLE", sqltypes.Float64, 22, DecimalsNotFixed, CharsetBinary, "3.0", same, "[3.0, NULL]", "[3.0, null]"},
		{"'a, b'", sqltypes.VarChar, TextColumnLength, 0, CharsetUTF8MB4, "a, b", same, "['a, b', NULL]", `["a, b", null]`},
		{`'say "hi"' || chr(10)`, sqltypes.VarChar, TextColumnLength, 0, CharsetUTF8MB4, "say \"hi\"\n", same,
			"['say \"hi\"\n', NULL]", `["say \"hi\"\n", null]`},
		{"'null'", sqltypes.VarChar, TextColumnLength, 0, CharsetUTF8MB4, "null", same, "['null', NULL]", `["null", null]`},
		{"'00000000-0000-0000-0000-000000000001'::UUID", sqltypes.VarChar, TextColumnLength, 0, CharsetUTF8MB4,
			"00000000-0000-0000-0000-000000000001", same, "[00000000-0000-0000-0000-000000000001, NULL]",
			`["00000000-0000-0000-0000-000000000001", null]`},
		// JSON arrives as a string, so it is quoted as one where DuckDB
		// would print it bare.
		{`'{"a": 1}'::JSON`, sqltypes.VarChar, TextColumnLength, 0, CharsetUTF8MB4, `{"a": 1}`, same,
			`['{"a": 1}', NULL]`, `["{\"a\": 1}", null]`},
		{`'\x61\x27\x5C\x00'::BLOB`, sqltypes.Blob, LongLength, 0, CharsetBinary, "a'\\\x00", same,
			`[a\x27\x5C\x00, NULL]`, `["a\\x27\\x5C\\x00", null]`},
		{"DATE '2024-02-29'", sqltypes.Date, 10, 0, CharsetBinary, "2024-02-29", same, "[2024-02-29, NULL]", `["2024-02-29", null]`},
		{"DATE '0044-03-15 (BC)'", sqltypes.Date, 10, 0, CharsetBinary, "0044-03-15 (BC)", "NULL",
			"['0044-03-15 (BC)', NULL]", `["0044-03-15 (BC)", null]`},
		{"'infinity'::DATE", sqltypes.Date, 10, 0, CharsetBinary, "infinity", "NULL", "[infinity, NULL]", `["infinity", null]`},
		{"TIME '12:34:56.5'", sqltypes.Time, 15, 6, CharsetBinary, "12:34:56.5", same, "['12:34:56.5', NULL]", `["12:34:56.5", null]`},
		{"TIMESTAMP '2024-01-02 03:04:05.25'", sqltypes.Datetime, 26, 6, CharsetBinary, "2024-01-02 03:04:05.25", same,
			"['2024-01-02 03:04:05.25', NULL]", `["2024-01-02 03:04:05.25", null]`},
		{"TIMESTAMP_S '2024-01-02 03:04:05'", sqltypes.Datetime, 19, 0, CharsetBinary, "2024-01-02 03:04:05", same,
			"['2024-01-02 03:04:05', NULL]", `["2024-01-02 03:04:05", null]`},
		{"TIMESTAMP_MS '2024-01-02 03:04:05.123'", sqltypes.Datetime, 23, 3, CharsetBinary, "2024-01-02 03:04:05.123", same,
			"['2024-01-02 03:04:05.123', NULL]", `["2024-01-02 03:04:05.123", null]`},
		{"TIMESTAMP_NS '2024-01-02 03:04:05.123456789'", sqltypes.Datetime, 26, 6, CharsetBinary,
			"2024-01-02 03:04:05.123456789", "2024-01-02 03:04:05.123456",
			"['2024-01-02 03:04:05.123456789', NULL]", `["2024-01-02 03:04:05.123456789", null]`},
		{"'infinity'::TIMESTAMP", sqltypes.Datetime, 26, 6, CharsetBinary, "infinity", "NULL", "[infinity, NULL]", `["infinity", null]`},
		// An instant: in UTC, with DuckDB's +00 only inside a nested value.
		{"TIMESTAMPTZ '2024-01-02 03:04:05+00'", sqltypes.Timestamp, 26, 6, CharsetBinary, "2024-01-02 03:04:05", same,
			"['2024-01-02 03:04:05+00', NULL]", `["2024-01-02 03:04:05+00", null]`},
		{"INTERVAL '1 year 2 days 3 seconds'", sqltypes.VarChar, TextColumnLength, 0, CharsetUTF8MB4, "1 year 2 days 00:00:03", same,
			"['1 year 2 days 00:00:03', NULL]", `["1 year 2 days 00:00:03", null]`},
		{"'b'::ENUM('a', 'b')", sqltypes.VarChar, TextColumnLength, 0, CharsetUTF8MB4, "b", same, "[b, NULL]", `["b", null]`},
		// An Arrow union has no nulls of its own: the list's NULL is a
		// union whose member is NULL.
		{"union_value(n := 7)::UNION(n INTEGER, s VARCHAR)", sqltypes.VarChar, TextColumnLength, 0, CharsetUTF8MB4, "7", same,
			"[7, NULL]", `[{"n": 7}, {"n": null}]`},
		{"[1, NULL, 3]", sqltypes.TypeJSON, LongLength, 0, CharsetUTF8MB4, "[1, null, 3]", same,
			"[[1, NULL, 3], NULL]", "[[1, null, 3], null]"},
		{"[1, 2]::INTEGER[2]", sqltypes.TypeJSON, LongLength, 0, CharsetUTF8MB4, "[1, 2]", same, "[[1, 2], NULL]", "[[1, 2], null]"},
		{"{'a': 1, 'b c': 'x'}", sqltypes.TypeJSON, LongLength, 0, CharsetUTF8MB4, `{"a": 1, "b c": "x"}`, same,
			"[{'a': 1, 'b c': x}, NULL]", `[{"a": 1, "b c": "x"}, null]`},
		{"MAP {1: 'x', 2: NULL}", sqltypes.TypeJSON, LongLength, 0, CharsetUTF8MB4, `{"1": "x", "2": null}`, same,
			"[{1=x, 2=NULL}, NULL]", `[{"1": "x", "2": null}, null]`},
		{"MAP {'k': [DATE '2024-01-01']}", sqltypes.TypeJSON, LongLength, 0, CharsetUTF8MB4, `{"k": ["2024-01-01"]}`, same,
			"[{k=[2024-01-01]}, NULL]", `[{"k": ["2024-01-01"]}, null]`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			col := columnOf(t, conn, "SELECT "+tt.expr)
			list := columnOf(t, conn, "SELECT ["+tt.expr+", NULL]")
			nested := checkColumn(t, col, list, columnWant{tt.typ, tt.length, tt.decimals, tt.charset, tt.text, tt.nested, tt.json})
			want := tt.binary
			if want == same {
				want = tt.text
			}
			if got := written(t, col, 0, true); got != want {
				t.Errorf("binary protocol: got %q, want %q", got, want)
			}
			// DuckDB's own cast of the list is what AppendText writes.
			cast := columnOf(t, conn, "SELECT (["+tt.expr+", NULL])::VARCHAR")
			if got, want := string(nested), cast.(*array.String).Value(0); got != want && !strings.Contains(tt.expr, "JSON") {
				t.Errorf("DuckDB casts the list to %q, AppendText writes %q", want, got)
			}
		})
	}
}

// columnWant is what the table gives a column: its MySQL definition, the
// text of its first value, DuckDB's text of a list holding it and NULL,
// and that list's JSON.
type columnWant struct {
	typ                       querypb.Type
	length, decimals, charset uint32
	text, nested, json        string
}

// textCharset is the character set MySQL clients expect of a column of
// type typ: UTF-8 for text, binary for numbers, times and blobs.
func textCharset(typ querypb.Type) uint32 {
	if typ == sqltypes.VarChar || typ == sqltypes.TypeJSON {
		return CharsetUTF8MB4
	}
	return CharsetBinary
}

// checkColumn checks values' column definition and first value's text,
// and list's (a list of that value and NULL) text and JSON; it returns
// the list's text.
func checkColumn(t *testing.T, values, list arrow.Array, want columnWant) []byte {
	t.Helper()
	f, err := Field(arrow.Field{Name: "c", Type: values.DataType()})
	if err != nil {
		t.Fatalf("Field(%s): %v", values.DataType(), err)
	}
	if f.Type != want.typ || f.ColumnLength != want.length || f.Decimals != want.decimals || f.Charset != want.charset {
		t.Errorf("Field(%s) = %v length %d decimals %d charset %d, want %v %d %d %d", values.DataType(), f.Type,
			f.ColumnLength, f.Decimals, f.Charset, want.typ, want.length, want.decimals, want.charset)
	}
	if got := written(t, values, 0, false); got != want.text {
		t.Errorf("text protocol: got %q, want %q", got, want.text)
	}
	nested, err := AppendText(nil, list, 0)
	if err != nil {
		t.Fatalf("AppendText: %v", err)
	}
	if got := string(nested); got != want.nested {
		t.Errorf("DuckDB's text: got %q, want %q", got, want.nested)
	}
	if got := written(t, list, 0, false); got != want.json {
		t.Errorf("JSON text: got %q, want %q", got, want.json)
	}
	return nested
}

// TestTypes_ColumnArrow checks the types the engine does not make today
// but the table serves, from arrays built in Arrow: the column
// definition, the text of the value, DuckDB's text of [value, NULL] and
// its JSON.
func TestTypes_ColumnArrow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	tests := []struct {
		dt       arrow.DataType
		value    string // the value in Arrow's JSON
		typ      querypb.Type
		length   uint32
		decimals uint32
		text     string
		nested   string
		json     string
	}{
		{arrow.Null, "null", sqltypes.Null, 0, 0, "NULL", "[NULL, NULL]", "[null, null]"},
		{arrow.FixedWidthTypes.Float16, "1.5", sqltypes.Float32, 12, DecimalsNotFixed, "1.5", "[1.5, NULL]", "[1.5, null]"},
		{&arrow.Decimal32Type{Precision: 5, Scale: 2}, `"-1.25"`, sqltypes.Decimal, 7, 2, "-1.25", "[-1.25, NULL]", "[-1.25, null]"},
		{&arrow.Decimal64Type{Precision: 12, Scale: 0}, `"42"`, sqltypes.Decimal, 13, 0, "42", "[42, NULL]", "[42, null]"},
		{&arrow.Decimal256Type{Precision: 60, Scale: 1}, `"-12345678901234567890123456789012345678901.5"`, sqltypes.Decimal, 62, 1,
			"-12345678901234567890123456789012345678901.5", "[-12345678901234567890123456789012345678901.5, NULL]",
			"[-12345678901234567890123456789012345678901.5, null]"},
		{arrow.FixedWidthTypes.Time32ms, `"01:02:03.004"`, sqltypes.Time, 12, 3, "01:02:03.004", "['01:02:03.004', NULL]",
			`["01:02:03.004", null]`},
		{arrow.FixedWidthTypes.Time64ns, `"01:02:03.000000005"`, sqltypes.Time, 15, 6, "01:02:03.000000005",
			"['01:02:03.000000005', NULL]", `["01:02:03.000000005", null]`},
		{arrow.FixedWidthTypes.Duration_us, "1500000", sqltypes.VarChar, TextColumnLength, 0, "00:00:01.5",
			"['00:00:01.5', NULL]", `["00:00:01.5", null]`},
		{arrow.FixedWidthTypes.DayTimeInterval, `{"days": 1, "milliseconds": 500}`, sqltypes.VarChar, TextColumnLength, 0,
			"1 day 00:00:00.5", "['1 day 00:00:00.5', NULL]", `["1 day 00:00:00.5", null]`},
		{arrow.FixedWidthTypes.MonthInterval, `{"months": 14}`, sqltypes.VarChar, TextColumnLength, 0, "1 year 2 months",
			"[1 year 2 months, NULL]", `["1 year 2 months", null]`},
		{arrow.BinaryTypes.LargeString, `"x y"`, sqltypes.VarChar, TextColumnLength, 0, "x y", "[x y, NULL]", `["x y", null]`},
		{arrow.BinaryTypes.StringView, `""`, sqltypes.VarChar, TextColumnLength, 0, "", "['', NULL]", `["", null]`},
		{arrow.BinaryTypes.BinaryView, `"AAE="`, sqltypes.Blob, LongLength, 0, "\x00\x01", `[\x00\x01, NULL]`,
			`["\\x00\\x01", null]`},
		{&arrow.FixedSizeBinaryType{ByteWidth: 2}, `"YWI="`, sqltypes.Blob, LongLength, 0, "ab", "[ab, NULL]", `["ab", null]`},
		{arrow.LargeListOf(arrow.PrimitiveTypes.Int16), "[1, null]", sqltypes.TypeJSON, LongLength, 0, "[1, null]",
			"[[1, NULL], NULL]", "[[1, null], null]"},
		{arrow.ListViewOf(arrow.BinaryTypes.String), `["a", "="]`, sqltypes.TypeJSON, LongLength, 0, `["a", "="]`,
			"[[a, '='], NULL]", `[["a", "="], null]`},
		{arrow.DenseUnionOf([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int8}, {Name: "s", Type: arrow.BinaryTypes.String}},
			[]arrow.UnionTypeCode{0, 1}), `[1, "a b,"]`, sqltypes.VarChar, TextColumnLength, 0, "a b,", "['a b,', NULL]",
			`[{"s": "a b,"}, {"i": null}]`},
	}
	for _, tt := range tests {
		t.Run(tt.dt.String(), func(t *testing.T) {
			list, _, err := array.FromJSON(mem, arrow.ListOf(tt.dt), strings.NewReader("[["+tt.value+", null]]"))
			if err != nil {
				t.Fatalf("build [%s, null]: %v", tt.value, err)
			}
			defer list.Release()
			values := list.(*array.List).ListValues()
			checkColumn(t, values, list, columnWant{tt.typ, tt.length, tt.decimals, textCharset(tt.typ), tt.text, tt.nested, tt.json})
			// A union has no nulls of its own: its member's NULL is its.
			if got := written(t, values, 1, false); got != "NULL" {
				t.Errorf("NULL: got %q", got)
			}
		})
	}
}

// TestTypes_Unsupported checks that a type the table has no entry for is
// refused with ErrUnsupported, alone or inside a nested type.
func TestTypes_Unsupported(t *testing.T) {
	ree := arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String)
	for _, dt := range []arrow.DataType{ree, arrow.ListOf(ree), arrow.StructOf(arrow.Field{Name: "a", Type: ree})} {
		t.Run(dt.String(), func(t *testing.T) {
			_, err := Field(arrow.Field{Name: "c", Type: dt})
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("Field: got %v, want ErrUnsupported", err)
			}
			if err != nil && !strings.Contains(err.Error(), "run_end_encoded") {
				t.Errorf("Field: %v does not name the type", err)
			}
		})
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	b := array.NewRunEndEncodedBuilder(mem, arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String)
	defer b.Release()
	b.Append(1)
	b.ValueBuilder().(*array.StringBuilder).Append("a")
	arr := b.NewArray()
	defer arr.Release()
	if _, err := NewColumn(arr, false); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewColumn: got %v, want ErrUnsupported", err)
	}
	if _, err := AppendText(nil, arr, 0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("AppendText: got %v, want ErrUnsupported", err)
	}
}

// TestTypes_IsBytes checks which parameter types take a client's bytes as
// they are.
func TestTypes_IsBytes(t *testing.T) {
	tests := []struct {
		dt   arrow.DataType
		want bool
	}{
		{arrow.BinaryTypes.Binary, true},
		{arrow.BinaryTypes.LargeBinary, true},
		{arrow.BinaryTypes.BinaryView, true},
		{&arrow.FixedSizeBinaryType{ByteWidth: 16}, true},
		{arrow.BinaryTypes.String, false},
		{arrow.PrimitiveTypes.Int64, false},
		{arrow.ListOf(arrow.BinaryTypes.Binary), false},
		{arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.Binary), false},
	}
	for _, tt := range tests {
		t.Run(tt.dt.String(), func(t *testing.T) {
			if got := IsBytes(tt.dt); got != tt.want {
				t.Errorf("IsBytes(%s) = %v, want %v", tt.dt, got, tt.want)
			}
		})
	}
}

// TestColumn_UnionNull checks that a UNION column's NULL, which DuckDB's
// Arrow export keeps in the member (the union has no validity of its
// own), is sent as NULL in both protocols, not as the member's slot.
func TestColumn_UnionNull(t *testing.T) {
	conn := openConn(t)
	col := columnOf(t, conn, "SELECT u FROM (VALUES (union_value(n := 7)::UNION(n INTEGER, s VARCHAR)), (NULL), (union_value(s := 'x')::UNION(n INTEGER, s VARCHAR))) v(u)")
	for _, binary := range []bool{false, true} {
		for i, want := range []string{"7", "NULL", "x"} {
			if got := written(t, col, i, binary); got != want {
				t.Errorf("row %d (binary %v): got %q, want %q", i, binary, got, want)
			}
		}
	}
}
