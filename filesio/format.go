package filesio

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Format is a data file format quiver reads.
type Format int

// The formats, chosen by file extension (see FormatOf).
const (
	FormatUnknown Format = iota
	FormatParquet
	FormatCSV
	// FormatNDJSON is one JSON object per line; DuckDB also reads a file
	// holding one JSON array of objects.
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
// .csv, .ndjson, .jsonl or .json, and .arrow, .arrows, .feather or .ipc.
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

// ReadError is a data file that could not be read: missing, malformed,
// not fitting the other files, or holding a value its column's type
// cannot take.
type ReadError struct {
	Path string
	Err  error
}

func (e *ReadError) Error() string { return "read " + e.Path + ": " + e.Err.Error() }

func (e *ReadError) Unwrap() error { return e.Err }
