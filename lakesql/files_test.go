package lakesql

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestGroup(t *testing.T) {
	cases := []struct {
		sizes []int64
		n     int
		want  string
	}{
		{[]int64{100, 10, 10}, 3, "[0] [1] [2]"},
		{[]int64{10, 10, 100}, 3, "[0] [1] [2]"},
		{[]int64{10, 10, 10, 10}, 2, "[0 1] [2 3]"},
		{[]int64{10, 10, 10, 10, 10, 10}, 3, "[0 1] [2 3] [4 5]"},
		{[]int64{50, 1, 1, 1, 1, 50}, 2, "[0 1 2] [3 4 5]"},
		{[]int64{0, 0, 0}, 2, "[0] [1 2]"},
		{[]int64{5}, 1, "[0]"},
	}
	for _, tc := range cases {
		var files []planned
		for k, s := range tc.sizes {
			files = append(files, planned{path: fmt.Sprint(k), size: s, weight: s})
		}
		got := ""
		seen := 0
		for i := range tc.n {
			var idx []string
			for _, f := range group(files, i, tc.n) {
				idx = append(idx, f.path)
			}
			if len(idx) == 0 {
				t.Errorf("%v in %d: part %d is empty", tc.sizes, tc.n, i)
			}
			seen += len(idx)
			if i > 0 {
				got += " "
			}
			got += fmt.Sprint(idx)
		}
		if seen != len(files) {
			t.Errorf("%v in %d: %d files placed, want %d", tc.sizes, tc.n, seen, len(files))
		}
		if got != tc.want {
			t.Errorf("%v in %d: got %s, want %s", tc.sizes, tc.n, got, tc.want)
		}
	}
}

func TestPartCount(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		bytes                     int64
		files, maxParts, replicas int
		want                      int
	}{
		{206 * mb, 6, 64, 0, 4},
		{206 * mb, 6, 64, 3, 6},
		{206 * mb, 5, 64, 3, 5},
		{10 * mb, 6, 64, 3, 1},
		{700 * mb, 40, 64, 3, 12},
		{700 * mb, 40, 8, 3, 8},
	}
	for _, tc := range cases {
		if got := partCount(tc.bytes, 64*mb, tc.files, tc.maxParts, tc.replicas); got != tc.want {
			t.Errorf("partCount(%d MiB, %d files, max %d, %d replicas) = %d, want %d", tc.bytes/mb, tc.files, tc.maxParts, tc.replicas, got, tc.want)
		}
	}
}

func TestFixedWidth(t *testing.T) {
	st := iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		{ID: 2, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		{ID: 3, Name: "s", Type: iceberg.PrimitiveTypes.String},
		{ID: 4, Name: "d", Type: iceberg.DecimalTypeOf(10, 2)},
		{ID: 5, Name: "f", Type: iceberg.FixedTypeOf(3)},
		{ID: 6, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		{ID: 7, Name: "n", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 8, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 9, Name: "l", Type: &iceberg.ListType{ElementID: 10, Element: iceberg.PrimitiveTypes.Int64}},
		}}},
	}}
	// 8 + 1 + 4 + 16 + 3 + 8 + (4 + 4)
	if got := fixedWidth(st); got != 48 {
		t.Errorf("fixedWidth = %d, want 48", got)
	}
}

// TestGroupByWeight checks that parts split by what files decode to, not
// by their bytes: a tiny delta-encoded file of many rows weighs as much as
// a large one of as many rows.
func TestGroupByWeight(t *testing.T) {
	files := []planned{{path: "0", size: 1, weight: 100}, {path: "1", size: 100, weight: 100}, {path: "2", size: 1, weight: 100}, {path: "3", size: 1, weight: 100}}
	var got []string
	for i := range 2 {
		var idx []string
		for _, f := range group(files, i, 2) {
			idx = append(idx, f.path)
		}
		got = append(got, fmt.Sprint(idx))
	}
	if fmt.Sprint(got) != "[[0 1] [2 3]]" {
		t.Errorf("got %v, want [[0 1] [2 3]]", got)
	}
}
