package ipcx

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The seeds/002 codec study in Go: an int + string batch at 100k, 500k
// and 1M rows, LZ4_FRAME and ZSTD, write and read of a whole IPC stream,
// arrow-go's built-in path against quiver's. Reads decode the same bytes,
// written by arrow-go, on both paths. `quiver-bench codec` runs the same
// cases alternated and prints the seed's table.

// seedBatch is the benchmark batch: id BIGINT and name VARCHAR
// ('name_' || (i * 7919 % 100000)), like bench.CodecBatch.
func seedBatch(rows int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	names := b.Field(1).(*array.StringBuilder)
	ids.Reserve(rows)
	names.Reserve(rows)
	for i := 0; i < rows; i++ {
		ids.UnsafeAppend(int64(i))
		names.Append(fmt.Sprintf("name_%d", i*7919%100000))
	}
	return b.NewRecordBatch()
}

func seedBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
	}
	return n
}

var (
	seedRows   = []int{100_000, 500_000, 1_000_000}
	seedCodecs = []Codec{CodecLZ4, CodecZSTD}
)

func arrowCodecOpts(rec arrow.RecordBatch, c Codec) []ipc.Option {
	opts := []ipc.Option{ipc.WithSchema(rec.Schema()), ipc.WithCompressConcurrency(runtime.GOMAXPROCS(0)), ipc.WithMinSpaceSavings(DefaultMinSavings)}
	if c == CodecLZ4 {
		return append(opts, ipc.WithLZ4())
	}
	return append(opts, ipc.WithZstd())
}

func BenchmarkCodecWrite(b *testing.B) {
	for _, rows := range seedRows {
		rec := seedBatch(rows)
		for _, c := range seedCodecs {
			b.Run(fmt.Sprintf("%s/%dk/arrow-go", c, rows/1000), func(b *testing.B) {
				var buf bytes.Buffer
				b.SetBytes(seedBytes(rec))
				b.ReportAllocs()
				for b.Loop() {
					buf.Reset()
					w := ipc.NewWriter(&buf, arrowCodecOpts(rec, c)...)
					if err := w.Write(rec); err != nil {
						b.Fatal(err)
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/%dk/quiver", c, rows/1000), func(b *testing.B) {
				var buf bytes.Buffer
				b.SetBytes(seedBytes(rec))
				b.ReportAllocs()
				for b.Loop() {
					buf.Reset()
					w := NewStreamWriter(&buf, Compression{Codec: c}, ipc.WithSchema(rec.Schema()))
					if err := w.Write(rec); err != nil {
						b.Fatal(err)
					}
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		rec.Release()
	}
}

func BenchmarkCodecRead(b *testing.B) {
	for _, rows := range seedRows {
		rec := seedBatch(rows)
		for _, c := range seedCodecs {
			var buf bytes.Buffer
			w := ipc.NewWriter(&buf, arrowCodecOpts(rec, c)...)
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
			w.Close()
			data := buf.Bytes()
			b.Run(fmt.Sprintf("%s/%dk/arrow-go", c, rows/1000), func(b *testing.B) {
				b.SetBytes(seedBytes(rec))
				b.ReportAllocs()
				for b.Loop() {
					r, err := ipc.NewReader(bytes.NewReader(data))
					if err != nil {
						b.Fatal(err)
					}
					drainIPC(b, r)
				}
			})
			b.Run(fmt.Sprintf("%s/%dk/quiver", c, rows/1000), func(b *testing.B) {
				b.SetBytes(seedBytes(rec))
				b.ReportAllocs()
				for b.Loop() {
					r, err := NewReader(bytes.NewReader(data), nil)
					if err != nil {
						b.Fatal(err)
					}
					drainIPC(b, r)
				}
			})
		}
		rec.Release()
	}
}

func drainIPC(b *testing.B, r *ipc.Reader) {
	n := 0
	for r.Next() {
		n += int(r.RecordBatch().NumRows())
	}
	if err := r.Err(); err != nil || n == 0 {
		b.Fatalf("read %d rows: %v", n, err)
	}
	r.Release()
}
