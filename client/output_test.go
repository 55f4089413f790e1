package client_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
)

// TestNewResultWriter_CSVTypes: arrow-go's CSV writer panics on the types
// it lacks; NewResultWriter refuses them up front instead.
func TestNewResultWriter_CSVTypes(t *testing.T) {
	for _, tt := range []struct {
		dt arrow.DataType
		ok bool
	}{
		{arrow.PrimitiveTypes.Int64, true},
		{arrow.ListOf(arrow.BinaryTypes.String), true},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, true},
		{arrow.FixedWidthTypes.MonthDayNanoInterval, false},
		{arrow.FixedWidthTypes.Time64us, false},
		{arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}), false},
		{arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), false},
		{arrow.ListOf(arrow.FixedWidthTypes.MonthDayNanoInterval), false},
	} {
		t.Run(tt.dt.String(), func(t *testing.T) {
			schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: tt.dt, Nullable: true}}, nil)
			_, err := client.NewResultWriter("csv", &bytes.Buffer{}, schema, 0)
			if (err == nil) != tt.ok {
				t.Errorf("got %v, want ok %v", err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), `column "c"`) {
				t.Errorf("error %q does not name the column", err)
			}
		})
	}
}

// TestNewResultWriter_TableOpaque prints an extension type that does not
// format its values (DuckDB's BIGNUM arrives as one) without a panic.
func TestNewResultWriter_TableOpaque(t *testing.T) {
	mem := testmem.Checked(t)
	typ := extensions.NewOpaqueType(arrow.BinaryTypes.Binary, "bignum", "DuckDB")
	sb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	sb.Append([]byte{1, 2})
	storage := sb.NewArray()
	sb.Release()
	col := array.NewExtensionArrayWithStorage(typ, storage)
	storage.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "vi", Type: typ, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
	col.Release()
	defer rec.Release()
	var out bytes.Buffer
	w, err := client.NewResultWriter("table", &out, schema, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "AQI=") || !strings.Contains(out.String(), "(1 row)") {
		t.Errorf("table: got %q, want the value's bytes as its storage prints them", out.String())
	}
}
