package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/filesio"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/ipcx"
)

func init() {
	register("load", "bulk-load Parquet, CSV, NDJSON or Arrow IPC files into a table over Flight SQL", func() command { return &loadCmd{} })
}

// loadCmd is quiver load FILE... --table T: the files are read by an
// in-process DuckDB (filesio) and stream to the server as one
// CommandStatementIngest, all or nothing.
type loadCmd struct{}

func (loadCmd) Run(ctx context.Context, std cli.Stdio, args []string) error {
	fs := newFlagSet("load")
	var (
		cf                                  clientFlags
		table, mode, catalog, schema, codec string
		schemaFrom, maxLine                 string
		batchRows, sampleRows               int
		quiet                               bool
	)
	cf.register(fs)
	fs.StringVar(&table, "table", "", "table to load into (required)")
	fs.StringVar(&mode, "mode", "create", "create (fail if it exists), append (fail if missing), replace, or create_append")
	fs.StringVar(&catalog, "catalog", "", "catalog of the table (default: the server's)")
	fs.StringVar(&schema, "schema", "", "schema of the table (default: the server's)")
	fs.StringVar(&codec, "compression", "none", "compress the upload: lz4, zstd, auto or none")
	fs.IntVar(&batchRows, "batch-rows", filesio.DefaultBatchRows, "rows per batch sent")
	fs.IntVar(&sampleRows, "infer-rows", filesio.DefaultSampleRows, "CSV rows or NDJSON lines DuckDB samples to detect column types (-1: the whole file)")
	fs.StringVar(&schemaFrom, "schema-from", "", "read every file with the column names and types of this file instead of the first file's")
	fs.StringVar(&maxLine, "max-line-size", "", "the longest line a CSV file may hold, e.g. 64MB (default: DuckDB's, 2,000,000 bytes)")
	fs.BoolVar(&quiet, "quiet", false, "print no progress, only the summary")
	files, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("name at least one file: quiver load FILE... --table T")
	}
	if table == "" {
		return usagef("--table is required")
	}
	m, err := client.ParseMode(mode)
	if err != nil {
		return usagef("bad --mode: %v", err)
	}
	if _, err := ipcx.ParseCompression(codec); err != nil {
		return usagef("bad --compression: %v", err)
	}
	if batchRows <= 0 || sampleRows == 0 || sampleRows < -1 {
		return usagef("--batch-rows must be positive, and --infer-rows positive or -1")
	}
	var maxLineBytes int64
	if maxLine != "" {
		if maxLineBytes, err = admit.ParseBytes(maxLine); err != nil || maxLineBytes < 1<<10 {
			return usagef("bad --max-line-size %q: give a size of at least 1KB, e.g. 64MB", maxLine)
		}
	}
	if err := checkFiles(files); err != nil {
		return err
	}
	if schemaFrom != "" {
		if err := checkFiles([]string{schemaFrom}); err != nil {
			return usagef("bad --schema-from: %v", err)
		}
	}
	cfg, err := cf.config()
	if err != nil {
		return err
	}

	prog := newLoadProgress(std.Err, table, quiet)
	rdr, err := filesio.Open(ctx, files, filesio.ReadOptions{
		BatchRows: batchRows, SampleRows: sampleRows, MaxLineBytes: maxLineBytes, SchemaFrom: schemaFrom, Progress: prog.update,
	})
	if err != nil {
		return loadError(&cf, table, err)
	}
	defer rdr.Release()
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return cf.serverError("connect", err)
	}
	defer c.Close()
	res, err := c.Load(ctx, rdr, client.LoadOptions{
		Table: table, Catalog: catalog, Schema: schema, Mode: m, Compression: codec,
	})
	prog.finish()
	if err != nil {
		return loadError(&cf, table, err)
	}
	secs := res.Elapsed.Seconds()
	mb := float64(rdr.TotalBytes()) / 1e6
	fmt.Fprintf(std.Out, "loaded %d rows (%.1f MB) into %s in %.2fs: %.0f rows/s, %.1f MB/s\n",
		res.Rows, mb, table, secs, float64(res.Rows)/secs, mb/secs)
	return nil
}

// checkFiles refuses, before anything is read, files that are missing or
// of an unknown format.
func checkFiles(files []string) error {
	for _, f := range files {
		if _, err := filesio.FormatOf(f); err != nil {
			return usagef("%s: unknown format: name .parquet, .csv, .ndjson/.jsonl or .arrow/.arrows files", f)
		}
		st, err := os.Stat(f)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return usagef("%s: no such file", f)
		case err != nil:
			return usagef("%v", err)
		case st.IsDir():
			return usagef("%s is a directory; name the files in it", f)
		}
	}
	return nil
}

// loadError says what failed and what to do. Nothing was written: a load
// is all or nothing.
func loadError(cf *clientFlags, table string, err error) error {
	what := fmt.Sprintf("load into %s failed, nothing was written", table)
	var se interface{ GRPCStatus() *status.Status }
	var re *filesio.ReadError
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: interrupted", what)
	case errors.Is(err, client.ErrNoRows):
		return fmt.Errorf("%s: the files hold no rows, and no table was created", what)
	case errors.As(err, &re) && strings.Contains(err.Error(), "every file must share one schema"):
		return fmt.Errorf("%s: %w", what, err)
	case errors.As(err, &re) && strings.Contains(err.Error(), "Maximum line size"):
		return fmt.Errorf("%s: %w; allow longer lines with --max-line-size, e.g. 64MB", what, err)
	case errors.As(err, &re):
		return fmt.Errorf("%s: %w; fix the file, or sample more rows to detect the types (--infer-rows N, -1 for all) or give them (--schema-from FILE)", what, err)
	case !errors.As(err, &se):
		return fmt.Errorf("%s: %w", what, err)
	}
	switch st := se.GRPCStatus(); st.Code() {
	case codes.InvalidArgument:
		return fmt.Errorf("%s: %s; the files do not fit the table: compare their columns with the table's, or load into a new table", what, st.Message())
	case codes.NotFound:
		return fmt.Errorf("%s: %s; check --table, --catalog and --schema", what, st.Message())
	}
	return cf.serverError(what, err)
}

// loadProgress shows a load's progress on stderr: a live line when
// stderr is a terminal, else a plain line every few seconds. DuckDB does
// not say how far into a file it is, so it counts rows.
type loadProgress struct {
	w      io.Writer
	table  string
	bar    *progressbar.ProgressBar
	start  time.Time
	last   time.Time
	every  time.Duration
	quiet  bool
	latest filesio.Progress
}

func newLoadProgress(w io.Writer, table string, quiet bool) *loadProgress {
	p := &loadProgress{w: w, table: table, start: time.Now(), quiet: quiet, every: 5 * time.Second}
	if f, ok := w.(*os.File); ok && !quiet && term.IsTerminal(int(f.Fd())) {
		p.every = 150 * time.Millisecond
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("loading "+table),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionShowIts(),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	p.last = p.start
	return p
}

// update is filesio.ReadOptions.Progress.
func (p *loadProgress) update(lp filesio.Progress) {
	p.latest = lp
	if p.quiet {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	file := ""
	if lp.Files > 1 {
		file = fmt.Sprintf(", file %d of %d", lp.FileIndex, lp.Files)
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("loading %s%s", p.table, file))
		p.bar.Set64(lp.Rows)
		return
	}
	secs := now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "quiver load: %s rows%s (%s rows/s)\n", humanCount(lp.Rows), file, humanCount(int64(float64(lp.Rows)/secs)))
}

func (p *loadProgress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Clear()
	}
}

// humanCount prints a count with thousands separators.
func humanCount(n int64) string {
	s := fmt.Sprint(n)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
