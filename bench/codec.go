package bench

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/ipcx"
)

// The codec suite times Arrow IPC compression in Go: an int + string
// record batch at 100k, 500k and 1M rows, written to and read from an
// in-memory Arrow IPC stream with LZ4_FRAME and with ZSTD, arrow-go's
// built-in path against quiver's (ipcx), time and allocated bytes per
// operation, alternated in one run. Both read paths decode the same
// bytes, written by arrow-go's writer; the write paths each produce their
// own stream.

// CodecConfig sizes the codec suite.
type CodecConfig struct {
	Rows []int
	Reps int
	// MinSample is the least time one sample runs (several operations
	// per sample when one is shorter).
	MinSample time.Duration
}

// CodecBatch is the suite's batch: id BIGINT = i and name VARCHAR =
// 'name_' || (i * 7919 % 100000).
func CodecBatch(mem memory.Allocator, rows int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
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

// opStat is the allocation side of one contender's samples.
type opStat struct {
	allocBytes []float64 // per operation
	allocs     []float64
}

func (o *opStat) median() (bytes, count float64) {
	return report.Median(o.allocBytes), report.Median(o.allocs)
}

// measuredOp returns a Contender running op n times per sample (n set
// on the warm-up so a sample lasts about min), recording the mean time
// per operation as the sample and the allocations per operation in st.
func measuredOp(name string, min time.Duration, st *opStat, op func() error) report.Contender {
	n := 0
	return report.Contender{Name: name, Run: func() (report.Sample, error) {
		if n == 0 {
			start := time.Now()
			if err := op(); err != nil {
				return report.Sample{}, err
			}
			n = max(1, int(min/max(time.Since(start), time.Microsecond)))
			return report.Sample{Dur: time.Since(start)}, nil
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := op(); err != nil {
				return report.Sample{}, err
			}
		}
		el := time.Since(start)
		runtime.ReadMemStats(&after)
		st.allocBytes = append(st.allocBytes, float64(after.TotalAlloc-before.TotalAlloc)/float64(n))
		st.allocs = append(st.allocs, float64(after.Mallocs-before.Mallocs)/float64(n))
		return report.Sample{Dur: el / time.Duration(n)}, nil
	}}
}

// arrowWriteOpts are arrow-go's compressing writer options as quiver
// used them before ipcx had its own codecs: every core, and buffers that
// save less than a tenth sent raw.
func arrowWriteOpts(schema *arrow.Schema, c ipcx.Codec) []ipc.Option {
	opts := []ipc.Option{ipc.WithSchema(schema), ipc.WithCompressConcurrency(runtime.GOMAXPROCS(0)), ipc.WithMinSpaceSavings(ipcx.DefaultMinSavings)}
	if c == ipcx.CodecLZ4 {
		return append(opts, ipc.WithLZ4())
	}
	return append(opts, ipc.WithZstd())
}

func writeArrowStream(buf *bytes.Buffer, rec arrow.RecordBatch, c ipcx.Codec) error {
	buf.Reset()
	w := ipc.NewWriter(buf, arrowWriteOpts(rec.Schema(), c)...)
	if err := w.Write(rec); err != nil {
		return err
	}
	return w.Close()
}

func writeQuiverStream(buf *bytes.Buffer, rec arrow.RecordBatch, c ipcx.Codec) error {
	buf.Reset()
	w := ipcx.NewStreamWriter(buf, ipcx.Compression{Codec: c}, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return err
	}
	return w.Close()
}

// readStream reads every batch of an IPC stream and checks the rows.
func readStream(r *ipc.Reader, err error, want int64) error {
	if err != nil {
		return err
	}
	defer r.Release()
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	if err := r.Err(); err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("read %d rows, want %d", n, want)
	}
	return nil
}

// Codec runs the codec suite.
func Codec(ctx context.Context, cfg CodecConfig) (*report.Report, error) {
	if len(cfg.Rows) == 0 {
		cfg.Rows = []int{100_000, 500_000, 1_000_000}
	}
	if cfg.MinSample <= 0 {
		cfg.MinSample = 200 * time.Millisecond
	}
	r := &report.Report{Suite: "codec", Reps: cfg.Reps}
	t := &report.Table{
		Title: "Codecs: write and read of a compressed Arrow IPC stream, int + string batch, in memory",
		Note: fmt.Sprintf("Mean time and Go-heap bytes allocated per operation (median of the samples). arrow-go: ipc.NewWriter/NewReader with WithLZ4/WithZstd, "+
			"WithCompressConcurrency(%d), WithMinSpaceSavings(0.1). quiver: ipcx.NewStreamWriter/NewReader. Reads decode the same arrow-go-written bytes.", runtime.GOMAXPROCS(0)),
		Columns: []string{"rows", "path", "codec", "arrow-go ms", "arrow-go alloc", "quiver ms", "quiver alloc", "speedup", "alloc diff"},
	}
	mem := memory.NewGoAllocator()
	for _, rows := range cfg.Rows {
		rec := CodecBatch(mem, rows)
		raw := ipcx.RecordBytes(rec)
		for _, codec := range []ipcx.Codec{ipcx.CodecLZ4, ipcx.CodecZSTD} {
			if err := ctx.Err(); err != nil {
				rec.Release()
				return nil, err
			}
			var arrowBuf, quiverBuf, data bytes.Buffer
			if err := writeArrowStream(&data, rec, codec); err != nil {
				rec.Release()
				return nil, fmt.Errorf("write %v stream: %w", codec, err)
			}
			stream := data.Bytes()
			for _, path := range []string{"write", "read"} {
				var aSt, qSt opStat
				var a, q report.Contender
				if path == "write" {
					a = measuredOp("arrow-go", cfg.MinSample, &aSt, func() error { return writeArrowStream(&arrowBuf, rec, codec) })
					q = measuredOp("quiver", cfg.MinSample, &qSt, func() error { return writeQuiverStream(&quiverBuf, rec, codec) })
				} else {
					a = measuredOp("arrow-go", cfg.MinSample, &aSt, func() error {
						rdr, err := ipc.NewReader(bytes.NewReader(stream))
						return readStream(rdr, err, int64(rows))
					})
					q = measuredOp("quiver", cfg.MinSample, &qSt, func() error {
						rdr, err := ipcx.NewReader(bytes.NewReader(stream), nil)
						return readStream(rdr, err, int64(rows))
					})
				}
				stats, err := report.Alternate(cfg.Reps, a, q)
				if err != nil {
					rec.Release()
					return nil, err
				}
				cas := fmt.Sprintf("%s/%s/%s", report.FmtRows(int64(rows)), path, codec)
				ab, _ := aSt.median()
				qb, _ := qSt.median()
				for i, s := range stats {
					for k := range s.Samples {
						stats[i].Samples[k].Bytes, stats[i].Samples[k].Rows = raw, int64(rows)
					}
					r.Add("codec", cas, stats[i])
				}
				t.Rows = append(t.Rows, []string{
					report.FmtRows(int64(rows)), path, codec.String(),
					fmtMSf(stats[0]), fmtKB(ab), fmtMSf(stats[1]), fmtKB(qb),
					report.FmtX(report.Ratio(stats[1], stats[0])), fmtPct(qb, ab),
				})
				t.Bars = append(t.Bars,
					report.Bar{Group: cas, Series: "arrow-go", Value: report.Millis(stats[0].Median()), Unit: "ms (lower is better)"},
					report.Bar{Group: cas, Series: "quiver", Value: report.Millis(stats[1].Median()), Unit: "ms (lower is better)"})
			}
			// Compressed sizes, for the note: both writers' output.
			writeArrowStream(&arrowBuf, rec, codec)
			writeQuiverStream(&quiverBuf, rec, codec)
			t.Note += fmt.Sprintf("\n%s %v: %.1f MB raw; arrow-go stream %.1f MB, quiver stream %.1f MB.",
				report.FmtRows(int64(rows)), codec, float64(raw)/1e6, float64(arrowBuf.Len())/1e6, float64(quiverBuf.Len())/1e6)
		}
		rec.Release()
	}
	r.Tables = append(r.Tables, t)
	return r, nil
}

func fmtMSf(s report.Stat) string {
	return fmt.Sprintf("%.3f ±%.0f%%", float64(s.Median().Microseconds())/1000, s.Spread())
}

func fmtKB(b float64) string { return fmt.Sprintf("%.0f KB", b/1024) }

// fmtPct is how q compares with a: "12% less" or "3% more".
func fmtPct(q, a float64) string {
	if a == 0 {
		return ""
	}
	d := 100 * (q - a) / a
	if d <= 0 {
		return fmt.Sprintf("%.0f%% less", -d)
	}
	return fmt.Sprintf("%.0f%% more", d)
}
