package mysqlwire

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
)

// BenchmarkRowSender_Format formats one 65,536-row batch of the columns
// BenchmarkMySQL_FetchMixed fetches (BIGINT, INTEGER, DECIMAL(18,1) and a
// short VARCHAR) into text-protocol chunks, without a server or a client:
// the value encoding alone, which the fetch benchmarks measure among
// everything else.
func BenchmarkRowSender_Format(b *testing.B) {
	const rows = 1 << 16
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "grp", Type: arrow.PrimitiveTypes.Int32},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 1}},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Int32Builder).Append(int32(i % 100))
		bld.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i * 7 % 1000)))
		bld.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("item_%d", i%5000))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	fields := []*querypb.Field{{Type: sqltypes.Int64}, {Type: sqltypes.Int32}, {Type: sqltypes.Decimal}, {Type: sqltypes.VarChar}}
	var rs rowSender
	send := func(*sqltypes.Result) error { return nil }
	b.ReportAllocs()
	b.SetBytes(rows * (8 + 4 + 16 + 9))
	for b.Loop() {
		if _, err := rs.sendBatch(fields, rec, send); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
