package main

import (
	"strings"
	"testing"
)

// TestParquetReport_Layout checks the Parquet table built from a
// run: a row per writer and size, a time and a speedup against MySQL JDBC
// per workload and codec, StarRocks' published figure in parentheses, and dashes
// where a figure is missing.
func TestParquetReport_Layout(t *testing.T) {
	out := parquetOutput{
		workloads: []string{"str20", "num20"},
		sizes:     []int64{5_000_000},
		seconds:   map[parquetKey][]float64{},
		bytes:     map[parquetKey]int64{},
		versions:  map[string]string{"connectorj": "mysql-connector-j-9.7.0 (Revision: abc)", "parquet_hadoop": "1.15.2", "flight_jdbc": "18.2.0", "pyarrow": "26.0.1", "adbc_driver_flightsql": "1.13.0"},
	}
	// MySQL takes 12 s for everything; each other writer a fixed share.
	share := map[string]float64{"mysql": 1, "flight-jdbc": 0.5, "pyarrow": 0.25, "query": 0.125}
	for c, f := range share {
		for _, w := range out.workloads {
			for _, codec := range parquetCodecs {
				k := parquetKey{c, w, 5_000_000, codec}
				out.seconds[k] = []float64{12 * f}
				out.bytes[k] = 2_500_000
			}
		}
	}
	r := parquetReport(out, 1)
	if len(r.Tables) != 2 {
		t.Fatalf("got %d tables, want 2", len(r.Tables))
	}
	times, sizes := r.Tables[0], r.Tables[1]
	wantCols := "path | rows | VARCHAR uncompressed ms | vs MySQL | VARCHAR snappy ms | vs MySQL | numeric uncompressed ms | vs MySQL | numeric snappy ms | vs MySQL"
	if got := strings.Join(times.Columns, " | "); got != wantCols {
		t.Errorf("columns:\n got %s\nwant %s", got, wantCols)
	}
	for i, want := range [][]string{
		{"MySQL JDBC → parquet-hadoop", "5M", "12000 ±0%", "1.00×", "12000 ±0%", "1.00×", "12000 ±0%", "1.00×", "12000 ±0%", "1.00×"},
		{"Flight JDBC → parquet-hadoop", "5M", "6000 ±0%", "2.00× (1.20×)", "6000 ±0%", "2.00× (1.15×)", "6000 ±0%", "2.00× (1.72×)", "6000 ±0%", "2.00× (1.77×)"},
		{"ADBC + PyArrow", "5M", "3000 ±0%", "4.00× (5.20×)", "3000 ±0%", "4.00× (3.89×)", "3000 ±0%", "4.00× (6.07×)", "3000 ±0%", "4.00× (6.57×)"},
		{"quiver query -o", "5M", "1500 ±0%", "8.00×", "1500 ±0%", "8.00×", "1500 ±0%", "8.00×", "1500 ±0%", "8.00×"},
	} {
		if i >= len(times.Rows) {
			t.Fatalf("got %d rows, want 4 (the export did not run, so it has no row)", len(times.Rows))
		}
		if got, want := strings.Join(times.Rows[i], " | "), strings.Join(want, " | "); got != want {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, want)
		}
	}
	if len(times.Rows) != 4 || len(sizes.Rows) != 4 {
		t.Errorf("got %d and %d rows, want 4 in each table", len(times.Rows), len(sizes.Rows))
	}
	if got, want := strings.Join(sizes.Rows[2], " | "), "ADBC + PyArrow | 5M | 2.5 | 2.5 | 2.5 | 2.5"; got != want {
		t.Errorf("sizes row 2:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(times.Note, "Connector/J 9.7.0 (buffered, as in StarRocks' figures) → parquet-hadoop 1.15.2") {
		t.Errorf("note %q does not name the baseline", times.Note)
	}
	if got := len(r.Results); got != 16 {
		t.Errorf("got %d results, want 16", got)
	}

	t.Run("missing baseline", func(t *testing.T) {
		out := parquetOutput{workloads: []string{"num20"}, sizes: []int64{10_000},
			seconds: map[parquetKey][]float64{{"export", "num20", 10_000, "snappy"}: {0.02}},
			bytes:   map[parquetKey]int64{}}
		r := parquetReport(out, 1)
		if len(r.Tables[0].Rows) != 1 {
			t.Fatalf("got %d rows, want 1", len(r.Tables[0].Rows))
		}
		if got, want := strings.Join(r.Tables[0].Rows[0], " | "), "server COPY … TO | 10k | — | — | 20 ±0% | —"; got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
	})
}
