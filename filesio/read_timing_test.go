package filesio_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/quiverdata/quiver/filesio"
)

// BenchmarkReader_CSV reads a CSV file with quoted fields (delimiters and
// doubled quotes inside) and timestamps, as quiver load does, and throws
// the batches away. QUIVER_BENCH_CSV names the file (written first when
// missing, of QUIVER_BENCH_CSV_MB megabytes, 64 by default). The 1 GB
// comparison with the hand-written reader it replaced:
//
//	QUIVER_BENCH_CSV=/tmp/quiver-bench/1g.csv QUIVER_BENCH_CSV_MB=1024 \
//	  go test -tags duckdb_arrow -run '^$' -bench Reader_CSV -benchtime 1x -count 3 ./filesio/
func BenchmarkReader_CSV(b *testing.B) {
	path := os.Getenv("QUIVER_BENCH_CSV")
	if path == "" {
		path = filepath.Join(b.TempDir(), "bench.csv")
	}
	mb := 64
	if s := os.Getenv("QUIVER_BENCH_CSV_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil {
			b.Fatalf("QUIVER_BENCH_CSV_MB: %v", err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		if err := writeBenchCSV(path, int64(mb)<<20); err != nil {
			b.Fatal(err)
		}
		if st, err = os.Stat(path); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := filesio.Open(context.Background(), []string{path}, filesio.ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var rows int64
		for r.Next() {
			rows += r.RecordBatch().NumRows()
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		r.Release()
		b.ReportMetric(float64(rows), "rows")
	}
}

// writeBenchCSV writes about size bytes of rows: a number, a quoted name
// holding the delimiter, a quoted note holding doubled quotes, an amount,
// a timestamp and a flag.
func writeBenchCSV(path string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "id,name,note,amount,ts,flag")
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var n int64
	for i := 0; n < size; i++ {
		k, err := fmt.Fprintf(w, "%d,\"Smith %d, John\",\"He said \"\"hi\"\" %d times\",%d.%02d,%s,%v\n",
			i, i%1000, i%97, i%100000, i%100, t0.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05"), i%3 == 0)
		if err != nil {
			f.Close()
			return err
		}
		n += int64(k)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
