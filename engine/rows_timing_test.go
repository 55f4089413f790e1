package engine_test

import (
	"context"
	"testing"

	"github.com/quiverdata/quiver/engine"
)

func benchQuery(b *testing.B, opts engine.Options, create, query string) {
	benchQueryWith(b, opts, create, query, false)
}

// benchQueryWith runs query as Query, or as QueryTransient.
func benchQueryWith(b *testing.B, opts engine.Options, create, query string, transient bool) {
	ctx := context.Background()
	c := benchConn(b, opts)
	if _, err := c.Exec(ctx, create); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		run := c.Query
		if transient {
			run = c.QueryTransient
		}
		rows, err := run(ctx, query)
		if err != nil {
			b.Fatal(err)
		}
		var n, bytes int64
		for rows.Next() {
			rec := rows.RecordBatch()
			n += rec.NumRows()
			for _, col := range rec.Columns() {
				for _, buf := range col.Data().Buffers() {
					if buf != nil {
						bytes += int64(buf.Len())
					}
				}
			}
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(bytes)
	}
}

const num20 = "CREATE TABLE num AS SELECT i AS id, i*1 AS c1, i*2 AS c2, i*3 AS c3, i*4 AS c4, i*5 AS c5, i*6 AS c6, i*7 AS c7, i*8 AS c8, i*9 AS c9, i*10 AS c10, i*11 AS c11, i*12 AS c12, i*13 AS c13, i*14 AS c14, i*15 AS c15, i*16 AS c16, i*17 AS c17, i*18 AS c18, i*19 AS c19 FROM range(2000000) t(i)"

// BenchmarkRows_Num20 streams 2M rows × 20 BIGINT through the vector copy.
func BenchmarkRows_Num20(b *testing.B) {
	benchQuery(b, engine.Options{}, num20, "SELECT * FROM num")
}

// BenchmarkRows_Num20Fallback is the same through DuckDB's own Arrow
// conversion, the reference the fast path is measured against.
func BenchmarkRows_Num20Fallback(b *testing.B) {
	benchQuery(b, engine.Options{FallbackOnly: true}, num20, "SELECT * FROM num")
}

// str20 is 1M rows × 10 VARCHAR.
const str20 = "CREATE TABLE str AS SELECT 'val_' || (i % 100000) AS s1, 'val_' || (i*2 % 100000) AS s2, 'val_' || (i*3 % 100000) AS s3, 'val_' || (i*4 % 100000) AS s4, 'val_' || (i*5 % 100000) AS s5, 'val_' || (i*6 % 100000) AS s6, 'val_' || (i*7 % 100000) AS s7, 'val_' || (i*8 % 100000) AS s8, 'val_' || (i*9 % 100000) AS s9, 'val_' || (i*10 % 100000) AS s10 FROM range(1000000) t(i)"

// BenchmarkRows_Str20 streams 1M rows × 10 VARCHAR.
func BenchmarkRows_Str20(b *testing.B) {
	benchQuery(b, engine.Options{}, str20, "SELECT * FROM str")
}

// BenchmarkRows_Str20Transient is Str20 as DoGet runs it: the string
// bytes come from the recycling allocator too.
func BenchmarkRows_Str20Transient(b *testing.B) {
	benchQueryWith(b, engine.Options{}, str20, "SELECT * FROM str", true)
}

// BenchmarkRows_LimitID is the seed's id workload: one column of 1M rows
// through LIMIT, which DuckDB's late materialization made 10× slower.
func BenchmarkRows_LimitID(b *testing.B) {
	benchQuery(b, engine.Options{}, "CREATE TABLE num AS SELECT i AS id, i * 2 AS c1 FROM range(1000000) t(i)", "SELECT id FROM num LIMIT 1000000")
}

// benchConn opens a database with opts and a connection to it, both
// closed when the benchmark ends.
func benchConn(b *testing.B, opts engine.Options) *engine.Conn {
	b.Helper()
	db, err := engine.Open(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	c, err := db.Conn(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Release)
	return c
}

// BenchmarkRows_OneRowStrings is a one-row result of four VARCHAR
// columns as Query returns it (string bytes in Go memory), the shape of
// an EXPLAIN, a split plan's query or a point lookup over MySQL.
func BenchmarkRows_OneRowStrings(b *testing.B) {
	benchQuery(b, engine.Options{}, "CREATE TABLE t AS SELECT i AS id, 'item_' || i AS a, 'b' || i AS b, 'c' || i AS c, 'd' || i AS d FROM range(100000) t(i)",
		"SELECT a, b, c, d FROM t WHERE id = 4242")
}

// BenchmarkExplainJSON is the plan the admission classifier reads for a
// query it has not seen.
func BenchmarkExplainJSON(b *testing.B) {
	ctx := context.Background()
	c := benchConn(b, engine.Options{})
	if _, err := c.Exec(ctx, "CREATE TABLE t AS SELECT i AS id, 'item_' || i AS name FROM range(100000) t(i)"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.ExplainJSON(ctx, "SELECT * FROM t WHERE id = 4242"); err != nil {
			b.Fatal(err)
		}
	}
}

// wide10 is 200,000 rows of ten 200-byte strings: 2 KB a row, so every
// batch is cut by bytes (12 MiB), inside a chunk.
const wide10 = "CREATE TABLE wide AS SELECT i AS id, rpad(i::VARCHAR, 200, 'a') AS s1, rpad(i::VARCHAR, 200, 'b') AS s2, rpad(i::VARCHAR, 200, 'c') AS s3, rpad(i::VARCHAR, 200, 'd') AS s4, rpad(i::VARCHAR, 200, 'e') AS s5, rpad(i::VARCHAR, 200, 'f') AS s6, rpad(i::VARCHAR, 200, 'g') AS s7, rpad(i::VARCHAR, 200, 'h') AS s8, rpad(i::VARCHAR, 200, 'i') AS s9, rpad(i::VARCHAR, 200, 'j') AS s10 FROM range(200000) t(i)"

func BenchmarkRows_Wide10Transient(b *testing.B) {
	benchQueryWith(b, engine.Options{}, wide10, "SELECT * FROM wide", true)
}
