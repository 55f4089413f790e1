package duckdbsql_test

import (
	"strings"
	"testing"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// BenchmarkMeasure measures a bulk INSERT of 250,000 rows (8.75 MB), the
// kind of statement a MySQL client's dump sends: every statement is
// measured before DuckDB parses it.
func BenchmarkMeasure(b *testing.B) {
	sql := "INSERT INTO t VALUES " + strings.TrimSuffix(strings.Repeat("(1, 'some text here', -2.5, NULL), ", 250000), ", ")
	b.SetBytes(int64(len(sql)))
	b.ReportAllocs()
	for b.Loop() {
		duckdbsql.Measure(sql)
	}
}
