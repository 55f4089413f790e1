package filesio

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/quiverdata/quiver/engine"
)

// WriteFormats are the formats WriteFile and Write write.
var WriteFormats = []string{"csv", "json", "parquet"}

// copyOptions are COPY's options for each format. JSON is one object per
// line. Parquet is zstd-compressed, in DuckDB's row groups of 122,880
// rows. quiver renames files into place itself, so DuckDB's own
// temporary file is off.
var copyOptions = map[string]string{
	"csv":     "FORMAT csv, HEADER true, USE_TMP_FILE false",
	"json":    "FORMAT json, USE_TMP_FILE false",
	"parquet": "FORMAT parquet, COMPRESSION zstd, USE_TMP_FILE false",
}

// ParquetCodecs are the Parquet compressions WithParquetCompression
// takes: DuckDB's names.
var ParquetCodecs = []string{"zstd", "snappy", "gzip", "lz4", "brotli", "uncompressed"}

// WriteFile writes every batch of r to path in format (csv, json or
// parquet) and returns once the file is complete. It writes a temporary
// file beside path and renames it to path only when COPY succeeded, so a
// failure leaves nothing behind, and an existing file at path stays as it
// was. When r fails, its error is returned.
func WriteFile(ctx context.Context, r array.RecordReader, path, format string, wopts ...WriteOption) error {
	var cfg writeConfig
	for _, o := range wopts {
		o(&cfg)
	}
	opts, err := optionsFor(format, cfg)
	if err != nil {
		return err
	}
	p, err := CreatePending(path)
	if err != nil {
		return err
	}
	name := p.Name()
	if err := p.File.Close(); err != nil { // DuckDB opens it by name
		p.Abort()
		return err
	}
	if err := copyTo(ctx, r, name, opts, cfg); err != nil {
		p.Abort()
		if rerr := r.Err(); rerr != nil {
			return rerr
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return p.Commit()
}

// DefaultMemoryLimit is the writing DuckDB's memory_limit unless
// WithMemoryLimit sets one. Without a limit of its own DuckDB takes 80% of
// the machine's memory, and a Parquet writer whose source runs ahead of it
// buffers row groups up to that: `quiver query -o` of 250k, 1M and 3M
// rows of twenty 100-byte strings peaked at 1.6, 3.1 and 4.5 GB of
// client memory. With 2GB the same writes peaked at 1.6, 1.6 and 1.7 GB,
// in times within the runs' spread (1M rows: 13.9 s against 12.3-14.4 s;
// 10M rows of str20: 16.1-17.1 s against 16.0-16.7 s), on
// 2026-12-05.
const DefaultMemoryLimit = "2GB"

// ErrMemory marks a write that needed more memory than the writing
// DuckDB's limit.
var ErrMemory = errors.New("the writer ran out of memory")

// WriteOption bounds the DuckDB that writes.
type WriteOption func(*writeConfig)

type writeConfig struct {
	threads      int
	memory       string
	parquetCodec string
}

// WithThreads bounds the writing DuckDB's threads.
func WithThreads(n int) WriteOption { return func(c *writeConfig) { c.threads = n } }

// WithMemoryLimit sets the writing DuckDB's memory_limit ("256MB")
// instead of DefaultMemoryLimit.
func WithMemoryLimit(limit string) WriteOption { return func(c *writeConfig) { c.memory = limit } }

// WithParquetCompression sets the codec of Parquet output, one of
// ParquetCodecs, instead of zstd. Other formats ignore it.
func WithParquetCompression(codec string) WriteOption {
	return func(c *writeConfig) { c.parquetCodec = codec }
}

// Write streams every batch of r to w in format (csv, json or parquet).
// DuckDB writes into a pipe that a goroutine copies to w; Write returns
// once both are done. If w fails, the write stops with w's error.
func Write(ctx context.Context, r array.RecordReader, w io.Writer, format string, wopts ...WriteOption) error {
	var cfg writeConfig
	for _, o := range wopts {
		o(&cfg)
	}
	opts, err := optionsFor(format, cfg)
	if err != nil {
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("write %s: %w", format, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(w, pr)
		if err != nil {
			cancel()                // stop DuckDB,
			io.Copy(io.Discard, pr) // which must not block on a full pipe meanwhile
		}
		pr.Close()
		copied <- err
	}()
	err = copyTo(ctx, r, fmt.Sprintf("/dev/fd/%d", pw.Fd()), opts, cfg)
	pw.Close()
	if werr := <-copied; werr != nil {
		return fmt.Errorf("write %s output: %w", format, werr)
	}
	return err
}

func optionsFor(format string, cfg writeConfig) (string, error) {
	opts, ok := copyOptions[format]
	if !ok {
		return "", fmt.Errorf("cannot write %q: use %s", format, strings.Join(WriteFormats, ", "))
	}
	if format == "parquet" && cfg.parquetCodec != "" {
		if !slices.Contains(ParquetCodecs, cfg.parquetCodec) {
			return "", fmt.Errorf("unknown Parquet compression %q: use %s", cfg.parquetCodec, strings.Join(ParquetCodecs, ", "))
		}
		opts = strings.Replace(opts, "COMPRESSION zstd", "COMPRESSION "+cfg.parquetCodec, 1)
	}
	return opts, nil
}

// outView is the name r's batches have in DuckDB.
const outView = "quiver_out"

// copyTo writes r's batches to dest with DuckDB's COPY, in an in-memory
// database of its own.
func copyTo(ctx context.Context, r array.RecordReader, dest, opts string, cfg writeConfig) error {
	// What does not fit in the memory limit spills to temp_directory,
	// which for an in-memory database is .tmp in the current directory
	// unless set: the writer gets a private one among the system's
	// temporary files instead, removed once DuckDB is closed.
	spill, err := os.MkdirTemp("", "quiver-write-")
	if err != nil {
		return fmt.Errorf("start DuckDB to write: %w", err)
	}
	defer os.RemoveAll(spill)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fmt.Errorf("start DuckDB to write: %w", err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("start DuckDB to write: %w", err)
	}
	defer conn.Close()
	memLimit := cfg.memory
	if memLimit == "" {
		memLimit = DefaultMemoryLimit
	}
	// TIMESTAMP WITH TIME ZONE is written in UTC, as the server gives it.
	setup := []string{"SET TimeZone = 'UTC'", "SET memory_limit = " + engine.QuoteString(memLimit),
		"SET temp_directory = " + engine.QuoteString(spill)}
	if cfg.threads > 0 {
		setup = append(setup, fmt.Sprintf("SET threads = %d", cfg.threads))
	}
	for _, q := range setup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("start DuckDB to write: %s: %w", q, err)
		}
	}
	err = conn.Raw(func(dc any) error {
		a, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		release, err := a.RegisterView(r, outView)
		if err != nil {
			return fmt.Errorf("%w: DuckDB cannot scan the schema %s", err, r.Schema())
		}
		defer release()
		_, err = dc.(driver.ExecerContext).ExecContext(ctx,
			"COPY (SELECT * FROM "+outView+") TO "+engine.QuoteString(dest)+" ("+opts+")", nil)
		return err
	})
	if rerr := r.Err(); rerr != nil {
		return rerr
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		msg := duckMessage(err.Error())
		var de *duckdb.Error
		if errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory {
			return fmt.Errorf("%w (limit %s): %s", ErrMemory, memLimit, msg)
		}
		return errors.New(msg)
	}
	return nil
}

// Writes reports whether WriteFile and Write write format.
func Writes(format string) bool { return slices.Contains(WriteFormats, format) }
