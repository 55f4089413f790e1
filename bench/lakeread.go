package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/internal/scrape"
	"github.com/quiverdata/quiver/internal/workload"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/mempool"
)

// The lakeread suite: a scan of an Iceberg table served from a file://
// lake against a scan of the same rows held in the server's own database.
// One `quiver serve --lake file://…` process holds both: the bench
// database has the workload's table, and the lake has the same rows,
// written by DuckDB's Parquet writer as `quiver ingest --lake` writes
// them (zstd level 1, Parquet V1; see LakeFiles) in files of about
// 32 MiB, committed as one snapshot. quiver's Go client, in this process,
// runs `SELECT * FROM lake.quiver.num20` and `SELECT * FROM num` in turn
// and drains the batches. Then the pruning
// figure: a copy of num20 with a part column (id % 100), partitioned by
// it, read with WHERE part = 7; the server's /metrics counters say what
// share of the snapshot's bytes the scan read.

// lakeNamespace is the Iceberg namespace the suites write their tables to.
const lakeNamespace = "quiver"

// LakeReadConfig configures the lakeread suite.
type LakeReadConfig struct {
	// Bin is the quiver binary, run as the server.
	Bin       string
	Workloads []workload.Workload // num20, str20
	Rows      int64
	Reps      int
	// Dir is where the bench database and the lake are made (in a
	// subdirectory removed at the end); empty means the system's
	// temporary directory.
	Dir string
	// Files says how the lake's data files are written.
	Files LakeFiles
	// PartBytes is the server's --lake-part-mb in bytes; 0 keeps its
	// default.
	PartBytes int64
	// FetchParallel is the client's Config.FetchParallel; 0 keeps its
	// default, min(endpoints, 4).
	FetchParallel int
	// SkipPruning skips the partitioned table and its pruning figure.
	SkipPruning bool
}

func (c *LakeReadConfig) defaults() {
	if len(c.Workloads) == 0 {
		c.Workloads = []workload.Workload{workload.Workloads["num20"], workload.Workloads["str20"]}
	}
	if c.Rows <= 0 {
		c.Rows = 10_000_000
	}
	c.Files.defaults()
}

// LakeFiles says how a lake suite writes its data files, with DuckDB's
// Parquet writer as quiver's ingest does. The defaults are the files
// quiver ingest writes.
type LakeFiles struct {
	// Bytes is the size DuckDB rotates an unpartitioned table's files
	// at; 0 means 32 MiB. (10M num20 rows make 206 MB of zstd Parquet, so
	// Iceberg's usual 128 MiB or more would make two files, too few to
	// split a scan over three replicas.)
	Bytes int64
	// RowGroups closes a file at this many row groups (of DuckDB's
	// 122,880 rows) if Bytes has not closed it first; 0 means 4. Parquet
	// V2 delta-encodes num20's columns, arithmetic sequences, to 0.2 MB
	// for 10M rows: by bytes alone they would make one file, which one
	// replica serves whole.
	RowGroups int
	// Compression is zstd (level 1, the default), snappy or uncompressed.
	Compression string
	// ParquetVersion is V2 (the default, as quiver ingest writes them:
	// DELTA_BINARY_PACKED integers, DELTA_LENGTH_BYTE_ARRAY strings, in v2
	// data pages) or V1 (integers PLAIN-encoded).
	ParquetVersion string
}

// LakeFileCompressions are the data file compressions the lake suites
// can write.
var LakeFileCompressions = []string{"zstd", "snappy", "uncompressed"}

func (f *LakeFiles) defaults() {
	if f.Bytes <= 0 {
		f.Bytes = 32 << 20
	}
	if f.RowGroups <= 0 {
		f.RowGroups = 4
	}
	if f.Compression == "" {
		f.Compression = "zstd"
	}
	if f.ParquetVersion == "" {
		f.ParquetVersion = segment.DefaultParquetVersion
	}
}

// copyOptions are the options of DuckDB's COPY … (FORMAT parquet, …)
// that write such files, but for their size.
func (f LakeFiles) copyOptions() ([]string, error) {
	var opts []string
	switch f.Compression {
	case "zstd":
		// Level 1, as quiver's ingest writes its lake files.
		opts = []string{"COMPRESSION zstd", "COMPRESSION_LEVEL 1"}
	case "snappy", "uncompressed":
		opts = []string{"COMPRESSION " + f.Compression}
	default:
		return nil, fmt.Errorf("unknown data file compression %q: use %s", f.Compression, strings.Join(LakeFileCompressions, ", "))
	}
	v, err := segment.ParseParquetVersion(f.ParquetVersion)
	if err != nil {
		return nil, err
	}
	return append(opts, "PARQUET_VERSION "+v), nil
}

// String names the files' format: "zstd Parquet V1".
func (f LakeFiles) String() string { return f.Compression + " Parquet " + f.ParquetVersion }

// lakeTableName is the workload's table in the lake: num20 or str20. In
// the bench database its rows are the workload's own table, num or str.
//
// The two names differ on purpose. When this suite was written, a query
// naming a local table that has a lake table's name, unqualified
// (SELECT * FROM num20 beside lake.quiver.num20), deadlocked the server:
// lakesql's Planner.Plan asks the connection for its current catalog
// while holding the catalog's lock, and that query runs the statement
// hook, which takes the same lock.
func lakeTableName(w workload.Workload) string { return w.Name }

// LakeRead runs the lakeread suite.
func LakeRead(ctx context.Context, cfg LakeReadConfig) (*report.Report, error) {
	cfg.defaults()
	if _, err := cfg.Files.copyOptions(); err != nil {
		return nil, err
	}
	for _, w := range cfg.Workloads {
		if w.Name == "id" {
			return nil, fmt.Errorf("workload id is not a lake table: use num20 or str20")
		}
	}
	work, err := os.MkdirTemp(cfg.Dir, "quiver-lakeread-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if work, err = filepath.Abs(work); err != nil {
		return nil, err
	}

	// The bench database holds the workloads' tables; the lake the same
	// rows, and the partitioned copy of num20.
	db := filepath.Join(work, "lakeread.duckdb")
	lakeDir := filepath.Join(work, "lake")
	specs := make([]lakeTableSpec, 0, len(cfg.Workloads)+1)
	ws := cfg.Workloads
	for _, w := range ws {
		specs = append(specs, lakeTableSpec{name: lakeTableName(w), from: "SELECT * FROM " + w.Table})
	}
	if !cfg.SkipPruning {
		if !hasWorkload(ws, "num20") {
			ws = append(ws[:len(ws):len(ws)], workload.Workloads["num20"])
		}
		specs = append(specs, pruneSpec)
	}
	written, err := buildLake(ctx, db, lakeDir, ws, cfg.Rows, specs, cfg.Files)
	if err != nil {
		return nil, err
	}

	args := []string{"serve", "--db", db, "--flight", "127.0.0.1:0", "--mysql", "", "--http", "127.0.0.1:0",
		"--log-level", "warn", "--lake", "file://" + lakeDir}
	if cfg.PartBytes > 0 {
		args = append(args, "--lake-part-mb", strconv.FormatInt(max(cfg.PartBytes>>20, 1), 10))
	}
	srv, err := startNS(ctx, "", "http", cfg.Bin, args...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	flightAddr, httpAddr := srv.announced("flight"), srv.Addr
	c, err := client.Dial(ctx, client.Config{Addr: flightAddr, Allocator: mempool.New(), FetchParallel: cfg.FetchParallel})
	if err != nil {
		return nil, err
	}
	defer c.Close()

	r := &report.Report{Suite: "lakeread", Reps: cfg.Reps}
	if err := lakeReadTable(ctx, cfg, c, srv.cmd.Process.Pid, written, r); err != nil {
		return nil, err
	}
	if !cfg.SkipPruning {
		if err := pruningTable(ctx, cfg, c, httpAddr, written[pruneSpec.name], r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func hasWorkload(ws []workload.Workload, name string) bool {
	for _, w := range ws {
		if w.Name == name {
			return true
		}
	}
	return false
}

// lakeReadTable alternates the lake scan and the local scan of each
// workload and adds their table.
func lakeReadTable(ctx context.Context, cfg LakeReadConfig, c *client.Client, srvPID int, written map[string]lakeWritten, r *report.Report) error {
	t := &report.Table{
		Title: fmt.Sprintf("Lake scan against a local table: %s rows, one quiver serve --lake file://… holding both", report.FmtRows(cfg.Rows)),
		Note: "quiver's Go client (in the bench process) drains SELECT * FROM lake.quiver.num20 and SELECT * FROM num (str20: str), the same rows, alternated; " +
			"cores is the CPU time of the server and the client over the fetch's time; rows/s and MB/s count the Arrow rows and bytes received.",
		Columns: []string{"workload", "rows", "source", "endpoints", "ms", "MB/s", "rows/s", "cores", "vs local"},
	}
	var verdicts []string
	for _, w := range cfg.Workloads {
		name := lakeTableName(w)
		lakeQ, localQ := "SELECT * FROM lake.quiver."+name, "SELECT * FROM "+w.Table
		lakeEPs, _, err := probeEndpoints(ctx, c, lakeQ)
		if err != nil {
			return fmt.Errorf("plan %s: %w", lakeQ, err)
		}
		localEPs, _, err := probeEndpoints(ctx, c, localQ)
		if err != nil {
			return fmt.Errorf("plan %s: %w", localQ, err)
		}
		pids := []int{srvPID}
		var machine [2][]time.Duration // the machine's busy CPU time over each run
		run := func(i int, q string) func() (report.Sample, error) {
			return func() (report.Sample, error) {
				m0 := machineBusy()
				s, err := timedQuery(ctx, c, q, cfg.Rows, pids)
				machine[i] = append(machine[i], machineBusy()-m0)
				return s, err
			}
		}
		stats, err := report.Alternate(cfg.Reps, report.Contender{Name: "lake", Run: run(0, lakeQ)}, report.Contender{Name: "local", Run: run(1, localQ)})
		if err != nil {
			return err
		}
		cas := fmt.Sprintf("%s/%s", w.Name, report.FmtRows(cfg.Rows))
		lk, local := stats[0], stats[1]
		for i, s := range stats {
			r.Add("lakeread", cas, s)
			eps := []int{lakeEPs, localEPs}[i]
			t.Rows = append(t.Rows, []string{w.Name, report.FmtRows(cfg.Rows), s.Name, strconv.Itoa(eps), report.FmtMS(s), report.FmtMBps(s),
				report.FmtRate(s.RowsPerSec()), fmt.Sprintf("%.2f", s.Cores()), report.FmtX(report.Ratio(s, local))})
			t.Bars = append(t.Bars, report.Bar{Group: cas, Series: s.Name, Value: s.RowsPerSec(), Unit: "rows/s"})
		}
		wr := written[name]
		verdicts = append(verdicts, fmt.Sprintf("%s: the lake scan ran at %.2f× the local scan's rows/s (target 0.7×), reading %d data files of %s mean (%s, %s in all) over %d endpoints; %s.",
			w.Name, report.Ratio(lk, local), wr.files, fmtMB(wr.meanBytes()), cfg.Files, fmtMB(wr.bytes), lakeEPs, lakeBoundNote(lk, local, report.Median(machine[0][1:]))))
	}
	t.Footer = strings.Join(verdicts, "\n")
	r.Tables = append(r.Tables, t)
	return nil
}

// lakeBoundNote says what the lake scan's CPU time was and whether the
// CPU bound it, from the machine's busy CPU time over its median run.
func lakeBoundNote(lk, local report.Stat, machineBusy time.Duration) string {
	ncpu := runtime.NumCPU()
	cpuS := func(s report.Stat) float64 { return s.Cores() * s.Median().Seconds() }
	note := fmt.Sprintf("a lake scan cost %.1f CPU-s against the local scan's %.1f (server and client)", cpuS(lk), cpuS(local))
	machine := cores(machineBusy, lk.Median())
	switch {
	case lk.Cores() >= 0.85*float64(ncpu):
		return fmt.Sprintf("bound by the CPU: server and client kept %.2f of %d cores busy; %s", lk.Cores(), ncpu, note)
	case machine >= 0.9*float64(ncpu):
		return fmt.Sprintf("short of CPU: the machine's %d cores were busy (%.2f, other processes included), server and client got %.2f of them; %s", ncpu, machine, lk.Cores(), note)
	}
	return fmt.Sprintf("server and client kept %.2f of %d cores busy (the machine %.2f); %s", lk.Cores(), ncpu, machine, note)
}

// pruneSpec is the partitioned copy of num20 the pruning figure reads.
var pruneSpec = lakeTableSpec{
	name:      "num20_part",
	from:      "SELECT *, id % 100 AS part FROM num",
	partition: []lake.PartitionField{{Column: "part", Transform: lake.Identity}},
}

// pruneValue is the partition the pruning query reads.
const pruneValue = 7

// pruningTable reads one partition of 100 and adds the share of the
// snapshot's bytes the server's scan read.
func pruningTable(ctx context.Context, cfg LakeReadConfig, c *client.Client, httpAddr string, wr lakeWritten, r *report.Report) error {
	q := fmt.Sprintf("SELECT * FROM lake.quiver.%s WHERE part = %d", pruneSpec.name, pruneValue)
	names := []string{"quiver_lake_scans_total", "quiver_lake_scan_files_total", "quiver_lake_scan_bytes_total", "quiver_lake_scan_snapshot_bytes_total"}
	before, err := scrapeMetrics(ctx, httpAddr, "", "", names...)
	if err != nil {
		return err
	}
	want := partRows(cfg.Rows, 100, pruneValue)
	s, err := timedQuery(ctx, c, q, want, nil)
	if err != nil {
		return err
	}
	after, err := scrapeMetrics(ctx, httpAddr, "", "", names...)
	if err != nil {
		return err
	}
	d := func(name string) float64 { return after[name] - before[name] }
	row, err := pruningRow(pruneSpec.name, fmt.Sprintf("part = %d", pruneValue), s.Rows, wr.files, d(names[0]), d(names[1]), d(names[2]), d(names[3]))
	if err != nil {
		return err
	}
	r.Results = append(r.Results, report.Result{Table: "pruning", Case: pruneSpec.name, Contender: "part = 7", Rows: s.Rows, Bytes: int64(d(names[2]))})
	r.Tables = append(r.Tables, &report.Table{
		Title:   fmt.Sprintf("Partition pruning: %s rows of num20 plus part = id %% 100, identity-partitioned (%d data files)", report.FmtRows(cfg.Rows), wr.files),
		Note:    "From the server's /metrics: quiver_lake_scan_bytes_total over quiver_lake_scan_snapshot_bytes_total, counted over the query's planning and its scans.",
		Columns: []string{"table", "predicate", "rows", "files read", "MB read", "snapshot MB", "share read", "target"},
		Rows:    [][]string{row},
	})
	return nil
}

// pruningRow is the pruning table's row from the counters' increments
// over the query: scans planned, files and bytes they read, and the
// bytes of their snapshots.
func pruningRow(table, pred string, rows int64, totalFiles int, scans, files, read, snapshot float64) ([]string, error) {
	if scans <= 0 || snapshot <= 0 {
		return nil, fmt.Errorf("pruning: the server counted no lake scan (scans +%.0f, snapshot bytes +%.0f)", scans, snapshot)
	}
	share := read / snapshot
	return []string{table, pred, report.FmtRows(rows), fmt.Sprintf("%.0f of %d", files/scans, totalFiles),
		fmt.Sprintf("%.1f", read/scans/1e6), fmt.Sprintf("%.1f", snapshot/scans/1e6), fmt.Sprintf("%.2f%%", 100*share), "≤ 2%"}, nil
}

// partRows is how many of ids [0, n) have id % mod == v.
func partRows(n, mod, v int64) int64 {
	if n <= v {
		return 0
	}
	return (n - v + mod - 1) / mod
}

// timedQuery times one fetch of q through c, draining the batches, and
// checks it returned want rows. The sample's CPU is this process's and
// that of the processes pids over the fetch.
func timedQuery(ctx context.Context, c *client.Client, q string, want int64, pids []int) (report.Sample, error) {
	cpu := func() time.Duration {
		d := osfacts.SelfCPU()
		for _, p := range pids {
			d += pidCPU(p)
		}
		return d
	}
	cpu0 := cpu()
	s, err := report.Timed(func() (int64, int64, error) {
		res, err := c.Query(ctx, q)
		if err != nil {
			return 0, 0, err
		}
		defer res.Release()
		return drainReader(res)
	})
	if err != nil {
		return report.Sample{}, fmt.Errorf("%s: %w", q, err)
	}
	s.CPU = cpu() - cpu0
	if s.Rows != want {
		return report.Sample{}, fmt.Errorf("%s: got %d rows, want %d", q, s.Rows, want)
	}
	return s, nil
}

// probeEndpoints plans q without fetching it and returns its endpoints
// and the locations of the first.
func probeEndpoints(ctx context.Context, c *client.Client, q string) (int, []string, error) {
	info, err := c.SQL().Execute(c.Context(ctx), q)
	if err != nil {
		return 0, nil, err
	}
	var locs []string
	if eps := info.GetEndpoint(); len(eps) > 0 {
		for _, l := range eps[0].GetLocation() {
			locs = append(locs, l.GetUri())
		}
	}
	return len(info.GetEndpoint()), locs, nil
}

// scrapeMetrics reads the named unlabelled metrics from a quiver server's
// /metrics at addr, logged in as user (a server with users asks for a
// login there); a metric it does not list is 0.
func scrapeMetrics(ctx context.Context, addr, user, password string, names ...string) (map[string]float64, error) {
	f, err := scrape.PageAs(ctx, "http://"+addr+"/metrics", user, password)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(names))
	for _, n := range names {
		out[n], _ = f.Value(n, nil)
	}
	return out, nil
}

// announced is the address p announced for what ("quiver: <what>
// listening on ADDR") before the line it waited for, or "".
func (p *nsProc) announced(what string) string {
	prefix := "quiver: " + what + " listening on "
	for _, line := range strings.Split(p.log.String(), "\n") {
		if addr, ok := strings.CutPrefix(line, prefix); ok {
			return addr
		}
	}
	return ""
}

// Writing the suites' lake tables.

// lakeTableSpec is one lake table a suite writes: its name in namespace
// quiver, the SELECT of its rows from the bench database, and its
// partition spec.
type lakeTableSpec struct {
	name      string
	from      string
	partition []lake.PartitionField
}

// lakeWritten is what one table's commit holds.
type lakeWritten struct {
	files int
	bytes int64
	rows  int64
}

func (w lakeWritten) meanBytes() int64 {
	if w.files == 0 {
		return 0
	}
	return w.bytes / int64(w.files)
}

// buildLake generates the workloads' tables (num and str) in a new
// database at db, then writes each spec's rows to a new file:// lake
// at lakeDir (catalog: sqlite in lakeDir/catalog.db), each table in one
// commit. Nothing is timed.
func buildLake(ctx context.Context, db, lakeDir string, ws []workload.Workload, rows int64, specs []lakeTableSpec, fo LakeFiles) (map[string]lakeWritten, error) {
	d, err := engine.Open(ctx, engine.Options{Path: db, ExternalAccess: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", db, err)
	}
	defer d.Close()
	conn, err := d.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	for _, t := range tablesOf(ws) {
		if _, err := conn.Exec(ctx, workload.CreateSQL(t, rows)); err != nil {
			return nil, fmt.Errorf("generate %s: %w", t, err)
		}
	}
	if err := os.MkdirAll(lakeDir, 0o755); err != nil {
		return nil, err
	}
	lk, err := lake.Open(ctx, lake.Config{Warehouse: "file://" + lakeDir})
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	out := map[string]lakeWritten{}
	for _, s := range specs {
		w, err := writeLakeTable(ctx, conn, lk, filepath.Join(filepath.Dir(db), "parquet-"+s.name), s, fo)
		if err != nil {
			return nil, fmt.Errorf("write lake table %s: %w", s.name, err)
		}
		out[s.name] = w
	}
	return out, nil
}

// writeLakeTable writes spec's rows with DuckDB's Parquet writer (Iceberg
// field ids on every column) into tmp, uploads the files into the lake
// table and commits them as one snapshot. An unpartitioned table's files
// rotate at fo.Bytes; a partitioned one has a file per partition.
func writeLakeTable(ctx context.Context, conn *engine.Conn, lk *lake.Lake, tmp string, spec lakeTableSpec, fo LakeFiles) (lakeWritten, error) {
	rows, err := conn.Query(ctx, spec.from+" LIMIT 0")
	if err != nil {
		return lakeWritten{}, fmt.Errorf("read the schema: %w", err)
	}
	schema := rows.Schema()
	rows.Close()
	tb, err := lk.Table(ctx, lakeNamespace, spec.name, schema, spec.partition)
	if err != nil {
		return lakeWritten{}, err
	}
	ids, err := tb.PrepareParquet(ctx, schema)
	if err != nil {
		return lakeWritten{}, err
	}
	opts, err := fo.copyOptions()
	if err != nil {
		return lakeWritten{}, err
	}
	opts = append([]string{"FORMAT parquet"}, opts...)
	opts = append(opts, "FIELD_IDS "+lake.DuckDBFieldIDs(ids))
	sel := spec.from
	if len(spec.partition) > 0 {
		// As quiver's ingest does: a key column per partition field
		// splits the rows into a file per partition, and is not written.
		var keys, names []string
		for i, pf := range spec.partition {
			expr, ok := lake.DuckDBPartitionKey(pf, engine.QuoteIdent(pf.Column))
			if !ok {
				return lakeWritten{}, fmt.Errorf("no DuckDB key for partition transform %s", pf.Transform)
			}
			name := engine.QuoteIdent(fmt.Sprintf("__bench_part_%d", i))
			keys, names = append(keys, expr+" AS "+name), append(names, name)
		}
		sel = "SELECT *, " + strings.Join(keys, ", ") + " FROM (" + spec.from + ")"
		opts = append(opts, "PARTITION_BY ("+strings.Join(names, ", ")+")")
	} else {
		opts = append(opts, fmt.Sprintf("FILE_SIZE_BYTES %d", fo.Bytes), fmt.Sprintf("ROW_GROUPS_PER_FILE %d", fo.RowGroups))
	}
	if err := os.RemoveAll(tmp); err != nil {
		return lakeWritten{}, err
	}
	defer os.RemoveAll(tmp)
	n, err := conn.Exec(ctx, "COPY ("+sel+") TO "+engine.QuoteString(tmp)+" ("+strings.Join(opts, ", ")+")")
	if err != nil {
		return lakeWritten{}, fmt.Errorf("write Parquet: %w", err)
	}
	var paths []string
	var size int64
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		paths, size = append(paths, p), size+fi.Size()
		return nil
	})
	if err != nil {
		return lakeWritten{}, err
	}
	sort.Strings(paths)
	files, err := tb.UploadParquet(ctx, uuid.New(), paths)
	if err != nil {
		return lakeWritten{}, err
	}
	if files.Rows() != n {
		_ = files.Discard(ctx)
		return lakeWritten{}, fmt.Errorf("the Parquet files hold %d rows, COPY wrote %d", files.Rows(), n)
	}
	_, err = tb.CommitFiles(ctx, files, lake.Offsets{Group: "bench", Topic: spec.name,
		Ranges: map[int32]lake.Range{0: {Start: 0, End: n, First: true}}})
	if err != nil {
		return lakeWritten{}, err
	}
	return lakeWritten{files: len(paths), bytes: size, rows: n}, nil
}

func fmtMB(n int64) string {
	if n < 100e3 {
		return fmt.Sprintf("%.0f kB", float64(n)/1e3)
	}
	if n < 10e6 {
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0f MB", float64(n)/1e6)
}
