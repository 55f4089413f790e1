package client

import (
	"bufio"
	"bytes"
	"context"
	stdcsv "encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Format is a data file format quiver reads.
type Format int

// The formats, chosen by file extension (see FormatOf).
const (
	FormatUnknown Format = iota
	FormatParquet
	FormatCSV
	FormatNDJSON
	// FormatArrow is an Arrow IPC file, or an IPC stream: the two are told
	// apart by the file's first bytes.
	FormatArrow
)

func (f Format) String() string {
	switch f {
	case FormatParquet:
		return "parquet"
	case FormatCSV:
		return "csv"
	case FormatNDJSON:
		return "ndjson"
	case FormatArrow:
		return "arrow"
	}
	return "unknown"
}

// ErrUnknownFormat is returned for a file whose extension names no format
// quiver reads.
var ErrUnknownFormat = errors.New("unknown file format")

// FormatOf picks a file's format from its extension: .parquet or .pq,
// .csv, .ndjson, .jsonl or .json (one object per line), and .arrow,
// .arrows, .feather or .ipc.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return FormatParquet, nil
	case ".csv":
		return FormatCSV, nil
	case ".ndjson", ".jsonl", ".json":
		return FormatNDJSON, nil
	case ".arrow", ".arrows", ".feather", ".ipc":
		return FormatArrow, nil
	}
	return FormatUnknown, fmt.Errorf("%w: %s (want .parquet, .csv, .ndjson/.jsonl, or .arrow/.arrows/.feather/.ipc)", ErrUnknownFormat, path)
}

// ReadError is a data file that could not be read: missing, malformed, or
// holding a value its column's type cannot take. The load it was part of
// wrote nothing.
type ReadError struct {
	Path string
	Err  error
}

func (e *ReadError) Error() string { return "read " + e.Path + ": " + e.Err.Error() }

func (e *ReadError) Unwrap() error { return e.Err }

// DefaultBatchRows is the batch size files are read in when ReadOptions
// does not say.
const DefaultBatchRows = 64 * 1024

// DefaultInferRows is how many CSV rows or NDJSON lines are sampled to
// infer column types when ReadOptions does not say.
const DefaultInferRows = 1000

// ReadOptions say how data files are read.
type ReadOptions struct {
	// BatchRows caps the rows per batch (DefaultBatchRows when zero).
	BatchRows int
	// InferRows is how many CSV rows or NDJSON lines are sampled to infer
	// column types (DefaultInferRows when zero). See inferCSV and
	// inferNDJSON for the rules.
	InferRows int
	// Schema, when set, is used for CSV and NDJSON files instead of
	// inferring one. A CSV file's header must name its fields in order.
	Schema *arrow.Schema
	// Allocator allocates the batches; nil means the Go allocator.
	Allocator memory.Allocator
}

func (o ReadOptions) withDefaults() ReadOptions {
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.InferRows <= 0 {
		o.InferRows = DefaultInferRows
	}
	if o.Allocator == nil {
		o.Allocator = memory.NewGoAllocator()
	}
	return o
}

// FileReader streams one data file as record batches of at most
// ReadOptions.BatchRows rows. It never holds the whole file: Parquet is
// read a row group's column chunks at a time, IPC a batch at a time, and
// text formats a chunk of lines at a time. It implements
// array.RecordReader; Close releases it and closes the file.
type FileReader struct {
	path   string
	format Format
	f      *os.File
	count  *countingFile
	size   int64
	src    array.RecordReader
	close  func() error
	max    int64

	pending arrow.RecordBatch // a batch bigger than max, being sliced
	off     int64
	cur     arrow.RecordBatch
	err     error
	refs    atomic.Int64
}

// OpenFile opens path as a stream of record batches in the format its
// extension names.
func OpenFile(ctx context.Context, path string, opts ReadOptions) (*FileReader, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, &ReadError{Path: path, Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory", path)
	}
	r := &FileReader{path: path, format: format, f: f, count: &countingFile{f: f}, size: st.Size(), max: int64(opts.BatchRows)}
	r.refs.Store(1)
	switch format {
	case FormatParquet:
		err = r.openParquet(ctx, opts)
	case FormatArrow:
		err = r.openArrow(opts)
	case FormatCSV:
		err = r.openCSV(opts)
	case FormatNDJSON:
		err = r.openNDJSON(opts)
	}
	if err != nil {
		f.Close()
		return nil, &ReadError{Path: path, Err: err}
	}
	return r, nil
}

func (r *FileReader) openParquet(ctx context.Context, opts ReadOptions) error {
	pf, err := file.NewParquetReader(r.count, file.WithReadProps(parquet.NewReaderProperties(opts.Allocator)))
	if err != nil {
		return err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: int64(opts.BatchRows)}, opts.Allocator)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return err
	}
	r.src = rr
	return nil
}

// arrowFileMagic opens an Arrow IPC file (a stream has none).
var arrowFileMagic = []byte("ARROW1")

func (r *FileReader) openArrow(opts ReadOptions) error {
	head := make([]byte, len(arrowFileMagic))
	n, _ := io.ReadFull(r.f, head)
	if _, err := r.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if n == len(head) && bytes.Equal(head, arrowFileMagic) {
		fr, err := ipc.NewFileReader(r.count, ipc.WithAllocator(opts.Allocator))
		if err != nil {
			return err
		}
		r.src = &ipcFileRecords{fr: fr}
		r.close = fr.Close
		return nil
	}
	sr, err := ipc.NewReader(bufio.NewReaderSize(r.count, 1<<20), ipc.WithAllocator(opts.Allocator))
	if err != nil {
		return err
	}
	r.src = sr
	return nil
}

func (r *FileReader) openCSV(opts ReadOptions) error {
	schema := opts.Schema
	if schema == nil {
		var err error
		if schema, err = inferCSV(r.f, opts.InferRows); err != nil {
			return err
		}
		if _, err := r.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	} else if err := csvReadable(schema); err != nil {
		return err
	}
	// The schema comes from a sample (inferCSV) rather than from arrow's
	// inferring reader, which types each column from the first row alone
	// and, in v18.8, panics on a file with a header and no rows.
	cr := csv.NewReader(bufio.NewReaderSize(r.count, 1<<20), schema,
		csv.WithHeader(true), csv.WithChunk(opts.BatchRows),
		csv.WithNullReader(true, ""), csv.WithAllocator(opts.Allocator))
	r.src = &csvRecords{Reader: cr, want: schema}
	return nil
}

func (r *FileReader) openNDJSON(opts ReadOptions) error {
	schema := opts.Schema
	if schema == nil {
		var err error
		if schema, err = inferNDJSON(r.f, opts.InferRows); err != nil {
			return err
		}
		if _, err := r.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	guard := newNDJSONGuard(bufio.NewReaderSize(r.count, 1<<20), schema)
	r.src = &ndjsonRecords{JSONReader: array.NewJSONReader(guard, schema, array.WithChunk(opts.BatchRows), array.WithAllocator(opts.Allocator)), guard: guard}
	return nil
}

// Path is the file's path.
func (r *FileReader) Path() string { return r.path }

// Format is the file's format.
func (r *FileReader) Format() Format { return r.format }

// Size is the file's size in bytes.
func (r *FileReader) Size() int64 { return r.size }

// BytesRead is how many bytes of the file have been read so far. Parquet
// and IPC files are read at offsets, so it may pass Size slightly when
// footers are read twice; it is meant for progress.
func (r *FileReader) BytesRead() int64 { return r.count.n.Load() }

// Schema is the schema of the batches.
func (r *FileReader) Schema() *arrow.Schema { return r.src.Schema() }

// Next reads the next batch.
func (r *FileReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	if r.pending == nil {
		if !r.src.Next() {
			if err := r.src.Err(); err != nil && !errors.Is(err, io.EOF) {
				r.err = err
			}
			return false
		}
		rec := r.src.RecordBatch()
		if rec.NumRows() <= r.max {
			rec.Retain()
			r.cur = rec
			return true
		}
		rec.Retain()
		r.pending, r.off = rec, 0
	}
	end := min(r.off+r.max, r.pending.NumRows())
	r.cur = r.pending.NewSlice(r.off, end)
	r.off = end
	if r.off == r.pending.NumRows() {
		r.pending.Release()
		r.pending = nil
	}
	return true
}

// RecordBatch is the batch Next read, valid until the next call to Next.
func (r *FileReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (r *FileReader) Record() arrow.RecordBatch { return r.cur }

// Err is the error that ended the batches, if any, naming the file.
func (r *FileReader) Err() error {
	if r.err == nil {
		return nil
	}
	return &ReadError{Path: r.path, Err: r.err}
}

// Retain adds a reference.
func (r *FileReader) Retain() { r.refs.Add(1) }

// Release drops a reference; the last one closes the reader.
func (r *FileReader) Release() {
	if r.refs.Add(-1) == 0 {
		r.Close()
	}
}

// Close releases the batches and closes the file. It may be called more
// than once.
func (r *FileReader) Close() error {
	if r.f == nil {
		return nil
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.pending != nil {
		r.pending.Release()
		r.pending = nil
	}
	r.src.Release()
	if r.close != nil {
		r.close()
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// countingFile counts the bytes read from a file, sequentially or at
// offsets (Parquet reads column chunks in parallel).
type countingFile struct {
	f *os.File
	n atomic.Int64
}

func (c *countingFile) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingFile) Seek(offset int64, whence int) (int64, error) {
	return c.f.Seek(offset, whence)
}

// ipcFileRecords reads an IPC file's batches in order as a RecordReader.
type ipcFileRecords struct {
	fr  *ipc.FileReader
	i   int
	cur arrow.RecordBatch
	err error
}

func (r *ipcFileRecords) Schema() *arrow.Schema { return r.fr.Schema() }

func (r *ipcFileRecords) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil || r.i >= r.fr.NumRecords() {
		return false
	}
	r.cur, r.err = r.fr.RecordBatchAt(r.i)
	r.i++
	return r.err == nil
}

func (r *ipcFileRecords) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *ipcFileRecords) Record() arrow.RecordBatch      { return r.cur }
func (r *ipcFileRecords) Err() error                     { return r.err }
func (r *ipcFileRecords) Retain()                        {}
func (r *ipcFileRecords) Release() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

// csvRecords checks that a CSV file's header names the expected columns:
// arrow's reader takes the names from the header.
type csvRecords struct {
	*csv.Reader
	want    *arrow.Schema
	checked bool
	err     error
}

func (r *csvRecords) Next() bool {
	if r.err != nil {
		return false
	}
	if !r.Reader.Next() {
		return false
	}
	if !r.checked {
		r.checked = true
		if err := sameColumns(r.Reader.Schema(), r.want); err != nil {
			r.err = err
			return false
		}
	}
	return true
}

func (r *csvRecords) Schema() *arrow.Schema { return r.want }

func (r *csvRecords) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Reader.Err()
}

// ndjsonRecords reports the guard's errors, which arrow's JSON decoder
// takes for the end of the input, and adds the line number to decoding
// errors.
type ndjsonRecords struct {
	*array.JSONReader
	guard *ndjsonGuard
}

func (r *ndjsonRecords) Err() error {
	if err := r.guard.err; err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := r.JSONReader.Err(); err != nil {
		return fmt.Errorf("near line %d: %w", r.guard.line, err)
	}
	return nil
}

// sameColumns checks that got has want's column names and types, in
// order. Nullability and metadata are not compared.
func sameColumns(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("%d columns (%s), want %d (%s)", got.NumFields(), fieldNames(got), want.NumFields(), fieldNames(want))
	}
	for i, f := range got.Fields() {
		w := want.Field(i)
		if f.Name != w.Name {
			return fmt.Errorf("column %d is %q, want %q", i+1, f.Name, w.Name)
		}
		if !arrow.TypeEqual(f.Type, w.Type) {
			return fmt.Errorf("column %q is %s, want %s", f.Name, f.Type, w.Type)
		}
	}
	return nil
}

// sameNames checks that got has want's column names, in order.
func sameNames(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("%d columns (%s), want %d (%s)", got.NumFields(), fieldNames(got), want.NumFields(), fieldNames(want))
	}
	for i, f := range got.Fields() {
		if f.Name != want.Field(i).Name {
			return fmt.Errorf("column %d is %q, want %q", i+1, f.Name, want.Field(i).Name)
		}
	}
	return nil
}

// csvHeader reads a CSV file's header as a schema of utf8 columns.
func csvHeader(path string) (*arrow.Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := stdcsv.NewReader(bufio.NewReader(f)).Read()
	if err != nil {
		return nil, fmt.Errorf("read the header of %s: %w", path, err)
	}
	fields := make([]arrow.Field, len(rec))
	for i, name := range rec {
		fields[i] = arrow.Field{Name: name, Type: arrow.BinaryTypes.String}
	}
	return arrow.NewSchema(fields, nil), nil
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
