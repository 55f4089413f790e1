package mysqlwire

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestServer_Query(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "")

	t.Run("rows", func(t *testing.T) {
		rows, err := db.Query("SELECT range AS n, 'v' || range AS s FROM range(3) ORDER BY n")
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		if got, want := strings.Join(cols, ","), "n,s"; got != want {
			t.Errorf("columns = %s, want %s", got, want)
		}
		var got []string
		for rows.Next() {
			var n int64
			var s string
			if err := rows.Scan(&n, &s); err != nil {
				t.Fatalf("scan: %v", err)
			}
			got = append(got, fmt.Sprintf("%d=%s", n, s))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("rows: %v", err)
		}
		if want := "0=v0 1=v1 2=v2"; strings.Join(got, " ") != want {
			t.Errorf("rows = %v, want %s", got, want)
		}
	})

	// A result of many batches, whose strings the server reads from
	// recycled memory: every value arrives intact, in the text protocol
	// and in the binary one (a query with a parameter is prepared).
	t.Run("strings over many batches", func(t *testing.T) {
		const n = 50_000
		if _, err := db.Exec(fmt.Sprintf("CREATE TABLE strs AS SELECT range AS n, repeat('ab', (range %% 7)::INTEGER) || 'value_' || range AS s FROM range(%d)", n)); err != nil {
			t.Fatalf("create: %v", err)
		}
		for _, tc := range []struct {
			name string
			sql  string
			args []any
		}{
			{"text", "SELECT n, s FROM strs ORDER BY n", nil},
			{"binary", "SELECT n, s FROM strs WHERE n >= ? ORDER BY n", []any{0}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rows, err := db.Query(tc.sql, tc.args...)
				if err != nil {
					t.Fatalf("query: %v", err)
				}
				defer rows.Close()
				i := 0
				for ; rows.Next(); i++ {
					var k int64
					var s string
					if err := rows.Scan(&k, &s); err != nil {
						t.Fatalf("scan: %v", err)
					}
					if want := strings.Repeat("ab", i%7) + fmt.Sprintf("value_%d", i); k != int64(i) || s != want {
						t.Fatalf("row %d = %d, %q; want %d, %q", i, k, s, i, want)
					}
				}
				if err := rows.Err(); err != nil || i != n {
					t.Fatalf("%d rows, err %v; want %d", i, err, n)
				}
			})
		}
	})

	t.Run("empty result keeps columns", func(t *testing.T) {
		rows, err := db.Query("SELECT 1 AS a, 'x' AS b WHERE false")
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		if len(cols) != 2 || rows.Next() {
			t.Errorf("got columns %v and a row, want 2 columns and no row", cols)
		}
	})

	t.Run("ddl and dml report rows affected", func(t *testing.T) {
		if _, err := db.Exec("CREATE TABLE q (id INTEGER PRIMARY KEY, v VARCHAR)"); err != nil {
			t.Fatalf("create: %v", err)
		}
		res, err := db.Exec("INSERT INTO q VALUES (1, 'a'), (2, 'b'), (3, NULL)")
		if err != nil {
			t.Fatalf("insert: %v", err)
		}
		if n, _ := res.RowsAffected(); n != 3 {
			t.Errorf("rows affected = %d, want 3", n)
		}
		res, err = db.Exec("UPDATE q SET v = 'z' WHERE id >= 2")
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if n, _ := res.RowsAffected(); n != 2 {
			t.Errorf("rows affected = %d, want 2", n)
		}
	})

	t.Run("backticks quote identifiers", func(t *testing.T) {
		var v string
		if err := db.QueryRow("SELECT `v` FROM `q` WHERE `id` = 1").Scan(&v); err != nil {
			t.Fatalf("query: %v", err)
		}
		if v != "a" {
			t.Errorf("v = %q, want a", v)
		}
	})

	t.Run("several statements without multiStatements return the last", func(t *testing.T) {
		var n int
		if err := db.QueryRow("CREATE TABLE q2 AS SELECT 1 AS x; INSERT INTO q2 VALUES (2); SELECT sum(x) FROM q2").Scan(&n); err != nil {
			t.Fatalf("query: %v", err)
		}
		if n != 3 {
			t.Errorf("sum = %d, want 3", n)
		}
	})

	t.Run("empty query", func(t *testing.T) {
		_, err := db.Exec("  ; ")
		if got := mysqlErrNum(err); got != 1065 {
			t.Errorf("error = %v (%d), want 1065", err, got)
		}
		// Comments alone are an OK, as in MySQL (mycli sends a dump's
		// last line, "-- Dump completed", on its own).
		for _, q := range []string{"  -- nothing\n ; ", "/* c */", "/*M!999999\\- enable the sandbox mode */", "/*!99999 SET @x = 1 */"} {
			if _, err := db.Exec(q); err != nil {
				t.Errorf("%q: %v, want OK", q, err)
			}
		}
	})
}

func TestServer_MultiStatements(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "multiStatements=true")
	rows, err := db.Query("SELECT 1 AS a; CREATE TABLE m (x INT); INSERT INTO m VALUES (5), (6); SELECT x, 'it''s; fine' AS s FROM m ORDER BY x; -- trailing comment")
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	defer rows.Close()
	var sets []string
	for {
		var got []string
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("scan: %v", err)
			}
			got = append(got, fmt.Sprintf("%v", stringify(vals)))
		}
		sets = append(sets, strings.Join(got, ";"))
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	want := "[1] | [5 it's; fine];[6 it's; fine]"
	if got := strings.Join(nonEmpty(sets), " | "); got != want {
		t.Errorf("result sets = %q, want %q", got, want)
	}

	t.Run("stops at the first error", func(t *testing.T) {
		_, err := db.Exec("CREATE TABLE m2 (x INT); SELEC 1; CREATE TABLE m3 (x INT)")
		if got := mysqlErrNum(err); got != 1064 {
			t.Fatalf("error = %v, want 1064", err)
		}
		var n int
		if err := db.QueryRow("SELECT count(*) FROM information_schema.tables WHERE table_name IN ('m2', 'm3')").Scan(&n); err != nil {
			t.Fatalf("count: %v", err)
		}
		if n != 1 {
			t.Errorf("tables created = %d, want 1 (m2 only)", n)
		}
	})
}

// stringify turns the []byte values go-sql-driver returns into strings.
func stringify(vals []any) []any {
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = string(b)
		}
	}
	return vals
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// typesTable creates a table holding one row of every common DuckDB type
// and one row of NULLs.
const typesTable = `CREATE TABLE types (
	id INTEGER, b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INTEGER, i64 BIGINT,
	u8 UTINYINT, u16 USMALLINT, u32 UINTEGER, u64 UBIGINT, h HUGEINT,
	f FLOAT, d DOUBLE, dec DECIMAL(10,2), bigdec DECIMAL(38,10),
	s VARCHAR, bl BLOB, dt DATE, tm TIME, ts TIMESTAMP, tstz TIMESTAMPTZ,
	ts_s TIMESTAMP_S, ts_ms TIMESTAMP_MS, ts_ns TIMESTAMP_NS, iv INTERVAL,
	u UUID, e ENUM('red', 'green'), j JSON, l INTEGER[], st STRUCT(a INTEGER, b VARCHAR),
	m MAP(VARCHAR, INTEGER), arr DOUBLE[2]);
INSERT INTO types VALUES (1, true, -8, -16, -32, -64, 8, 16, 32, 18446744073709551615,
	-170141183460469231731687303715884105727, 1.5, 0.1, -123.45, 1234567890123456789012345678.0123456789,
	'héllo, wörld', '\xDE\xAD\x00\xBE'::BLOB, DATE '2024-02-29', TIME '12:34:56.789',
	TIMESTAMP '2024-02-29 12:34:56.123456', TIMESTAMPTZ '2024-02-29 12:34:56+00',
	TIMESTAMP_S '2024-02-29 12:34:56', TIMESTAMP_MS '2024-02-29 12:34:56.5', TIMESTAMP_NS '2024-02-29 12:34:56.123456789',
	INTERVAL 1 YEAR + INTERVAL 2 DAY + INTERVAL 3 SECOND, '6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'green', '{"k": [1, 2]}',
	[1, NULL, 3], {'a': 1, 'b': 'x y'}, MAP {'k': 1}, [1.5, 2.0]);
INSERT INTO types (id) VALUES (2);`

// typesWant is the text of the first row, and the MySQL type of each
// column as go-sql-driver names it.
var typesWant = []struct{ col, text, dbType string }{
	{"id", "1", "INT"},
	{"b", "1", "TINYINT"},
	{"i8", "-8", "TINYINT"},
	{"i16", "-16", "SMALLINT"},
	{"i32", "-32", "INT"},
	{"i64", "-64", "BIGINT"},
	{"u8", "8", "UNSIGNED TINYINT"},
	{"u16", "16", "UNSIGNED SMALLINT"},
	{"u32", "32", "UNSIGNED INT"},
	{"u64", "18446744073709551615", "UNSIGNED BIGINT"},
	{"h", "-170141183460469231731687303715884105727", "DECIMAL"},
	{"f", "1.5", "FLOAT"},
	{"d", "0.1", "DOUBLE"},
	{"dec", "-123.45", "DECIMAL"},
	{"bigdec", "1234567890123456789012345678.0123456789", "DECIMAL"},
	{"s", "héllo, wörld", "VARCHAR"},
	{"bl", "\xde\xad\x00\xbe", "BLOB"},
	{"dt", "2024-02-29", "DATE"},
	{"tm", "12:34:56.789", "TIME"},
	{"ts", "2024-02-29 12:34:56.123456", "DATETIME"},
	{"tstz", "2024-02-29 12:34:56", "TIMESTAMP"},
	{"ts_s", "2024-02-29 12:34:56", "DATETIME"},
	{"ts_ms", "2024-02-29 12:34:56.5", "DATETIME"},
	{"ts_ns", "2024-02-29 12:34:56.123456789", "DATETIME"},
	{"iv", "1 year 2 days 00:00:03", "VARCHAR"},
	{"u", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "VARCHAR"},
	{"e", "green", "VARCHAR"},
	{"j", `{"k": [1, 2]}`, "VARCHAR"},
	{"l", "[1, null, 3]", "JSON"},
	{"st", `{"a": 1, "b": "x y"}`, "JSON"},
	{"m", `{"k": 1}`, "JSON"},
	{"arr", "[1.5, 2.0]", "JSON"},
}

func TestServer_Types(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "")
	if _, err := db.Exec(typesTable); err != nil {
		t.Fatalf("create types: %v", err)
	}
	rows, err := db.Query("SELECT * FROM types ORDER BY id")
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	defer rows.Close()
	colTypes, err := rows.ColumnTypes()
	if err != nil {
		t.Fatalf("column types: %v", err)
	}
	if len(colTypes) != len(typesWant) {
		t.Fatalf("got %d columns, want %d", len(colTypes), len(typesWant))
	}
	for i, w := range typesWant {
		if got := colTypes[i].DatabaseTypeName(); got != w.dbType {
			t.Errorf("column %s: type %s, want %s", w.col, got, w.dbType)
		}
	}
	vals := make([]sql.RawBytes, len(typesWant))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		t.Fatalf("no first row: %v", rows.Err())
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatalf("scan: %v", err)
	}
	for i, w := range typesWant {
		if got := string(vals[i]); got != w.text {
			t.Errorf("column %s = %q, want %q", w.col, got, w.text)
		}
	}
	if !rows.Next() {
		t.Fatalf("no second row: %v", rows.Err())
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatalf("scan: %v", err)
	}
	for i, w := range typesWant[1:] {
		if vals[i+1] != nil {
			t.Errorf("column %s of the NULL row = %q, want NULL", w.col, vals[i+1])
		}
	}

	t.Run("parseTime", func(t *testing.T) {
		db := ts.open(t, "parseTime=true")
		var dt, ts, tstz time.Time
		if err := db.QueryRow("SELECT dt, ts, tstz FROM types WHERE id = 1").Scan(&dt, &ts, &tstz); err != nil {
			t.Fatalf("scan: %v", err)
		}
		if want := time.Date(2024, 2, 29, 12, 34, 56, 123456000, time.UTC); !ts.Equal(want) {
			t.Errorf("ts = %v, want %v", ts, want)
		}
		if want := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC); !dt.Equal(want) {
			t.Errorf("dt = %v, want %v", dt, want)
		}
		if want := time.Date(2024, 2, 29, 12, 34, 56, 0, time.UTC); !tstz.Equal(want) {
			t.Errorf("tstz = %v, want %v", tstz, want)
		}
	})
}

// TestServer_TextMatchesDuckDB checks that values sent as text read exactly
// as DuckDB's own cast to VARCHAR, for the types the endpoint formats
// itself: each query selects a value and its ::VARCHAR. Nested values go
// out as JSON (the catalog calls them json): they must mean what DuckDB's
// to_json says.
func TestServer_TextMatchesDuckDB(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "")
	exprs := []string{
		"[1, 2, NULL]", "['a', 'b c', '', 'NULL', 'null', ' x', 'y ', 'a,b', 'it''s', 'x\\y', 'é']",
		"[[1, 2], [], NULL]", "{'a': 1, 'b c': 'x', 'it''s': NULL}", "{'a': {'b': [1.5, NULL]}}",
		"MAP {'k': 1, 'k=2': NULL}", "MAP {1: [1], 2: []}", "[MAP {'a': {'x': 1}}]",
		"[DATE '2020-01-01', DATE '0044-03-15 (BC)', 'infinity'::DATE, DATE '20000-01-01']",
		"[TIMESTAMP '2020-01-01 00:00:00', TIMESTAMP '2020-01-01 01:02:03.5', 'infinity'::TIMESTAMP, '-infinity'::TIMESTAMP]",
		"[TIMESTAMPTZ '2020-06-01 12:00:00.123+00']", "[TIMESTAMP_NS '2020-01-01 00:00:00.123456789']",
		"[TIMESTAMP_S '1960-01-01 00:00:01', TIMESTAMP_MS '1969-12-31 23:59:59.999']",
		"[TIME '00:00:00', TIME '23:59:59.999999', TIME '24:00:00']",
		"[INTERVAL 1 YEAR, INTERVAL 14 MONTH, -INTERVAL 25 HOUR, INTERVAL 1 DAY - INTERVAL 1 HOUR, INTERVAL 0 DAY, INTERVAL 1 MICROSECOND]",
		"[1.5::FLOAT, 16777216::FLOAT, 1e20::FLOAT, 0.1::FLOAT]",
		"[123456789.0::DOUBLE, 1e15, 1e16, 1e-5, 0.0001, 'nan'::DOUBLE, 'inf'::DOUBLE, '-inf'::DOUBLE, 5e-324, 1.7976931348623157e308, -2.5]",
		"[1.25::DECIMAL(5,2), -0.05::DECIMAL(10,2), 0::DECIMAL(4,3)]",
		"[170141183460469231731687303715884105727::HUGEINT, -170141183460469231731687303715884105727::HUGEINT]",
		"['\\xAA\\x01ab\\x27\\x5C '::BLOB, ''::BLOB]", "[true, false]", "[uuid()]::VARCHAR[]",
		"['red'::ENUM('red', 'green')]", "[[1, 2]::INTEGER[2]]", "[union_value(n := 2)]",
		"[1::UTINYINT, 255::UTINYINT, 18446744073709551615::UBIGINT, (-9223372036854775807 - 1)::BIGINT]",
		"1.5::DECIMAL(18,3)", "-0.000001::DECIMAL(38,6)", "123::DECIMAL(38,0)", "12345678901234567890.5::DECIMAL(38,1)",
		// go-sql-driver parses a top-level DOUBLE, so doubles are checked
		// inside lists here and as text by the mysql CLI test.
		"[1e300::DOUBLE, -1e-300::DOUBLE, 3.0::DOUBLE, (1/3)::DOUBLE, (-7)::FLOAT / 3, -0.0::DOUBLE]",
		"DATE '1970-01-01'", "DATE '1969-12-31'", "DATE '0001-01-01'", "DATE '9999-12-31'", "'-infinity'::DATE",
		"TIME '01:02:03.250'", "TIMESTAMP '1900-03-01 00:00:00.000001'", "TIMESTAMP '0100-01-01 (BC) 10:00:00'",
		"INTERVAL 100 HOUR", "-INTERVAL 1 MONTH - INTERVAL 1 DAY", "INTERVAL 2 YEAR + INTERVAL 61 MINUTE",
	}
	for _, e := range exprs {
		rows, err := db.Query(fmt.Sprintf("SELECT x, x::VARCHAR, to_json(x)::VARCHAR FROM (SELECT %s AS x)", e))
		if err != nil {
			t.Errorf("%s: %v", e, err)
			continue
		}
		types, _ := rows.ColumnTypes()
		var got, want, wantJSON string
		if !rows.Next() {
			t.Errorf("%s: no row: %v", e, rows.Err())
		} else if err := rows.Scan(&got, &want, &wantJSON); err != nil {
			t.Errorf("%s: %v", e, err)
		}
		rows.Close()
		if types[0].DatabaseTypeName() == "JSON" {
			if !jsonSame(t, got, wantJSON) {
				t.Errorf("%s: sent %q, DuckDB's to_json says %q", e, got, wantJSON)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: sent %q, DuckDB says %q", e, got, want)
		}
	}
}

// jsonSame reports whether two JSON texts hold the same value, numbers
// compared by value (as float32 where that is all one has). DuckDB's to_json writes NaN and the infinities as
// bare words, which the endpoint sends as the strings "nan", "inf" and
// "-inf".
func jsonSame(t *testing.T, a, b string) bool {
	t.Helper()
	b = strings.NewReplacer("-Infinity", `"-inf"`, "Infinity", `"inf"`, "NaN", `"nan"`).Replace(b)
	decode := func(s string) any {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Errorf("not JSON: %q: %v", s, err)
		}
		return v
	}
	var same func(x, y any) bool
	same = func(x, y any) bool {
		switch x := x.(type) {
		case json.Number:
			y, ok := y.(json.Number)
			if !ok {
				return false
			}
			fx, _, errX := big.ParseFloat(string(x), 10, 200, big.ToNearestEven)
			fy, _, errY := big.ParseFloat(string(y), 10, 200, big.ToNearestEven)
			if errX != nil || errY != nil {
				return false
			}
			// to_json widens a FLOAT to a double; the endpoint sends the
			// FLOAT's shortest digits.
			f32x, _ := fx.Float32()
			f32y, _ := fy.Float32()
			return fx.Cmp(fy) == 0 || f32x == f32y
		case []any:
			y, ok := y.([]any)
			if !ok || len(x) != len(y) {
				return false
			}
			for i := range x {
				if !same(x[i], y[i]) {
					return false
				}
			}
			return true
		case map[string]any:
			y, ok := y.(map[string]any)
			if !ok || len(x) != len(y) {
				return false
			}
			for k, v := range x {
				if w, ok := y[k]; !ok || !same(v, w) {
					return false
				}
			}
			return true
		}
		return x == y
	}
	return same(decode(a), decode(b))
}

func TestServer_Errors(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "")
	if _, err := db.Exec("CREATE TABLE e (id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO e VALUES (1, 1)"); err != nil {
		t.Fatalf("setup: %v", err)
	}
	tests := []struct {
		name, sql string
		want      uint16
		msg       string
	}{
		{"syntax", "SELEC 1", 1064, "syntax error"},
		{"unknown table", "SELECT * FROM nosuch", 1146, "nosuch"},
		{"unknown column", "SELECT nocol FROM e", 1054, "nocol"},
		{"duplicate key", "INSERT INTO e VALUES (1, 2)", 1062, "Duplicate key"},
		{"not null", "INSERT INTO e VALUES (2, NULL)", 1048, "NOT NULL"},
		{"table exists", "CREATE TABLE e (x INT)", 1050, "already exists"},
		{"conversion", "SELECT 'x'::INTEGER", 1292, "Could not convert"},
		{"unknown function", "SELECT nosuchfn(1)", 1305, "nosuchfn"},
		{"unknown variable", "SELECT @@nosuchvar", 1193, "nosuchvar"},
		{"unknown database", "USE nosuchdb", 1049, "nosuchdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.Exec(tt.sql)
			if got := mysqlErrNum(err); got != tt.want {
				t.Fatalf("error = %v (number %d), want number %d", err, got, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not mention %q", err, tt.msg)
			}
		})
	}
	// The connection is still fine after all of that.
	var n int
	if err := db.QueryRow("SELECT count(*) FROM e").Scan(&n); err != nil || n != 1 {
		t.Errorf("count after errors = %d, %v; want 1", n, err)
	}
}

func TestServer_LargeResult(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "")
	const n = 2_000_000
	start := time.Now()
	rows, err := db.Query(fmt.Sprintf("SELECT range AS i, range * 2 AS j FROM range(%d)", n))
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	defer rows.Close()
	var count, sum int64
	for rows.Next() {
		var i, j int64
		if err := rows.Scan(&i, &j); err != nil {
			t.Fatalf("scan: %v", err)
		}
		count++
		sum += j - i
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	if count != n || sum != int64(n)*(n-1)/2 {
		t.Errorf("got %d rows summing to %d, want %d rows summing to %d", count, sum, n, int64(n)*(n-1)/2)
	}
	t.Logf("%d rows in %v", count, time.Since(start))
}

func TestServer_StatementTimeout(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// go-sql-driver cancels by closing the connection; the server must
	// interrupt the statement and keep serving.
	_, err := db.ExecContext(ctx, "SELECT count(*) FROM range(100000000000)")
	if err == nil {
		t.Fatalf("long query finished within its timeout")
	}
	// The server notices the client hung up, interrupts the statement
	// and closes the session, long before the statement could finish.
	waitFor(t, 5*time.Second, "the cancelled session to close", func() bool { return ts.sessionCount() == 0 })
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("query after cancel = %d, %v", one, err)
	}
}

// TestServer_StreamingMemoryBounded checks that a result is streamed, not
// gathered: the heap stays far below the size of the result while it is
// read.
func TestServer_StreamingMemoryBounded(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "")
	const n = 3_000_000 // about 400 MB of row text
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	rows, err := db.Query(fmt.Sprintf("SELECT range, repeat('x', 120) FROM range(%d)", n))
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	defer rows.Close()
	var count int
	var s sql.RawBytes
	var i int64
	for rows.Next() {
		if err := rows.Scan(&i, &s); err != nil {
			t.Fatalf("scan: %v", err)
		}
		count++
		if count%250_000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	if err := rows.Err(); err != nil || count != n {
		t.Fatalf("read %d rows, %v", count, err)
	}
	if grew := int64(peak) - int64(base); grew > 128<<20 {
		t.Errorf("heap grew by %d MB while streaming a ~400 MB result, want it bounded (< 128 MB)", grew>>20)
	} else {
		t.Logf("heap grew by at most %d MB while streaming", grew>>20)
	}
}
