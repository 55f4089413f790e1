package protoarrow

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// writeFile writes a test input file.
func writeFile(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o644)
}

func TestSchema_Mapping(t *testing.T) {
	tests := []struct {
		file, message string
		want          string // one "  - name: type=T[, nullable]" line per field
	}{
		{"flat.proto", "Flat14", `
  - id: type=int64
  - ts_ms: type=int64
  - campaign_id: type=int32
  - impressions: type=uint64
  - delta: type=int64
  - bid_micros: type=uint64
  - region: type=int32
  - width: type=uint32
  - height: type=int64
  - score: type=int32
  - device: type=utf8
  - country: type=utf8
  - publisher: type=utf8
  - url: type=utf8`},
		{"all.proto", "Scalars", `
  - i32: type=int32
  - i64: type=int64
  - u32: type=uint32
  - u64: type=uint64
  - s32: type=int32
  - s64: type=int64
  - f32: type=uint32
  - f64: type=uint64
  - sf32: type=int32
  - sf64: type=int64
  - flag: type=bool
  - fl: type=float32
  - db: type=float64
  - str: type=utf8
  - raw: type=binary
  - color: type=utf8`},
		{"all.proto", "Optionals", `
  - i32: type=int32, nullable
  - i64: type=int64, nullable
  - str: type=utf8, nullable
  - raw: type=binary, nullable
  - color: type=utf8, nullable
  - flag: type=bool, nullable
  - db: type=float64, nullable
  - name: type=utf8, nullable
  - code: type=int64, nullable
  - point: type=struct<x: int64 nullable, y: int64 nullable>, nullable`},
		{"all.proto", "Maps", `
  - counts: type=map<utf8, int64, items_nullable>
  - names: type=map<int32, utf8, items_nullable>
  - points: type=map<utf8, struct<x: int64 nullable, y: int64 nullable>, items_nullable>
  - colors: type=map<bool, utf8, items_nullable>
  - times: type=map<uint64, timestamp[us, tz=UTC], items_nullable>
  - blobs: type=map<int32, binary, items_nullable>`},
		{"all.proto", "WellKnown", `
  - at: type=timestamp[us, tz=UTC], nullable
  - history: type=list<item: timestamp[us, tz=UTC]>
  - dbl: type=float64, nullable
  - flt: type=float32, nullable
  - i64: type=int64, nullable
  - u64: type=uint64, nullable
  - i32: type=int32, nullable
  - u32: type=uint32, nullable
  - flag: type=bool, nullable
  - str: type=utf8, nullable
  - raw: type=binary, nullable
  - tags: type=list<item: utf8>`},
		{"legacy.proto", "Legacy", `
  - id: type=int64, nullable
  - count: type=int32, nullable
  - info: type=struct<note: utf8 nullable, level: int32 nullable>, nullable
  - entry: type=list<item: struct<key: utf8 nullable>>
  - nums: type=list<item: int32>
  - packed_nums: type=list<item: int32>
  - m: type=map<utf8, int32, items_nullable>
  - kind: type=utf8, nullable
  - big_field: type=int32, nullable`},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			s, err := Schema(compileT(t, tt.file, tt.message))
			if err != nil {
				t.Fatalf("Schema: %v", err)
			}
			var sb strings.Builder
			for _, f := range s.Fields() {
				sb.WriteString("\n  - " + f.Name + ": type=" + f.Type.String())
				if f.Nullable {
					sb.WriteString(", nullable")
				}
			}
			got := sb.String()
			if want := tt.want; got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestSchema_Nested(t *testing.T) {
	s, err := Schema(compileT(t, "all.proto", "BidRequest"))
	if err != nil {
		t.Fatalf("Schema: %v", err)
	}
	imp, _ := s.FieldsByName("imp")
	lt, ok := imp[0].Type.(*arrow.ListType)
	if !ok {
		t.Fatalf("got imp %s, want a list", imp[0].Type)
	}
	st := lt.Elem().(*arrow.StructType)
	pmp, _ := st.FieldByName("pmp")
	deals := pmp.Type.(*arrow.StructType).Field(1)
	if got, want := deals.Type.String(), "list<item: struct<id: utf8 nullable, bidfloor: float64 nullable, wseat: list<item: utf8> nullable, color: utf8 nullable>>"; got != want {
		t.Errorf("got deals %s, want %s", got, want)
	}
	for i, f := range st.Fields() {
		if !f.Nullable {
			t.Errorf("got imp.%s (%d) not nullable, want every struct child nullable", f.Name, i)
		}
	}
	if lt.ElemField().Nullable {
		t.Errorf("got nullable list elements, want non-null")
	}
}

func TestSchema_Recursive(t *testing.T) {
	tests := []struct {
		message  string
		contains string
	}{
		{"Node", "quiver.test.Node contains itself through field path children"},
		{"Ping", "quiver.test.Ping contains itself through field path pong.ping"},
		{"HasStruct", "google.protobuf.Struct contains itself"},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			_, err := Schema(compileT(t, "recursive.proto", tt.message))
			if !errors.Is(err, ErrRecursive) {
				t.Fatalf("got %v, want ErrRecursive", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("got %q, want it to contain %q", err, tt.contains)
			}
			if _, err := NewDecoder(compileT(t, "recursive.proto", tt.message), nil); !errors.Is(err, ErrRecursive) {
				t.Errorf("got NewDecoder error %v, want ErrRecursive", err)
			}
		})
	}
}
