package main

import (
	"context"
	"flag"
	"slices"
	"strings"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/workload"
)

func init() {
	registerSuite("lakeread", suite{"a lake table scan served from a file:// lake, against a scan of the same rows in the database; and partition pruning", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg bench.LakeReadConfig
		lf := registerLakeFileFlags(fs, &cfg.Dir, &cfg.FetchParallel, &cfg.Files)
		workloads := fs.String("workloads", "num20,str20", "workloads to scan: num20, str20")
		fs.BoolVar(&cfg.SkipPruning, "skip-pruning", false, "skip the partitioned table and its pruning figure")
		return func(ctx context.Context, e env) (*report.Report, error) {
			ws, err := workload.Parse(*workloads)
			if err != nil {
				return nil, cli.Usagef("%v", err)
			}
			for _, w := range ws {
				if w.Name == "id" {
					return nil, cli.Usagef("--workloads: id is not a lake table; use num20 or str20")
				}
			}
			if err := lf.check(); err != nil {
				return nil, err
			}
			bin, err := e.quiver()
			if err != nil {
				return nil, err
			}
			cfg.Bin, cfg.Workloads, cfg.Reps = bin, ws, e.reps
			cfg.Rows, cfg.PartBytes = lf.rowCount, lf.partMB<<20
			return bench.LakeRead(ctx, cfg)
		}
	}})
}

// lakeFileFlags are the flags the lake read suites share: the rows, how
// the lake's data files are written and split, and the client's fetch
// parallelism.
type lakeFileFlags struct {
	rows          string
	rowCount      int64
	fileMB        int64
	files         *bench.LakeFiles
	partMB        int64
	fetchParallel *int
}

// registerLakeFileFlags declares the shared flags; dir, fetchParallel and
// files receive --dir, --fetch-parallel and the data files' flags.
func registerLakeFileFlags(fs *flag.FlagSet, dir *string, fetchParallel *int, files *bench.LakeFiles) *lakeFileFlags {
	f := &lakeFileFlags{fetchParallel: fetchParallel, files: files}
	fs.StringVar(&f.rows, "rows", "10M", "rows of each table")
	fs.StringVar(dir, "dir", "", "directory for the bench database and the lake (a subdirectory, removed at the end; default: the system's temporary directory)")
	fs.Int64Var(&f.fileMB, "file-mb", 32, "size DuckDB rotates each data file at, in MiB (10M num20 rows make 206 MB of zstd Parquet V1, 0.2 MB of V2)")
	fs.IntVar(&files.RowGroups, "file-row-groups", 4, "row groups (of 122,880 rows) DuckDB rotates each data file at, if --file-mb has not")
	fs.StringVar(&files.Compression, "file-compression", "zstd", "compression of the lake's data files: "+strings.Join(bench.LakeFileCompressions, ", ")+" (zstd is level 1, as quiver ingest writes them)")
	fs.StringVar(&files.ParquetVersion, "parquet-version", segment.DefaultParquetVersion, "Parquet version of the data files: V2 (as quiver ingest writes them: delta-encoded integers and strings) or V1 (PLAIN integers)")
	fs.Int64Var(&f.partMB, "part-mb", 0, "the servers' --lake-part-mb: data per result endpoint, in MiB (0: serve's default)")
	fs.IntVar(fetchParallel, "fetch-parallel", 0, "endpoints the client fetches at once (0: the client's default, min(endpoints, 4))")
	return f
}

// check validates the shared flags and parses --rows.
func (f *lakeFileFlags) check() error {
	ns, err := bench.ParseSizes(f.rows)
	if err != nil || len(ns) != 1 {
		return cli.Usagef("bad --rows %q: one size, e.g. 10M", f.rows)
	}
	f.rowCount = ns[0]
	if f.fileMB < 1 || f.files.RowGroups < 1 {
		return cli.Usagef("--file-mb and --file-row-groups must be at least 1")
	}
	if f.partMB < 0 || *f.fetchParallel < 0 {
		return cli.Usagef("--part-mb and --fetch-parallel must not be negative")
	}
	if !slices.Contains(bench.LakeFileCompressions, f.files.Compression) {
		return cli.Usagef("unknown --file-compression %q: use %s", f.files.Compression, strings.Join(bench.LakeFileCompressions, ", "))
	}
	v, err := segment.ParseParquetVersion(f.files.ParquetVersion)
	if err != nil {
		return cli.Usagef("unknown --parquet-version %q: use %s", strings.ToUpper(f.files.ParquetVersion), strings.Join(segment.ParquetVersions, " or "))
	}
	f.files.ParquetVersion = v
	f.files.Bytes = f.fileMB << 20
	return nil
}
