package mysqlwire

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"
)

func TestServer_Prepared(t *testing.T) {
	ts := startServer(t, Options{})
	db := ts.open(t, "parseTime=true")
	if _, err := db.Exec(`CREATE TABLE p (id INTEGER, i BIGINT, u UBIGINT, f DOUBLE, d DECIMAL(12,3), s VARCHAR,
		b BLOB, dt DATE, ts TIMESTAMP, tm TIME, ok BOOLEAN)`); err != nil {
		t.Fatalf("create: %v", err)
	}
	ins, err := db.Prepare("INSERT INTO p VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		t.Fatalf("prepare insert: %v", err)
	}
	defer ins.Close()
	when := time.Date(2023, 7, 14, 1, 2, 3, 4005000, time.UTC)
	blob := []byte{0, 1, '\\', '\'', 0xff}
	if _, err := ins.Exec(1, int64(-42), uint64(18446744073709551615), 2.5, "1234.567", "it's \\ fine", blob,
		when, when, "13:14:15.5", true); err != nil {
		t.Fatalf("insert row 1: %v", err)
	}
	if _, err := ins.Exec(2, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil); err != nil {
		t.Fatalf("insert row 2: %v", err)
	}

	sel, err := db.Prepare("SELECT i, u, f, d, s, b, dt, ts, tm, ok FROM p WHERE id = ?")
	if err != nil {
		t.Fatalf("prepare select: %v", err)
	}
	defer sel.Close()

	t.Run("values round-trip", func(t *testing.T) {
		var (
			i     int64
			u     uint64
			f     float64
			d, s  string
			b     []byte
			dt    time.Time
			tstmp time.Time
			tm    string
			ok    bool
		)
		if err := sel.QueryRow(1).Scan(&i, &u, &f, &d, &s, &b, &dt, &tstmp, &tm, &ok); err != nil {
			t.Fatalf("select: %v", err)
		}
		got := fmt.Sprintf("%d %d %g %s %q %x %s %s %s %t", i, u, f, d, s, b, dt.Format("2006-01-02"),
			tstmp.Format(time.RFC3339Nano), tm, ok)
		want := fmt.Sprintf("-42 18446744073709551615 2.5 1234.567 %q %x 2023-07-14 2023-07-14T01:02:03.004005Z 13:14:15.500000 true",
			"it's \\ fine", blob)
		if got != want {
			t.Errorf("row =\n %s\nwant\n %s", got, want)
		}
	})

	t.Run("nulls", func(t *testing.T) {
		vals := make([]any, 10)
		ptrs := make([]any, 10)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := sel.QueryRow(2).Scan(ptrs...); err != nil {
			t.Fatalf("select: %v", err)
		}
		for i, v := range vals {
			if v != nil {
				t.Errorf("column %d = %v, want NULL", i, v)
			}
		}
	})

	t.Run("binary and text protocols agree", func(t *testing.T) {
		if _, err := db.Exec(typesTable); err != nil {
			t.Fatalf("create types: %v", err)
		}
		// Every column but TIMESTAMP_NS, which the binary protocol cuts
		// to microseconds, and TIME, which go-sql-driver pads to the
		// column's six decimals when it reads the binary protocol.
		const cols = "id, b, i8, i16, i32, i64, u8, u16, u32, u64, h, f, d, `dec`, bigdec, s, bl, dt, ts, tstz, ts_s, ts_ms, iv, u, e, j, l, st, m, arr"
		for id := 1; id <= 2; id++ {
			text := scanAll(t, db, fmt.Sprintf("SELECT %s FROM types WHERE id = %d", cols, id))
			binary := scanAll(t, db, "SELECT "+cols+" FROM types WHERE id = ?", id)
			if text != binary {
				t.Errorf("row %d:\n text   %s\n binary %s", id, text, binary)
			}
		}
	})

	t.Run("statement handles are released", func(t *testing.T) {
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatalf("conn: %v", err)
		}
		defer conn.Close()
		var id int64
		if err := conn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatalf("connection id: %v", err)
		}
		sess := ts.session(uint32(id))
		if sess == nil {
			t.Fatalf("no session %d", id)
		}
		held := func() int {
			sess.mu.Lock()
			defer sess.mu.Unlock()
			return len(sess.stmts)
		}
		before := held()
		for i := range 200 {
			var n int
			if err := conn.QueryRowContext(context.Background(), "SELECT ? * 2", i).Scan(&n); err != nil {
				t.Fatalf("query %d: %v", i, err)
			}
		}
		if err := conn.PingContext(context.Background()); err != nil {
			t.Fatalf("ping: %v", err)
		}
		var one int
		if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("select 1: %v", err)
		}
		if after := held(); after > before {
			t.Errorf("session holds %d engine statements after 200 prepare/execute/close rounds, %d before", after, before)
		}
	})

	t.Run("session statements", func(t *testing.T) {
		var v string
		if err := db.QueryRow("SELECT @@version_comment WHERE 1 = ?", 1).Scan(&v); err == nil {
			t.Logf("compat SELECT with a parameter went to DuckDB: %q", v)
		}
		st, err := db.Prepare("SELECT @@max_allowed_packet")
		if err != nil {
			t.Fatalf("prepare: %v", err)
		}
		defer st.Close()
		var n int64
		if err := st.QueryRow().Scan(&n); err != nil || n != 67108864 {
			t.Errorf("@@max_allowed_packet = %d, %v", n, err)
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, err := db.Prepare("SELECT * FROM nosuch WHERE x = ?")
		if got := mysqlErrNum(err); got != 1146 {
			t.Errorf("prepare on unknown table: %v, want 1146", err)
		}
		_, err = db.Exec("INSERT INTO p (id, i) VALUES (?, ?)", 3, "not a number")
		if got := mysqlErrNum(err); got != 1292 {
			t.Errorf("bad parameter: %v, want 1292", err)
		}
	})
}

// scanAll runs a query and renders its rows as text, comparably between
// the text and binary protocols.
func scanAll(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out bytes.Buffer
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("scan: %v", err)
		}
		for i, v := range vals {
			switch x := v.(type) {
			case []byte:
				fmt.Fprintf(&out, "%s=%s ", cols[i], x)
			case time.Time:
				fmt.Fprintf(&out, "%s=%s ", cols[i], x.Format(time.RFC3339Nano))
			default:
				fmt.Fprintf(&out, "%s=%v ", cols[i], x)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("rows: %v", err)
	}
	return out.String()
}
