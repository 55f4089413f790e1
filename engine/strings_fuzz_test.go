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
// offset there would hand out other rows' bytes or garbage.
func FuzzRows_Strings(f *testing.F) {
	f.Add([]byte("a\x00\x00hello world!\x00hello world!!\x00\x01\x00"+strings.Repeat("z", 100)), uint16(2500))
	f.Add([]byte{}, uint16(0))
	f.Add([]byte("\xff\xfe\x00\x01x\x00\x00123456789012\x00\x01"), uint16(4097))
	f.Add([]byte(strings.Repeat("0123456789abc\x00", 40)+"\x01"), uint16(6000))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	db := openTest(f, engine.Options{Allocator: mem, BatchRows: 3000})
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(c.Release)
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
		rdr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		rec.Release()
		if _, err := c.Exec(ctx, "CREATE OR REPLACE TABLE fz (id BIGINT, s VARCHAR, b BLOB)"); err != nil {
			t.Fatal(err)
		}
		_, err := c.InsertArrow(ctx, "fz", nil, rdr)
		rdr.Release()
		if err != nil {
			t.Fatal(err)
		}
		for _, transient := range []bool{false, true} {
			rows, done := openRows(t, db, "SELECT id, s, b FROM fz ORDER BY id", transient)
			next := 0
			for rows.Next() {
				rec := rows.RecordBatch()
				ids := rec.Column(0).(*array.Int64)
				ss := rec.Column(1).(*array.String)
				bs := rec.Column(2).(*array.Binary)
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
					next++
				}
			}
			err := rows.Err()
			done()
			if err != nil {
				t.Fatalf("transient=%v: %v", transient, err)
			}
			if next != n {
				t.Fatalf("transient=%v: %d rows, want %d", transient, next, n)
			}
		}
		mem.AssertSize(t, 0)
	})
}
