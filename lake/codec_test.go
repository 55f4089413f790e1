package lake

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestTable_CompressionCodec checks the table's
// write.parquet.compression-codec is read as DuckDB's COPY names it, as
// the table last loaded has it.
func TestTable_CompressionCodec(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, t.TempDir())
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	for _, tc := range []struct {
		prop  string // "" leaves it unset
		codec string
		ok    bool
	}{
		{"", "zstd", true},
		{"snappy", "snappy", true},
		{"ZSTD", "zstd", true},
		{"lz4", "lz4_raw", true},
		{"gzip", "gzip", true},
		{"uncompressed", "uncompressed", true},
		{"lzo", "", false},
	} {
		t.Run(tc.prop, func(t *testing.T) {
			name := "t_" + tc.prop
			tb, err := l.Table(ctx, "ns", name, schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prop != "" {
				tbl, err := tb.Iceberg(ctx)
				if err != nil {
					t.Fatal(err)
				}
				txn := tbl.NewTransaction()
				if err := txn.SetProperties(iceberg.Properties{table.ParquetCompressionKey: tc.prop}); err != nil {
					t.Fatal(err)
				}
				if _, err := txn.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if tb, err = l.Table(ctx, "ns", name, schema, nil); err != nil {
					t.Fatal(err)
				}
			}
			codec, ok := tb.CompressionCodec()
			if codec != tc.codec || ok != tc.ok {
				t.Errorf("CompressionCodec() = %q, %v; want %q, %v", codec, ok, tc.codec, tc.ok)
			}
		})
	}
}
