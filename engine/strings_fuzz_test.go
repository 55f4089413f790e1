package engine_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/engine"
)

// fuzzValues splits data into the values of a string column: values are
// separated by 0x00, and one that starts with 0x01 is NULL. No data is one
// empty string.
func fuzzValues(data []byte) [][]byte {
	vals := bytes.Split(data, []byte{0})
	for i, v := range vals {
		if len(v) > 0 && v[0] == 1 {
			vals[i] = nil
		} else if v == nil {
			vals[i] = []byte{}
		}
	}
	return vals
}

// FuzzRows_Strings checks the direct copy of VARCHAR and BLOB vectors
// against the values that went in: any bytes, lengths on both sides of
// the 12 that DuckDB keeps inline, NULLs among them, over chunks of 2,048
// rows and batches cut at other counts, through Query and QueryTransient.
// The copy reads DuckDB's string structs and pointers itself, so a wrong
// offset there would hand out other rows' bytes or garbage. A second
// database cuts batches at 4 KiB, so nearly every chunk is split by
// bytes, at rows the values' lengths decide; a LIST of the string takes
// DuckDB's own conversion, sliced at the same rows.
func FuzzRows_Strings(f *testing.F) {
	f.Add([]byte("a\x00\x00hello world!\x00hello world!!\x00\x01\x00"+strings.Repeat("z", 100)), uint16(2500))
	f.Add([]byte{}, uint16(0))
	f.Add([]byte("\xff\xfe\x00\x01x\x00\x00123456789012\x00\x01"), uint16(4097))
	f.Add([]byte(strings.Repeat("0123456789abc\x00", 40)+"\x01"), uint16(6000))
	const smallBatch = 4096
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	db := openTest(f, engine.Options{Allocator: mem, BatchRows: 3000})
	small := openTest(f, engine.Options{Allocator: mem, BatchRows: 3000, MaxBatchBytes: smallBatch})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	f.Fuzz(func(t *testing.T, data []byte, rows uint16) {
		vals := fuzzValues(data)
		n := 1 + int(rows)%8000
		want := func(i int) (s, b []byte) {
			v := vals[i%len(vals)]
			if v == nil {
				return nil, nil
			}
			return []byte(strings.ToValidUTF8(string(v), "\uFFFD")), v
		}
		bld := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
		for i := range n {
			bld.Field(0).(*array.Int64Builder).Append(int64(i))
			s, b := want(i)
			if b == nil {
				bld.Field(1).AppendNull()
				bld.Field(2).AppendNull()
				continue
			}
			bld.Field(1).(*array.StringBuilder).BinaryBuilder.Append(s)
			bld.Field(2).(*array.BinaryBuilder).Append(b)
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		defer rec.Release()
		for _, tgt := range []struct {
			db       *engine.DB
			maxBytes int
		}{{db, 0}, {small, smallBatch}} {
			loadFz(t, tgt.db, rec)
			for _, transient := range []bool{false, true} {
				readBack(t, tgt.db, n, transient, true, 0, want)
				if tgt.maxBytes > 0 {
					readBack(t, tgt.db, n, transient, false, tgt.maxBytes, want)
				}
			}
		}
		mem.AssertSize(t, 0)
	})
}

// loadFz makes rec the table fz of db.
func loadFz(t *testing.T, db *engine.DB, rec arrow.RecordBatch) {
	t.Helper()
	c := testConn(t, db, "CREATE OR REPLACE TABLE fz (id BIGINT, s VARCHAR, b BLOB)")
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if _, err := c.InsertArrow(context.Background(), "fz", nil, rdr); err != nil {
		t.Fatal(err)
	}
}

// readBack reads fz's id, s, b, and with list [s], and checks each row
// against want. With maxBytes it checks that every batch of more than
// one row stays within it, and that the next row would not have: 8 bytes
// of id, 4 of each offset, and the strings' bytes.
func readBack(t *testing.T, db *engine.DB, n int, transient, list bool, maxBytes int, want func(int) ([]byte, []byte)) {
	t.Helper()
	sql := "SELECT id, s, b FROM fz ORDER BY id"
	if list {
		sql = "SELECT id, s, b, [s] AS l FROM fz ORDER BY id"
	}
	rows, done := openRows(t, db, sql, transient)
	defer done()
	next := 0
	for rows.Next() {
		rec := rows.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		ss := rec.Column(1).(*array.String)
		bs := rec.Column(2).(*array.Binary)
		var ls *array.List
		var lv *array.String
		if list {
			ls = rec.Column(3).(*array.List)
			lv = ls.ListValues().(*array.String)
		}
		size := 0
		for r := range int(rec.NumRows()) {
			if ids.Value(r) != int64(next) {
				t.Fatalf("transient=%v: row %d has id %d", transient, next, ids.Value(r))
			}
			s, b := want(next)
			if b == nil {
				if ss.IsValid(r) || bs.IsValid(r) {
					t.Fatalf("transient=%v: row %d: got %q, %q; want NULLs", transient, next, ss.Value(r), bs.Value(r))
				}
			} else if !ss.IsValid(r) || !bs.IsValid(r) || ss.Value(r) != string(s) || !bytes.Equal(bs.Value(r), b) {
				t.Fatalf("transient=%v: row %d: got %q (valid %v), %q (valid %v); want %q, %q",
					transient, next, ss.Value(r), ss.IsValid(r), bs.Value(r), bs.IsValid(r), s, b)
			}
			if list {
				lo, hi := ls.ValueOffsets(r)
				if !ls.IsValid(r) || hi-lo != 1 || lv.IsValid(int(lo)) != (b != nil) || lv.Value(int(lo)) != string(s) {
					t.Fatalf("transient=%v: row %d: list of %d values (valid %v), the first %q; want [%q]", transient, next, hi-lo, ls.IsValid(r), lv.Value(int(lo)), s)
				}
			}
			size += 16 + len(s) + len(b)
			next++
		}
		if maxBytes > 0 && rec.NumRows() > 1 && size > maxBytes {
			t.Fatalf("transient=%v: a batch of %d rows holds %d bytes of ids and strings, over %d", transient, rec.NumRows(), size, maxBytes)
		}
		if maxBytes > 0 && next < n && rec.NumRows() < 3000 {
			// Cut by bytes: the next row had to start a batch of its own.
			s, b := want(next)
			if grown := size + 16 + len(s) + len(b); grown <= maxBytes {
				t.Fatalf("transient=%v: a batch cut at %d rows and %d bytes, where the next row fits (%d of %d)", transient, rec.NumRows(), size, grown, maxBytes)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("transient=%v: %v", transient, err)
	}
	if next != n {
		t.Fatalf("transient=%v: %d rows, want %d", transient, next, n)
	}
}
