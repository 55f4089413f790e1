package mysqlwire

import (
	"bytes"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkMySQL_Fetch fetches 1M rows x 20 BIGINT through go-sql-driver's
// text protocol, the workload the MySQL side of seeds/000 compares. Bytes
// are the 8-byte values fetched; rows/s is reported too.
func BenchmarkMySQL_Fetch(b *testing.B) {
	const rows, cols = 1_000_000, 20
	ts := startServer(b, Options{})
	db := ts.open(b, "")
	exprs := make([]string, cols)
	for i := range exprs {
		exprs[i] = fmt.Sprintf("range + %d AS c%d", i, i)
	}
	if _, err := db.Exec(fmt.Sprintf("CREATE TABLE wide AS SELECT %s FROM range(%d)", strings.Join(exprs, ", "), rows)); err != nil {
		b.Fatalf("create: %v", err)
	}
	vals := make([]int64, cols)
	ptrs := make([]any, cols)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	b.SetBytes(rows * cols * 8)
	benchFetch(b, db, "SELECT * FROM wide", rows, ptrs, nil)
}

// benchFetch runs query once per iteration, scanning every row into
// dest; check, when given, judges the last row scanned.
func benchFetch(b *testing.B, db *sql.DB, query string, rows int, dest []any, check func() error) {
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := db.Query(query)
		if err != nil {
			b.Fatalf("query: %v", err)
		}
		n := 0
		for r.Next() {
			if err := r.Scan(dest...); err != nil {
				b.Fatalf("scan: %v", err)
			}
			n++
		}
		if err := r.Err(); err != nil {
			b.Fatalf("rows: %v", err)
		}
		r.Close()
		if n != rows {
			b.Fatalf("got %d rows, want %d", n, rows)
		}
		if check != nil {
			if err := check(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkMySQL_FetchMixed fetches the 1M-row result of quiver-bench
// load's fetch (BIGINT, INTEGER, DECIMAL and a short VARCHAR) through
// go-sql-driver's text protocol, scanning raw bytes.
func BenchmarkMySQL_FetchMixed(b *testing.B) {
	const rows = 1_000_000
	ts := startServer(b, Options{})
	db := ts.open(b, "")
	if _, err := db.Exec(fmt.Sprintf("CREATE TABLE mixed AS SELECT i AS id, (i %% 100)::INTEGER AS grp, "+
		"(i * 7 %% 1000) / 10.0 AS amount, 'item_' || (i %% 5000) AS name FROM range(%d) t(i)", rows)); err != nil {
		b.Fatalf("create: %v", err)
	}
	var id, grp, amount, name sql.RawBytes
	benchFetch(b, db, fmt.Sprintf("SELECT id, grp, amount, name FROM mixed LIMIT %d", rows), rows,
		[]any{&id, &grp, &amount, &name}, func() error {
			if !bytes.HasPrefix(name, []byte("item_")) {
				return fmt.Errorf("the last row named %q, want item_…", name)
			}
			return nil
		})
}

// BenchmarkMySQL_PointLookup is a point lookup by another id each time,
// returning one row of an id and a name, through go-sql-driver: the
// small query of quiver-bench load, over MySQL.
func BenchmarkMySQL_PointLookup(b *testing.B) {
	ts := startServer(b, Options{})
	db := ts.open(b, "")
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE items AS SELECT range AS id, 'item_' || (range % 5000) AS name FROM range(1000000)"); err != nil {
		b.Fatalf("create: %v", err)
	}
	var id int64
	var name string
	b.ReportAllocs()
	for b.Loop() {
		id = (id + 7919) % 1_000_000
		if err := db.QueryRow(fmt.Sprintf("SELECT id, name FROM items WHERE id = %d", id)).Scan(&id, &name); err != nil {
			b.Fatalf("lookup: %v", err)
		}
	}
}
