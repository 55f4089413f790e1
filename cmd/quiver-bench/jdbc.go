package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/serveproc"
	"github.com/quiverdata/quiver/internal/workload"
)

func init() {
	registerSuite("jdbc", suite{"Flight SQL JDBC (getObject) and raw Arrow batches (typed .get) against MySQL Connector/J, all on quiver", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg jdbcConfig
		fs.StringVar(&cfg.workloads, "workloads", "str20,num20", "workloads to run: str20 (20 VARCHAR columns), num20 (20 BIGINT columns)")
		fs.StringVar(&cfg.sizes, "sizes", "5M,10M", "row counts (e.g. 10K for a smoke run)")
		fs.Int64Var(&cfg.warmupRows, "warmup-rows", 200_000, "rows each contender reads once, untimed, before a workload's timed runs (0: no warm-up)")
		cfg.java.register(fs)
		return func(ctx context.Context, e env) (*report.Report, error) {
			cfg.env = e
			return runJDBC(ctx, cfg)
		}
	}})
}

type jdbcConfig struct {
	workloads, sizes string
	warmupRows       int64
	java             javaSide
	env              env
}

// javaSide is where the Java half of the jdbc and parquet suites is:
// interop/java's classes, and the runtime classpath its build writes
// beside them (`make interop` builds both).
type javaSide struct {
	java, dir, heap string
}

func (j *javaSide) register(fs *flag.FlagSet) {
	fs.StringVar(&j.java, "java", "java", "the java command (17 or later)")
	fs.StringVar(&j.dir, "java-dir", "interop/java/target", "interop/java's Maven build directory, with classes/ and bench-classpath.txt (`make interop` builds it)")
	fs.StringVar(&j.heap, "java-heap", "12g", "the JVM's -Xmx: Connector/J's buffered mode holds the whole result (about 0.8 GB per million 20-column rows)")
}

// check makes sure the Java side can run, before any server starts.
func (j javaSide) check(class string) error {
	if _, err := exec.LookPath(j.java); err != nil {
		return cli.Usagef("%s not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless), or pass --java", j.java)
	}
	for _, p := range []string{filepath.Join(j.dir, "classes", "dev", "quiver", "bench", class+".class"), filepath.Join(j.dir, "bench-classpath.txt")} {
		if _, err := os.Stat(p); err != nil {
			return cli.Usagef("%s not found: run `make interop` once to build interop/java, or pass --java-dir", p)
		}
	}
	return nil
}

// command is `java … dev.quiver.bench.<class> args…`.
func (j javaSide) command(ctx context.Context, class string, args ...string) (*exec.Cmd, error) {
	deps, err := os.ReadFile(filepath.Join(j.dir, "bench-classpath.txt"))
	if err != nil {
		return nil, fmt.Errorf("read the Java classpath: %w", err)
	}
	cp := filepath.Join(j.dir, "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
	jvm := []string{"-Xmx" + j.heap, "-XX:MaxDirectMemorySize=" + j.heap,
		// Arrow's memory module reaches into java.nio on Java 17.
		"--add-opens=java.base/java.nio=ALL-UNNAMED",
		"-cp", cp, "dev.quiver.bench." + class}
	cmd := exec.CommandContext(ctx, j.java, append(jvm, args...)...)
	cmd.Stderr = os.Stderr
	return cmd, nil
}

// startWorkloadServer starts `quiver serve` (Flight and MySQL) on a database
// in dir and generates each workload's table with maxRows rows.
func startWorkloadServer(ctx context.Context, e env, dir string, ws []workload.Workload, maxRows int64, extra ...string) (*serveproc.Proc, error) {
	bin, err := e.quiver()
	if err != nil {
		return nil, err
	}
	srv, err := serveproc.Start(ctx, bin, filepath.Join(dir, "bench.duckdb"), true, extra...)
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr, Allocator: memory.NewGoAllocator()})
	if err != nil {
		srv.Stop()
		return nil, err
	}
	defer c.Close()
	done := map[string]bool{}
	for _, w := range ws {
		if done[w.Table] {
			continue
		}
		done[w.Table] = true
		if _, err := c.Exec(ctx, workload.CreateSQL(w.Table, maxRows)); err != nil {
			srv.Stop()
			return nil, fmt.Errorf("generate %s: %w", w.Table, err)
		}
	}
	return srv, nil
}

// parseJavaCases reads --workloads and --sizes for the jdbc and parquet
// suites, which run the str20 and num20 tables only.
func parseJavaCases(workloads, sizes string) ([]workload.Workload, []int64, error) {
	ws, err := workload.Parse(workloads)
	if err != nil {
		return nil, nil, cli.Usagef("%v", err)
	}
	for _, w := range ws {
		if w.Name == "id" {
			return nil, nil, cli.Usagef("workload id is not one of the Java suites' tables: use str20, num20")
		}
	}
	ns, err := bench.ParseSizes(sizes)
	if err != nil {
		return nil, nil, cli.Usagef("%v", err)
	}
	return ws, ns, nil
}

// jdbcOutput is what dev.quiver.bench.JdbcBench prints.
type jdbcOutput struct {
	Versions map[string]string `json:"versions"`
	Cases    []jdbcCase        `json:"cases"`
}

type jdbcCase struct {
	Workload string               `json:"workload"`
	Rows     int64                `json:"rows"`
	Seconds  map[string][]float64 `json:"seconds"`
}

func runJDBC(ctx context.Context, cfg jdbcConfig) (*report.Report, error) {
	ws, ns, err := parseJavaCases(cfg.workloads, cfg.sizes)
	if err != nil {
		return nil, err
	}
	if cfg.warmupRows < 0 {
		return nil, cli.Usagef("--warmup-rows must be 0 or more")
	}
	if err := cfg.java.check("JdbcBench"); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "quiver-bench-jdbc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := startWorkloadServer(ctx, cfg.env, dir, ws, maxOf(ns))
	if err != nil {
		return nil, err
	}
	defer srv.Stop()

	args := []string{"--flight", srv.FlightAddr, "--mysql", srv.MySQLAddr,
		"--reps", fmt.Sprint(cfg.env.reps), "--warmup-rows", fmt.Sprint(cfg.warmupRows)}
	for _, w := range ws {
		for _, n := range ns {
			args = append(args, "--case", fmt.Sprintf("%s:%d:%s", w.Name, n, w.Query(n)))
		}
	}
	cmd, err := cfg.java.command(ctx, "JdbcBench", args...)
	if err != nil {
		return nil, err
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run JdbcBench: %w", err)
	}
	var out jdbcOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("read JdbcBench's output: %w", err)
	}
	return jdbcReport(out, cfg.env.reps), nil
}

// jdbcAnchors are StarRocks' published speedups over MySQL JDBC: aspect
// 1's Flight JDBC getObject, and aspect 2's pre-fetched raw batches.
var jdbcAnchors = map[string][2]string{
	"str20/5M":  {"1.79×", "1.90×"},
	"str20/10M": {"1.78×", "1.99×"},
	"num20/5M":  {"5.14×", "14.1×"},
	"num20/10M": {"4.18×", "18.2×"},
}

// workloadLabel names a workload the way the Java tables do.
func workloadLabel(workload string) string {
	switch workload {
	case "str20":
		return "VARCHAR (str20)"
	case "num20":
		return "numeric (num20)"
	}
	return workload
}

// jdbcContenders are JdbcBench's contenders and their names in the report.
var jdbcContenders = []struct{ key, name string }{
	{"mysql", "MySQL JDBC (buffered)"},
	{"mysql-stream", "MySQL JDBC (streaming)"},
	{"flight-jdbc", "Flight JDBC getObject"},
	{"raw", "raw batches, end to end"},
	{"raw-prefetched", "raw batches, pre-fetched"},
}

// jdbcReport lays the results out as two tables, the JDBC accessor and the raw batches
// tables.
func jdbcReport(out jdbcOutput, reps int) *report.Report {
	r := &report.Report{Suite: "jdbc", Reps: reps}
	v := out.Versions
	// "mysql-connector-j-9.7.0 (Revision: …)" is 9.7.0.
	cj, _, _ := strings.Cut(strings.TrimPrefix(v["connectorj"], "mysql-connector-j-"), " ")
	acc := &report.Table{
		Title: "JDBC accessor: every column of every row through rs.getObject(i), cast to its Java type",
		Note: fmt.Sprintf("Same server process and rows. The baseline is MySQL Connector/J %s in its default buffered mode (the whole result is read before next() returns), as in StarRocks' published figures; streaming is setFetchSize(Integer.MIN_VALUE). Arrow Flight SQL JDBC %s; Java %s. The StarRocks column is StarRocks' published speedup.",
			cj, v["flight_jdbc"], v["java"]),
		Columns: []string{"workload", "rows", "MySQL JDBC ms", "Flight JDBC ms", "speedup", "StarRocks speedup", "MySQL streaming ms"},
	}
	raw := &report.Table{
		Title:   "Raw Arrow batches: FlightSqlClient, vectors resolved once per batch, typed .get(i)",
		Note:    "Same run. End to end is execute, fetch and conversion; pre-fetched drains the batches into memory first and times the conversion loop alone, as StarRocks' published figures did: its speedup (and theirs) compares that conversion time with MySQL JDBC's whole buffered read. VARCHAR values become Java Strings on every path.",
		Columns: []string{"workload", "rows", "MySQL JDBC ms", "end to end ms", "speedup", "pre-fetched ms", "speedup", "StarRocks speedup"},
	}
	for _, c := range out.Cases {
		cas := fmt.Sprintf("%s/%s", c.Workload, report.FmtRows(c.Rows))
		st := map[string]report.Stat{}
		for _, k := range jdbcContenders {
			if secs, ok := c.Seconds[k.key]; ok {
				st[k.key] = pandasStat(k.name, secs, c.Rows)
				r.Add("jdbc", cas, st[k.key])
			}
		}
		anchor := jdbcAnchors[cas]
		for i := range anchor {
			if anchor[i] == "" {
				anchor[i] = "—"
			}
		}
		base := st["mysql"]
		acc.Rows = append(acc.Rows, []string{workloadLabel(c.Workload), report.FmtRows(c.Rows), statCell(st, "mysql"), statCell(st, "flight-jdbc"),
			speedupCell(st, "flight-jdbc", base), anchor[0], statCell(st, "mysql-stream")})
		raw.Rows = append(raw.Rows, []string{workloadLabel(c.Workload), report.FmtRows(c.Rows), statCell(st, "mysql"), statCell(st, "raw"),
			speedupCell(st, "raw", base), statCell(st, "raw-prefetched"), speedupCell(st, "raw-prefetched", base), anchor[1]})
		for _, b := range []struct {
			t   *report.Table
			key string
		}{{acc, "mysql"}, {acc, "flight-jdbc"}, {raw, "mysql"}, {raw, "raw"}, {raw, "raw-prefetched"}} {
			if s, ok := st[b.key]; ok {
				b.t.Bars = append(b.t.Bars, report.Bar{Group: cas, Series: s.Name, Value: float64(s.Median().Microseconds()) / 1000, Unit: "ms (lower is better)"})
			}
		}
	}
	r.Tables = append(r.Tables, acc, raw)
	return r
}

// statCell is st[key]'s msCell, or a dash when it did not run.
func statCell(st map[string]report.Stat, key string) string {
	s, ok := st[key]
	if !ok {
		return "—"
	}
	return report.FmtMS(s)
}

// speedupCell is base's median over st[key]'s, or a dash.
func speedupCell(st map[string]report.Stat, key string, base report.Stat) string {
	s, ok := st[key]
	if !ok || len(base.Samples) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", report.Ratio(s, base))
}

func maxOf(ns []int64) int64 {
	var m int64
	for _, n := range ns {
		m = max(m, n)
	}
	return m
}
