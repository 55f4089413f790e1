package client

import (
	"context"
	"errors"
	"fmt"
	"time"

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
}

// LoadResult is what a finished load did.
type LoadResult struct {
	// Rows the server wrote.
	Rows    int64
	Elapsed time.Duration
}

// Load bulk-ingests the batches of rdr into a table through Flight SQL's
// CommandStatementIngest, as one stream, creating, appending to or
// replacing the table as opts.Mode says. Batches are sent as they are
// read and never held together. The load is all or nothing: when rdr
// fails midway, the upload is cancelled, the server writes nothing, and
// Load returns rdr's error as it is. A reader without rows fails with
// ErrNoRows. quiver load reads files with package filesio and hands them
// to Load.
func (c *Client) Load(ctx context.Context, rdr array.RecordReader, opts LoadOptions) (LoadResult, error) {
	start := time.Now()
	var res LoadResult
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
	cmd := &flightsql.ExecuteIngestOpts{Table: opts.Table, TableDefinitionOptions: tdo}
	if opts.Catalog != "" {
		cmd.Catalog = &opts.Catalog
	}
	if opts.Schema != "" {
		cmd.Schema = &opts.Schema
	}
	res.Rows, err = c.ingest(ctx, rdr, cmd, opts.Compression)
	res.Elapsed = time.Since(start)
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, ErrNoRows):
		return res, ErrNoRows
	}
	if rerr := rdr.Err(); rerr != nil {
		return res, rerr
	}
	return res, fmt.Errorf("ingest into %s: %w", opts.Table, err)
}
