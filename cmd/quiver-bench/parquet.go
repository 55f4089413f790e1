package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/workload"
)

func init() {
	registerSuite("parquet", suite{"a result to a Parquet file, MySQL JDBC → parquet-hadoop against Flight JDBC, ADBC + PyArrow, quiver query -o and the server's COPY … TO", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg parquetConfig
		fs.StringVar(&cfg.workloads, "workloads", "str20,num20", "workloads to run: str20 (20 VARCHAR columns), num20 (20 BIGINT columns)")
		fs.StringVar(&cfg.sizes, "sizes", "5M,10M", "row counts (e.g. 10K for a smoke run)")
		fs.Int64Var(&cfg.warmupRows, "warmup-rows", 200_000, "rows each writer writes once per codec, untimed, before a workload's timed runs (0: no warm-up)")
		fs.StringVar(&cfg.python, "python", ".venv/bin/python", "Python with ADBC and PyArrow (`make interop` installs .venv)")
		fs.StringVar(&cfg.script, "script", "interop/python/bench_parquet.py", "the Python side of the benchmark")
		cfg.java.register(fs)
		return func(ctx context.Context, e env) (*report.Report, error) {
			cfg.env = e
			return runParquet(ctx, cfg)
		}
	}})
}

type parquetConfig struct {
	workloads, sizes, python, script string
	warmupRows                       int64
	java                             javaSide
	env                              env
}

// parquetCodecs are the two of StarRocks' published tables: DuckDB's, parquet-hadoop's and the
// bench scripts' names alike.
var parquetCodecs = []string{"uncompressed", "snappy"}

// parquetContenders are the writers, the baseline first.
var parquetContenders = []struct{ key, name string }{
	{"mysql", "MySQL JDBC → parquet-hadoop"},
	{"flight-jdbc", "Flight JDBC → parquet-hadoop"},
	{"pyarrow", "ADBC + PyArrow"},
	{"query", "quiver query -o"},
	{"export", "server COPY … TO"},
}

// parquetKey names one figure.
type parquetKey struct {
	contender, workload string
	rows                int64
	codec               string
}

// parquetOutput is what a run measured: each figure's seconds and the
// size of its last file.
type parquetOutput struct {
	workloads []string
	sizes     []int64
	seconds   map[parquetKey][]float64
	bytes     map[parquetKey]int64
	versions  map[string]string
}

// parquetWriteFunc writes sql's result to path with codec and returns how
// long it took.
type parquetWriteFunc func(ctx context.Context, codec, path, sql string) (time.Duration, error)

func runParquet(ctx context.Context, cfg parquetConfig) (*report.Report, error) {
	ws, ns, err := parseJavaCases(cfg.workloads, cfg.sizes)
	if err != nil {
		return nil, err
	}
	if cfg.warmupRows < 0 {
		return nil, cli.Usagef("--warmup-rows must be 0 or more")
	}
	if err := cfg.java.check("ParquetBench"); err != nil {
		return nil, err
	}
	for _, f := range []string{cfg.python, cfg.script} {
		if _, err := os.Stat(f); err != nil {
			return nil, cli.Usagef("%s not found: run `make interop` once to install .venv, or pass --python and --script", f)
		}
	}
	bin, err := cfg.env.quiver()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "quiver-bench-parquet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	outDir, exportRoot := filepath.Join(dir, "out"), filepath.Join(dir, "export")
	if err := os.Mkdir(outDir, 0o700); err != nil {
		return nil, err
	}
	srv, err := startWorkloadServer(ctx, cfg.env, dir, ws, maxOf(ns), "--export-root", exportRoot)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()

	javaCmd, err := cfg.java.command(ctx, "ParquetBench", "--flight", srv.FlightAddr, "--mysql", srv.MySQLAddr)
	if err != nil {
		return nil, err
	}
	javaProc, javaVersions, err := startLineProc("ParquetBench", javaCmd)
	if err != nil {
		return nil, err
	}
	defer javaProc.close()
	pyCmd := exec.CommandContext(ctx, cfg.python, cfg.script, "--flight", srv.FlightAddr)
	pyCmd.Stderr = os.Stderr
	pyProc, pyVersions, err := startLineProc(filepath.Base(cfg.script), pyCmd)
	if err != nil {
		return nil, err
	}
	defer pyProc.close()
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr, Allocator: memory.NewGoAllocator()})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	check, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("start DuckDB to read the files back: %w", err)
	}
	defer check.Close()

	writers := map[string]parquetWriteFunc{
		"mysql":       javaProc.writer("mysql"),
		"flight-jdbc": javaProc.writer("flight-jdbc"),
		"pyarrow":     pyProc.writer("pyarrow"),
		"query": func(ctx context.Context, codec, path, query string) (time.Duration, error) {
			cmd := exec.CommandContext(ctx, bin, "query", "--server", srv.FlightAddr, "--user", "", "--password", "",
				"--quiet", "--parquet-compression", codec, "-o", path, query)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return 0, fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
			}
			return time.Since(start), nil
		},
		"export": func(ctx context.Context, codec, path, query string) (time.Duration, error) {
			start := time.Now()
			_, err := c.Exec(ctx, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, COMPRESSION %s)", query, engine.QuoteString(path), codec))
			return time.Since(start), err
		},
	}
	// one writes n rows of w with codec through contender, and checks the
	// file: its rows and its codec.
	one := func(contender string, w workload.Workload, n int64, codec string) (time.Duration, int64, error) {
		base := outDir
		if contender == "export" {
			base = exportRoot
		}
		path := filepath.Join(base, fmt.Sprintf("%s-%s-%s.parquet", contender, w.Name, codec))
		d, err := writers[contender](ctx, codec, path, w.Query(n))
		if err != nil {
			return 0, 0, fmt.Errorf("%s, %s %d rows, %s: %w", contender, w.Name, n, codec, err)
		}
		size, err := checkParquet(ctx, check, path, n, codec)
		if err != nil {
			return 0, 0, fmt.Errorf("%s, %s %d rows, %s: %w", contender, w.Name, n, codec, err)
		}
		return d, size, os.Remove(path)
	}

	out := parquetOutput{seconds: map[parquetKey][]float64{}, bytes: map[parquetKey]int64{}, sizes: ns,
		versions: map[string]string{}}
	for k, v := range javaVersions {
		out.versions[k] = v
	}
	for k, v := range pyVersions {
		out.versions[k] = v
	}
	for _, w := range ws {
		out.workloads = append(out.workloads, w.Name)
		if cfg.warmupRows > 0 {
			fmt.Fprintf(os.Stderr, "bench parquet: %s warm-up, %d rows\n", w.Name, min(cfg.warmupRows, ns[0]))
			for _, codec := range parquetCodecs {
				for _, ct := range parquetContenders {
					if _, _, err := one(ct.key, w, min(cfg.warmupRows, ns[0]), codec); err != nil {
						return nil, err
					}
				}
			}
		}
		for _, n := range ns {
			fmt.Fprintf(os.Stderr, "bench parquet: %s %d rows\n", w.Name, n)
			for range cfg.env.reps {
				for _, codec := range parquetCodecs {
					for _, ct := range parquetContenders {
						d, size, err := one(ct.key, w, n, codec)
						if err != nil {
							return nil, err
						}
						k := parquetKey{ct.key, w.Name, n, codec}
						out.seconds[k] = append(out.seconds[k], d.Seconds())
						out.bytes[k] = size
					}
				}
			}
		}
	}
	return parquetReport(out, cfg.env.reps), nil
}

// checkParquet reads the file at path back with DuckDB: it must hold rows
// rows, every column chunk compressed with codec. It returns the file's
// size.
func checkParquet(ctx context.Context, db *sql.DB, path string, rows int64, codec string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("no file written: %w", err)
	}
	var got int64
	var codecs string
	q := "SELECT (SELECT count(*) FROM read_parquet($1)), (SELECT string_agg(DISTINCT lower(compression), ',') FROM parquet_metadata($1))"
	if err := db.QueryRowContext(ctx, q, path).Scan(&got, &codecs); err != nil {
		return 0, fmt.Errorf("read the file back: %w", err)
	}
	if got != rows {
		return 0, fmt.Errorf("the file holds %d rows, want %d", got, rows)
	}
	if codecs != codec {
		return 0, fmt.Errorf("the file is compressed with %s, want %s", codecs, codec)
	}
	return st.Size(), nil
}

// lineProc is a writer that stays up between runs (ParquetBench,
// bench_parquet.py): one line on its stdin per run,
// CONTENDER<TAB>CODEC<TAB>PATH<TAB>SQL, answered by one JSON line on its
// stdout. Its first line gives its versions.
type lineProc struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
}

func startLineProc(name string, cmd *exec.Cmd) (*lineProc, map[string]string, error) {
	p := &lineProc{name: name, cmd: cmd}
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	p.out = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	var hello struct {
		Versions map[string]string `json:"versions"`
	}
	if err := p.answer(&hello); err != nil {
		p.close()
		return nil, nil, err
	}
	return p, hello.Versions, nil
}

func (p *lineProc) answer(v any) error {
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("%s exited (its messages are above): %w", p.name, err)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("read %s's answer %q: %w", p.name, line, err)
	}
	return nil
}

// writer is a parquetWriteFunc that runs contender in the process; the
// time is the one it measured.
func (p *lineProc) writer(contender string) parquetWriteFunc {
	return func(ctx context.Context, codec, path, query string) (time.Duration, error) {
		if strings.ContainsAny(path+query, "\t\n") {
			return 0, errors.New("a tab or a newline in the path or the SQL")
		}
		if _, err := fmt.Fprintf(p.in, "%s\t%s\t%s\t%s\n", contender, codec, path, query); err != nil {
			return 0, fmt.Errorf("send to %s: %w", p.name, err)
		}
		var a struct {
			Seconds float64 `json:"seconds"`
			Error   string  `json:"error"`
		}
		if err := p.answer(&a); err != nil {
			return 0, err
		}
		if a.Error != "" {
			return 0, errors.New(a.Error)
		}
		return time.Duration(a.Seconds * float64(time.Second)), nil
	}
}

// close ends the process: its stdin closes, and it exits.
func (p *lineProc) close() {
	p.in.Close()
	p.cmd.Wait()
}

// parquetAnchors are StarRocks' published speedups over MySQL JDBC → Parquet
// (StarRocks), by contender/workload/rows/codec.
var parquetAnchors = map[string]string{
	"flight-jdbc/str20/5M/uncompressed": "1.20×", "flight-jdbc/str20/5M/snappy": "1.15×",
	"flight-jdbc/num20/5M/uncompressed": "1.72×", "flight-jdbc/num20/5M/snappy": "1.77×",
	"flight-jdbc/str20/10M/uncompressed": "1.21×", "flight-jdbc/str20/10M/snappy": "1.14×",
	"flight-jdbc/num20/10M/uncompressed": "1.70×", "flight-jdbc/num20/10M/snappy": "1.63×",
	"pyarrow/str20/5M/uncompressed": "5.20×", "pyarrow/str20/5M/snappy": "3.89×",
	"pyarrow/num20/5M/uncompressed": "6.07×", "pyarrow/num20/5M/snappy": "6.57×",
}

// parquetReport lays the results out as StarRocks' published Parquet tables: a row
// per writer and size, a time and a speedup per workload and codec.
func parquetReport(out parquetOutput, reps int) *report.Report {
	r := &report.Report{Suite: "parquet", Reps: reps}
	v := out.versions
	cj, _, _ := strings.Cut(strings.TrimPrefix(v["connectorj"], "mysql-connector-j-"), " ")
	t := &report.Table{
		Title: "To Parquet: the whole result into one file, uncompressed and Snappy",
		Note: fmt.Sprintf("Same server process and rows; every file is read back with DuckDB for its row count and codec. "+
			"The baseline is MySQL Connector/J %s (buffered, as in StarRocks' figures) → parquet-hadoop %s through a WriteSupport over the JDBC rows; "+
			"Flight JDBC %s uses the same WriteSupport (StarRocks' Java paths went through arrow-jdbc batches of 65,536 rows instead). "+
			"ADBC %s + PyArrow %s writes batch by batch with pq.ParquetWriter. quiver query -o runs as a subprocess (its start is timed); "+
			"the server's export is COPY (…) TO (FORMAT parquet) over Flight, under --export-root. In parentheses: StarRocks' published speedup.",
			cj, v["parquet_hadoop"], v["flight_jdbc"], v["adbc_driver_flightsql"], v["pyarrow"]),
		Columns: []string{"path", "rows"},
	}
	sizes := &report.Table{
		Title:   "Parquet file sizes (MB) of the runs above",
		Columns: []string{"path", "rows"},
	}
	for _, w := range out.workloads {
		for _, codec := range parquetCodecs {
			label := strings.Fields(workloadLabel(w))[0]
			t.Columns = append(t.Columns, fmt.Sprintf("%s %s ms", label, codec), "vs MySQL")
			sizes.Columns = append(sizes.Columns, fmt.Sprintf("%s %s", label, codec))
		}
	}
	for _, n := range out.sizes {
		for _, ct := range parquetContenders {
			row := []string{ct.name, report.FmtRows(n)}
			srow := []string{ct.name, report.FmtRows(n)}
			ran := false
			for _, w := range out.workloads {
				for _, codec := range parquetCodecs {
					k := parquetKey{ct.key, w, n, codec}
					secs, ok := out.seconds[k]
					if !ok {
						row = append(row, "—", "—")
						srow = append(srow, "—")
						continue
					}
					ran = true
					cas := fmt.Sprintf("%s/%s/%s", w, report.FmtRows(n), codec)
					s := pandasStat(ct.name, secs, n)
					s.Samples[0].Bytes = out.bytes[k]
					r.Add("parquet", cas, s)
					speedup := "—"
					if base, ok := out.seconds[parquetKey{"mysql", w, n, codec}]; ok {
						speedup = fmt.Sprintf("%.2f×", report.Ratio(s, pandasStat("", base, n)))
					}
					if a := parquetAnchors[ct.key+"/"+cas]; a != "" {
						speedup += " (" + a + ")"
					}
					row = append(row, report.FmtMS(s), speedup)
					srow = append(srow, fmt.Sprintf("%.1f", float64(out.bytes[k])/1e6))
					t.Bars = append(t.Bars, report.Bar{Group: cas, Series: ct.name, Value: float64(s.Median().Microseconds()) / 1000, Unit: "ms (lower is better)"})
				}
			}
			if ran {
				t.Rows = append(t.Rows, row)
				sizes.Rows = append(sizes.Rows, srow)
			}
		}
	}
	r.Tables = append(r.Tables, t, sizes)
	return r
}
