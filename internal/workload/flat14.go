package workload

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/ipcx"
)

// Flat14DDL creates the table Flat14's batches go into; %s is its name.
const Flat14DDL = "CREATE OR REPLACE TABLE %s (n0 BIGINT, n1 BIGINT, n2 BIGINT, n3 BIGINT, n4 BIGINT, n5 BIGINT, n6 BIGINT, n7 BIGINT, n8 BIGINT, n9 BIGINT, s0 VARCHAR, s1 VARCHAR, s2 VARCHAR, s3 VARCHAR)"

// Flat14 builds the flat Kafka row shape: 10 BIGINT and 4 VARCHAR
// columns, in 64K-row batches, and their Arrow size in bytes. The caller
// releases the batches.
func Flat14(rows int) ([]arrow.RecordBatch, int64) {
	fields := make([]arrow.Field, 0, 14)
	for i := range 10 {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("n%d", i), Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	for i := range 4 {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("s%d", i), Type: arrow.BinaryTypes.String, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	const batch = 64 * 1024
	var recs []arrow.RecordBatch
	var size int64
	for start := 0; start < rows; start += batch {
		n := min(batch, rows-start)
		for i := start; i < start+n; i++ {
			for c := range 10 {
				b.Field(c).(*array.Int64Builder).Append(int64(i)*int64(c+1) ^ int64(c))
			}
			for c := range 4 {
				b.Field(10 + c).(*array.StringBuilder).Append("v" + strconv.Itoa(i*(c+3)))
			}
		}
		rec := b.NewRecordBatch()
		size += ipcx.RecordBytes(rec)
		recs = append(recs, rec)
	}
	return recs, size
}
