package filesio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/engine"
)

// DefaultBatchRows is the rows per batch when ReadOptions does not say.
const DefaultBatchRows = 64 * 1024

// DefaultSampleRows is DuckDB's own sample_size: the CSV rows or NDJSON
// lines its sniffer reads to detect column types. Every value after the
// sample is still checked against the detected type.
const DefaultSampleRows = 20480

// ReadOptions say how Open reads files.
type ReadOptions struct {
	// BatchRows caps the rows per batch (DefaultBatchRows when zero).
	BatchRows int
	// SampleRows is how many CSV rows or NDJSON lines DuckDB samples to
	// detect column types (DefaultSampleRows when zero; -1 reads the
	// whole file first). DuckDB reads at least its first 2048 rows.
	SampleRows int
	// MaxLineBytes is the longest line a CSV file may hold; zero keeps
	// DuckDB's limit, 2,000,000 bytes. (NDJSON lines have none.)
	MaxLineBytes int64
	// SchemaFrom names a file whose columns, names and types, every file
	// is read with, instead of the first file's.
	SchemaFrom string
	// Allocator allocates the batches; nil means recycled memory
	// (mempool).
	Allocator memory.Allocator
	// Progress, when set, is called after each batch is read, on the
	// reading goroutine; keep it quick.
	Progress func(Progress)
}

// Progress is how far a Reader has got.
type Progress struct {
	// Rows read so far, over all files.
	Rows int64
	// File is the file being read, the FileIndex-th (from 1) of Files.
	File             string
	FileIndex, Files int
	// Bytes is the size of the files read to their end, TotalBytes of
	// all of them. DuckDB does not say how far into a file it is.
	Bytes, TotalBytes int64
}

// Reader streams files as one sequence of record batches (see the package
// doc). It implements array.RecordReader. A batch is valid until the next
// call to Next unless retained, and its strings live in recycled memory:
// copy a string taken from it (ValueStr, String.Value) to keep it. A
// Reader belongs to one goroutine at a time, like the DuckDB connection
// it holds; Close (or the last Release) frees it and its database.
type Reader struct {
	ctx    context.Context
	opts   ReadOptions
	db     *engine.DB
	conn   *engine.Conn
	files  []*file
	schema *arrow.Schema
	total  int64

	next  int                // the next file to open
	cur   array.RecordReader // the open file's batches
	done  int64              // bytes of the files read to their end
	rows  int64
	ended bool
	rec   arrow.RecordBatch
	err   error
	refs  atomic.Int64
}

// Open checks every file before a batch is read: it exists, has a known
// format, parses as that format (DuckDB sniffs CSV and NDJSON files), and
// has the columns of the first file or of opts.SchemaFrom.
func Open(ctx context.Context, paths []string, opts ReadOptions) (*Reader, error) {
	if len(paths) == 0 {
		return nil, errors.New("no files to read")
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = DefaultBatchRows
	}
	if opts.SampleRows == 0 {
		opts.SampleRows = DefaultSampleRows
	}
	r := &Reader{ctx: ctx, opts: opts}
	r.refs.Store(1)
	for _, p := range paths {
		f, err := statFile(p)
		if err != nil {
			return nil, err
		}
		r.files = append(r.files, f)
		r.total += f.size
	}
	db, err := engine.Open(ctx, engine.Options{
		Path: ":memory:", ExternalAccess: true, BatchRows: opts.BatchRows,
		Allocator: opts.Allocator, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, fmt.Errorf("start DuckDB to read files: %w", err)
	}
	r.db = db
	if r.conn, err = db.Conn(ctx); err != nil {
		r.Close()
		return nil, fmt.Errorf("start DuckDB to read files: %w", err)
	}
	if err := r.plan(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// statFile checks that path is a file of a known format.
func statFile(path string) (*file, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, &ReadError{Path: path, Err: err}
	}
	if st.IsDir() {
		return nil, &ReadError{Path: path, Err: errors.New("is a directory")}
	}
	return &file{path: path, format: format, size: st.Size()}, nil
}

// plan describes every file, settles the schema and checks each file
// against it.
func (r *Reader) plan() error {
	src := r.files[0]
	if r.opts.SchemaFrom != "" {
		var err error
		if src, err = statFile(r.opts.SchemaFrom); err != nil {
			return err
		}
		if err := r.describe(src); err != nil {
			return err
		}
	}
	for _, f := range r.files {
		if err := r.describe(f); err != nil {
			return err
		}
	}
	t := &columns{names: src.names, types: src.types}
	if err := src.fit(t, src.path); err != nil {
		return &ReadError{Path: src.path, Err: err}
	}
	schema, err := r.fileSchema(src, src.sql)
	if err != nil {
		return err
	}
	t.schema = plainSchema(schema)
	r.schema = t.schema
	for _, f := range r.files {
		if f == src {
			continue
		}
		if err := f.fit(t, src.path); err != nil {
			return &ReadError{Path: f.path, Err: err}
		}
		if f.format == FormatArrow || t.types != nil {
			continue
		}
		// Without DuckDB types to cast to, the file must read as the
		// schema's Arrow types.
		got, err := r.fileSchema(f, f.sql)
		if err != nil {
			return err
		}
		if err := sameTypes(got, t.schema, src.path); err != nil {
			return &ReadError{Path: f.path, Err: err}
		}
	}
	return nil
}

// describe reads a file's column names, and DuckDB types for the formats
// DuckDB reads.
func (r *Reader) describe(f *file) error {
	if f.format == FormatArrow {
		af, err := openArrowFile(f.path, 1, memory.DefaultAllocator)
		if err != nil {
			return &ReadError{Path: f.path, Err: err}
		}
		f.arrow = af.Schema()
		af.Release()
		for _, fld := range f.arrow.Fields() {
			f.names = append(f.names, fld.Name)
		}
		return nil
	}
	f.sample, f.maxLine = r.opts.SampleRows, r.opts.MaxLineBytes
	rows, err := r.conn.Query(r.ctx, "DESCRIBE SELECT * FROM "+f.scan())
	if err != nil {
		return &ReadError{Path: f.path, Err: duckErr(r.ctx, err)}
	}
	for rows.Next() {
		rec := rows.RecordBatch()
		names, types := rec.Column(0).(*array.String), rec.Column(1).(*array.String)
		for i := range names.Len() {
			f.names = append(f.names, strings.Clone(names.Value(i)))
			f.types = append(f.types, strings.Clone(types.Value(i)))
		}
	}
	if err := rows.Close(); err != nil {
		return &ReadError{Path: f.path, Err: duckErr(r.ctx, err)}
	}
	if f.format == FormatCSV {
		return r.checkDialect(f)
	}
	return nil
}

// fileSchema is the Arrow schema of the batches sql reads from f.
func (r *Reader) fileSchema(f *file, sql string) (*arrow.Schema, error) {
	if f.format == FormatArrow {
		return f.arrow, nil
	}
	st, err := r.conn.Prepare(r.ctx, sql)
	if err != nil {
		return nil, &ReadError{Path: f.path, Err: duckErr(r.ctx, err)}
	}
	defer st.Close()
	schema, err := st.Schema()
	if err != nil {
		return nil, &ReadError{Path: f.path, Err: err}
	}
	return schema, nil
}

// Schema is the schema of every batch.
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// TotalBytes is the size of the files.
func (r *Reader) TotalBytes() int64 { return r.total }

// Rows is the number of rows read so far.
func (r *Reader) Rows() int64 { return r.rows }

// Ended reports whether every file was read to its end.
func (r *Reader) Ended() bool { return r.ended }

// Next reads the next batch.
func (r *Reader) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	for r.err == nil {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			return false
		}
		if r.cur == nil {
			if r.next == len(r.files) {
				r.ended = true
				return false
			}
			if err := r.open(r.files[r.next]); err != nil {
				r.err = err
				return false
			}
			r.next++
		}
		f := r.files[r.next-1]
		if r.cur.Next() {
			rec := r.cur.RecordBatch()
			cols := rec.Columns()
			if f.cols != nil {
				cols = make([]arrow.Array, len(f.cols))
				for i, c := range f.cols {
					cols[i] = rec.Column(c)
				}
			}
			r.rec = array.NewRecordBatch(r.schema, cols, rec.NumRows())
			r.rows += rec.NumRows()
			if r.opts.Progress != nil {
				r.opts.Progress(Progress{Rows: r.rows, File: f.path, FileIndex: r.next, Files: len(r.files), Bytes: r.done, TotalBytes: r.total})
			}
			return true
		}
		err := r.cur.Err()
		r.cur.Release()
		r.cur = nil
		if err != nil && !errors.Is(err, io.EOF) {
			r.err = &ReadError{Path: f.path, Err: duckErr(r.ctx, err)}
			return false
		}
		r.done += f.size
	}
	return false
}

// open starts reading f.
func (r *Reader) open(f *file) error {
	if f.format == FormatArrow {
		af, err := openArrowFile(f.path, int64(r.opts.BatchRows), r.allocator())
		if err != nil {
			return &ReadError{Path: f.path, Err: err}
		}
		r.cur = af
		return nil
	}
	// The batches go to a consumer that keeps nothing of them once
	// released (an IPC writer), so strings may be recycled too.
	rows, err := r.conn.QueryTransient(r.ctx, f.sql)
	if err != nil {
		return &ReadError{Path: f.path, Err: duckErr(r.ctx, err)}
	}
	r.cur = rows
	return nil
}

func (r *Reader) allocator() memory.Allocator {
	if r.opts.Allocator != nil {
		return r.opts.Allocator
	}
	return r.db.Allocator()
}

// RecordBatch is the batch Next read.
func (r *Reader) RecordBatch() arrow.RecordBatch { return r.rec }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (r *Reader) Record() arrow.RecordBatch { return r.rec }

// Err is the error that ended the batches, if any: a *ReadError naming
// the file, or ctx's error.
func (r *Reader) Err() error { return r.err }

// Retain adds a reference.
func (r *Reader) Retain() { r.refs.Add(1) }

// Release drops a reference; the last one closes the Reader.
func (r *Reader) Release() {
	if r.refs.Add(-1) == 0 {
		r.Close()
	}
}

// Close releases the batches, stops the query and closes the database.
// It may be called more than once.
func (r *Reader) Close() error {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.conn != nil {
		r.conn.Release()
		r.conn = nil
	}
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
	return nil
}

// plainSchema drops metadata (pandas', Parquet's), which a table does not
// keep.
func plainSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}
