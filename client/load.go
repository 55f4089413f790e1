package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/ipcx"
)

// ErrNoRows is returned by Load for files that hold no rows, and by
// Ingest for a reader without batches: nothing is loaded and no table is
// created.
var ErrNoRows = errors.New("the input holds no rows: nothing was loaded and no table was created")

// Mode is what a load does to its table, as quiver load --mode names it.
type Mode string

// The load modes.
const (
	// ModeCreate creates the table and fails if it exists.
	ModeCreate Mode = "create"
	// ModeAppend appends to the table and fails if it is missing.
	ModeAppend Mode = "append"
	// ModeReplace replaces the table, or creates it.
	ModeReplace Mode = "replace"
	// ModeCreateAppend appends to the table, creating it if missing.
	ModeCreateAppend Mode = "create_append"
)

// ParseMode parses a --mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeCreate, ModeAppend, ModeReplace, ModeCreateAppend:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: want create, append, replace or create_append", s)
}

// TableDefinitionOptions are the Flight SQL ingest options for the mode.
func (m Mode) TableDefinitionOptions() (*flightsql.TableDefinitionOptions, error) {
	var o flightsql.TableDefinitionOptions
	switch m {
	case ModeCreate:
		o.IfNotExist, o.IfExists = flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionFail
	case ModeAppend:
		o.IfNotExist, o.IfExists = flightsql.TableDefinitionOptionsTableNotExistOptionFail, flightsql.TableDefinitionOptionsTableExistsOptionAppend
	case ModeReplace:
		o.IfNotExist, o.IfExists = flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionReplace
	case ModeCreateAppend:
		o.IfNotExist, o.IfExists = flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionAppend
	default:
		return nil, fmt.Errorf("unknown mode %q: want create, append, replace or create_append", m)
	}
	return &o, nil
}

// LoadOptions configure Load.
type LoadOptions struct {
	// Table is the target table; Catalog and Schema qualify it (the
	// session's defaults when empty).
	Table, Catalog, Schema string
	Mode                   Mode
	// Compression of the uploaded IPC bodies: lz4, zstd, auto or none.
	Compression string
	// Read says how files are read; Read.Allocator defaults to the
	// client's.
	Read ReadOptions
	// Progress, when set, is called after each batch is read, on the
	// loading goroutine; keep it quick.
	Progress func(LoadProgress)
}

// LoadProgress is how far a load has got.
type LoadProgress struct {
	// Rows read so far.
	Rows int64
	// Bytes of the files read so far, and their total size.
	Bytes, TotalBytes int64
	// File is the file being read.
	File string
}

// LoadResult is what a finished load did.
type LoadResult struct {
	// Rows the server wrote.
	Rows int64
	// Bytes is the total size of the files loaded.
	Bytes   int64
	Elapsed time.Duration
}

// Load bulk-ingests files into a table through Flight SQL's
// CommandStatementIngest, as one stream: the files are read one after
// another in batches and never held whole. Every file must have the same
// columns (names and types); CSV and NDJSON files after the first are read
// with the first file's schema. The load is all-or-nothing: a file that
// fails to read midway cancels the upload, and the server then writes
// nothing.
func (c *Client) Load(ctx context.Context, paths []string, opts LoadOptions) (LoadResult, error) {
	start := time.Now()
	var res LoadResult
	if len(paths) == 0 {
		return res, errors.New("no files to load")
	}
	if opts.Table == "" {
		return res, errors.New("no table to load into")
	}
	tdo, err := opts.Mode.TableDefinitionOptions()
	if err != nil {
		return res, err
	}
	if opts.Compression != "" {
		if _, err := ipcx.ParseCompression(opts.Compression); err != nil {
			return res, err
		}
	}
	if opts.Read.Allocator == nil {
		opts.Read.Allocator = c.allocator()
	}
	seq, err := newFileSeq(ctx, paths, opts.Read, opts.Progress)
	if err != nil {
		return res, err
	}
	defer seq.Release()
	res.Bytes = seq.total
	cmd := &flightsql.ExecuteIngestOpts{Table: opts.Table, TableDefinitionOptions: tdo}
	if opts.Catalog != "" {
		cmd.Catalog = &opts.Catalog
	}
	if opts.Schema != "" {
		cmd.Schema = &opts.Schema
	}
	// Cancelling the call is what tells the server to abort: arrow-go's
	// ingest returns on a reader error without closing the stream.
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	res.Rows, err = c.ingest(ictx, seq, cmd, opts.Compression)
	res.Elapsed = time.Since(start)
	if err != nil {
		if serr := seq.Err(); serr != nil {
			return res, serr
		}
		if seq.ended && seq.rows == 0 {
			// arrow-go's ingest sends no schema for a stream without
			// batches, so the server cannot create the table.
			return res, ErrNoRows
		}
		return res, fmt.Errorf("ingest into %s: %w", opts.Table, err)
	}
	return res, nil
}

// fileSeq reads files one after another as one array.RecordReader, with
// the first file's schema.
type fileSeq struct {
	ctx      context.Context
	paths    []string
	opts     ReadOptions
	progress func(LoadProgress)
	schema   *arrow.Schema
	total    int64

	next  int
	cur   *FileReader
	done  int64 // bytes of finished files
	rows  int64
	ended bool // every file was read to its end
	rec   arrow.RecordBatch
	err   error
	refs  int64
	first *FileReader // opened while checking, handed to Next
}

// newFileSeq checks every file before anything is sent: it exists, has a
// known format, and has the first file's columns. Parquet and Arrow
// schemas are compared in full; a CSV header's names are compared (its
// types are the first file's); NDJSON keys are checked as they are read.
func newFileSeq(ctx context.Context, paths []string, opts ReadOptions, progress func(LoadProgress)) (*fileSeq, error) {
	s := &fileSeq{ctx: ctx, paths: paths, opts: opts, progress: progress, refs: 1}
	for _, p := range paths {
		if _, err := FormatOf(p); err != nil {
			return nil, err
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		s.total += st.Size()
	}
	for i, p := range paths {
		r, err := OpenFile(ctx, p, s.readOptions())
		if err != nil {
			s.Release()
			return nil, err
		}
		sch := r.Schema()
		if i == 0 {
			s.schema = plainSchema(sch)
			s.first = r
			continue
		}
		r.Close()
		if f, _ := FormatOf(p); f == FormatCSV {
			if sch, err = csvHeader(p); err != nil {
				s.Release()
				return nil, err
			}
			if err := sameNames(sch, s.schema); err != nil {
				s.Release()
				return nil, fmt.Errorf("%s does not have the columns of %s: %w; every file must share one schema", p, paths[0], err)
			}
			continue
		}
		if err := sameColumns(sch, s.schema); err != nil {
			s.Release()
			return nil, fmt.Errorf("%s does not have the columns of %s: %w; every file must share one schema", p, paths[0], err)
		}
	}
	return s, nil
}

// plainSchema drops metadata (pandas' and Parquet's), which the table
// does not keep.
func plainSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

// readOptions are the options for the next file: text formats take the
// first file's schema.
func (s *fileSeq) readOptions() ReadOptions {
	o := s.opts
	if s.schema != nil && o.Schema == nil {
		o.Schema = s.schema
	}
	return o
}

func (s *fileSeq) Schema() *arrow.Schema { return s.schema }

func (s *fileSeq) Next() bool {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	for s.err == nil {
		if err := s.ctx.Err(); err != nil {
			s.err = err
			return false
		}
		if s.cur == nil {
			if s.next == len(s.paths) {
				s.ended = true
				return false
			}
			if s.first != nil {
				s.cur, s.first = s.first, nil
			} else {
				r, err := OpenFile(s.ctx, s.paths[s.next], s.readOptions())
				if err != nil {
					s.err = err
					return false
				}
				s.cur = r
			}
			s.next++
		}
		if s.cur.Next() {
			rec := s.cur.RecordBatch()
			if err := sameColumns(rec.Schema(), s.schema); err != nil {
				s.err = &ReadError{Path: s.cur.Path(), Err: err}
				return false
			}
			s.rec = array.NewRecordBatch(s.schema, rec.Columns(), rec.NumRows())
			s.rows += rec.NumRows()
			if s.progress != nil {
				s.progress(LoadProgress{Rows: s.rows, Bytes: min(s.done+s.cur.BytesRead(), s.total), TotalBytes: s.total, File: s.cur.Path()})
			}
			return true
		}
		if err := s.cur.Err(); err != nil {
			s.err = err
			return false
		}
		s.done += s.cur.Size()
		s.cur.Close()
		s.cur = nil
	}
	return false
}

func (s *fileSeq) RecordBatch() arrow.RecordBatch { return s.rec }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (s *fileSeq) Record() arrow.RecordBatch { return s.rec }

func (s *fileSeq) Err() error { return s.err }

func (s *fileSeq) Retain() { s.refs++ }

func (s *fileSeq) Release() {
	s.refs--
	if s.refs > 0 {
		return
	}
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	for _, r := range []*FileReader{s.cur, s.first} {
		if r != nil {
			r.Close()
		}
	}
	s.cur, s.first = nil, nil
}
