package client

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// OutputFormats are the formats a query result can be written as.
var OutputFormats = []string{"table", "csv", "json", "arrow", "parquet"}

// OutputFormatOf picks the output format from a file name's extension:
// .parquet, .arrow (also .ipc, .feather), .csv, .json and .jsonl/.ndjson.
func OutputFormatOf(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return "parquet", nil
	case ".arrow", ".ipc", ".feather":
		return "arrow", nil
	case ".csv":
		return "csv", nil
	case ".json", ".jsonl", ".ndjson":
		return "json", nil
	}
	return "", fmt.Errorf("cannot tell the format of %q from its extension: use .parquet, .arrow, .csv or .jsonl, or give --format", path)
}

// ResultWriter writes a streamed result in one format.
type ResultWriter interface {
	Write(rec arrow.RecordBatch) error
	// Close finishes the output (footers, the table's row count).
	Close() error
}

// NewResultWriter returns a writer of format to w for results of schema.
// tableRows caps the rows the table format prints (the rest are counted).
// The csv, json and parquet writers are arrow-go's, which lack some types
// (csv refuses TIME, INTERVAL, STRUCT and MAP up front; parquet fails on
// INTERVAL); quiver query writes those formats with DuckDB instead
// (package filesio).
func NewResultWriter(format string, w io.Writer, schema *arrow.Schema, tableRows int) (ResultWriter, error) {
	switch format {
	case "table":
		return &tableWriter{w: w, schema: schema, max: tableRows}, nil
	case "csv":
		for _, f := range schema.Fields() {
			if !csvWritable(f.Type) {
				return nil, fmt.Errorf("column %q is %s, which the csv writer cannot write: write the file with quiver query -o FILE.csv, which DuckDB writes", f.Name, f.Type)
			}
		}
		return &csvWriter{w: csv.NewWriter(w, schema, csv.WithHeader(true), csv.WithNullWriter(""))}, nil
	case "json":
		return &jsonWriter{w: w}, nil
	case "arrow":
		fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(memory.NewGoAllocator()))
		if err != nil {
			return nil, fmt.Errorf("start arrow file: %w", err)
		}
		return fw, nil
	case "parquet":
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(true))
		pw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return nil, fmt.Errorf("start parquet file: %w", err)
		}
		return &parquetWriter{w: pw}, nil
	}
	return nil, fmt.Errorf("unknown format %q: use %s", format, strings.Join(OutputFormats, ", "))
}

// csvWritable reports whether arrow-go's CSV writer takes dt: it panics
// on the types it lacks (TIME, INTERVAL, STRUCT, MAP, …).
func csvWritable(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.MapType:
		return false
	case arrow.ListLikeType:
		return csvWritable(t.Elem())
	case arrow.ExtensionType:
		return true
	}
	switch dt.ID() {
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.LARGE_STRING,
		arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.DECIMAL128, arrow.DECIMAL256, arrow.NULL:
		return true
	}
	return false
}

type csvWriter struct{ w *csv.Writer }

func (c *csvWriter) Write(rec arrow.RecordBatch) error { return c.w.Write(rec) }
func (c *csvWriter) Close() error                      { c.w.Flush(); return c.w.Error() }

type jsonWriter struct{ w io.Writer }

func (j *jsonWriter) Write(rec arrow.RecordBatch) error { return array.RecordToJSON(rec, j.w) }
func (j *jsonWriter) Close() error                      { return nil }

// parquetRowGroup is the rows per Parquet row group: large groups read
// fast in every engine.
const parquetRowGroup = 1 << 20

// parquetWriter buffers batches into large row groups; pqarrow's Write
// would cut one row group per batch.
type parquetWriter struct {
	w    *pqarrow.FileWriter
	rows int
}

func (p *parquetWriter) Write(rec arrow.RecordBatch) error {
	if p.rows >= parquetRowGroup {
		if err := p.w.NewBufferedRowGroupChecked(); err != nil {
			return err
		}
		p.rows = 0
	}
	p.rows += int(rec.NumRows())
	return p.w.WriteBuffered(rec)
}

func (p *parquetWriter) Close() error { return p.w.Close() }

// tableWriter prints the first rows as an aligned table and counts the
// rest, so a large result never piles up in memory.
type tableWriter struct {
	w      io.Writer
	schema *arrow.Schema
	max    int
	rows   [][]string
	total  int64
}

func (t *tableWriter) Write(rec arrow.RecordBatch) error {
	for i := 0; i < int(rec.NumRows()) && len(t.rows) < t.max; i++ {
		row := make([]string, rec.NumCols())
		for c, col := range rec.Columns() {
			if col.IsNull(i) {
				row[c] = "NULL"
			} else {
				row[c] = cellString(col, i)
			}
		}
		t.rows = append(t.rows, row)
	}
	t.total += rec.NumRows()
	return nil
}

// cellString is a value as the table format prints it. An extension type
// need not format its values (arrow-go's base panics, as for DuckDB's
// opaque BIGNUM); those print as their storage does.
func cellString(col arrow.Array, i int) (s string) {
	if ext, ok := col.(array.ExtensionArray); ok {
		defer func() {
			if recover() != nil {
				s = strings.Clone(ext.Storage().ValueStr(i))
			}
		}()
	}
	return strings.Clone(col.ValueStr(i))
}

func (t *tableWriter) Close() error {
	tw := tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0)
	var head, rule []string
	for _, f := range t.schema.Fields() {
		head = append(head, f.Name)
		rule = append(rule, strings.Repeat("-", max(len(f.Name), 4)))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	fmt.Fprintln(tw, strings.Join(rule, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case t.total == 1:
		fmt.Fprintln(t.w, "(1 row)")
	case t.total > int64(len(t.rows)):
		fmt.Fprintf(t.w, "(%d rows, first %d shown; use -o FILE or --format to get them all)\n", t.total, len(t.rows))
	default:
		fmt.Fprintf(t.w, "(%d rows)\n", t.total)
	}
	return nil
}
