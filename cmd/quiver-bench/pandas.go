package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/workload"
)

func init() {
	registerSuite("pandas", suite{"pd.read_sql over ADBC (Flight SQL) against PyMySQL (MySQL protocol), both on quiver", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg pandasConfig
		fs.StringVar(&cfg.workloads, "workloads", "id,num20,str20", "workloads to run")
		fs.StringVar(&cfg.sizes, "sizes", "1M,5M,10M", "row counts (e.g. 100K,1M for a quick run)")
		fs.StringVar(&cfg.python, "python", ".venv/bin/python", "Python with pandas, ADBC and PyMySQL (`make interop` installs .venv)")
		fs.StringVar(&cfg.script, "script", "interop/python/bench_pandas.py", "the Python side of the benchmark")
		fs.IntVar(&cfg.warmup, "warmup", 1, "untimed runs of each contender before the timed ones")
		return func(ctx context.Context, e env) (*report.Report, error) {
			cfg.env = e
			return runPandas(ctx, cfg)
		}
	}})
}

type pandasConfig struct {
	workloads, sizes, python, script string
	warmup                           int
	env                              env
}

// pandasAnchors are StarRocks' published speedups of ADBC over PyMySQL.
var pandasAnchors = map[string]string{
	"id/1M": "19.3×", "id/5M": "73.0×", "id/10M": "63.4×",
	"num20/1M": "52.7×", "num20/5M": "92.5×", "num20/10M": "95.0×",
	"str20/1M": "20.1×", "str20/5M": "22.3×", "str20/10M": "23.0×",
	"id/100M": "97.2×", "num20/100M": "PyMySQL OOM",
}

// pandasOutput is what bench_pandas.py prints.
type pandasOutput struct {
	Versions map[string]string `json:"versions"`
	Cases    []struct {
		Workload string               `json:"workload"`
		Rows     int64                `json:"rows"`
		Seconds  map[string][]float64 `json:"seconds"`
		// Skipped names the contenders not run because their frame would
		// not fit in memory, with what it would need.
		Skipped map[string]string `json:"skipped"`
	} `json:"cases"`
}

func runPandas(ctx context.Context, cfg pandasConfig) (*report.Report, error) {
	ws, err := workload.Parse(cfg.workloads)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	ns, err := bench.ParseSizes(cfg.sizes)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	if cfg.warmup < 0 {
		return nil, cli.Usagef("--warmup must be 0 or more")
	}
	for _, f := range []string{cfg.python, cfg.script} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("%s not found: run `make interop` once to install .venv, or pass --python and --script", f)
		}
	}
	dir, err := os.MkdirTemp("", "quiver-bench-pandas-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var maxRows int64
	for _, n := range ns {
		maxRows = max(maxRows, n)
	}
	srv, err := startWorkloadServer(ctx, cfg.env, dir, ws, maxRows)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()

	args := []string{cfg.script, "--flight", srv.FlightAddr, "--mysql", srv.MySQLAddr,
		"--reps", fmt.Sprint(cfg.env.reps), "--warmup", fmt.Sprint(cfg.warmup)}
	for _, w := range ws {
		for _, n := range ns {
			args = append(args, "--case", fmt.Sprintf("%s:%d:%s", w.Name, n, w.Query(n)))
		}
	}
	cmd := exec.CommandContext(ctx, cfg.python, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run %s: %w", cfg.script, err)
	}
	var out pandasOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("read %s's output: %w", cfg.script, err)
	}
	return pandasReport(out, cfg.env.reps), nil
}

// pandasReport lays the results out, one row per workload and size.
func pandasReport(out pandasOutput, reps int) *report.Report {
	r := &report.Report{Suite: "pandas", Reps: reps}
	t := &report.Table{
		Title: "Into pandas: pd.read_sql(sql, conn), fetch and DataFrame conversion",
		Note: fmt.Sprintf("Same server process and rows. ADBC %s (Flight SQL) against PyMySQL %s (MySQL protocol); pandas %s, pyarrow %s, Python %s. The StarRocks column is StarRocks' published speedup.",
			out.Versions["adbc_driver_flightsql"], out.Versions["pymysql"], out.Versions["pandas"], out.Versions["pyarrow"], out.Versions["python"]),
		Columns: []string{"workload", "rows", "PyMySQL ms", "ADBC ms", "speedup", "StarRocks speedup"},
	}
	var foot []string
	for _, c := range out.Cases {
		cas := fmt.Sprintf("%s/%s", c.Workload, report.FmtRows(c.Rows))
		anchor := pandasAnchors[cas]
		if anchor == "" {
			anchor = "—"
		}
		cells := map[string]string{}
		stats := map[string]report.Stat{}
		for _, k := range []struct{ key, name string }{{"pymysql", "PyMySQL"}, {"adbc", "ADBC"}} {
			if why, ok := c.Skipped[k.key]; ok {
				cells[k.key] = "does not fit"
				foot = append(foot, fmt.Sprintf("%s %s: not run, the DataFrame %s.", cas, k.name, why))
				continue
			}
			st := pandasStat(k.name, c.Seconds[k.key], c.Rows)
			stats[k.key] = st
			cells[k.key] = report.FmtMS(st)
			r.Add("pandas", cas, st)
			t.Bars = append(t.Bars, report.Bar{Group: cas, Series: k.name, Value: float64(st.Median().Microseconds()) / 1000, Unit: "ms (lower is better)"})
		}
		speedup := "—"
		if len(stats) == 2 {
			speedup = fmt.Sprintf("%.1f×", report.Ratio(stats["adbc"], stats["pymysql"]))
		}
		t.Rows = append(t.Rows, []string{c.Workload, report.FmtRows(c.Rows), cells["pymysql"], cells["adbc"], speedup, anchor})
	}
	t.Footer = strings.Join(foot, "\n")
	r.Tables = append(r.Tables, t)
	return r
}

func pandasStat(name string, secs []float64, rows int64) report.Stat {
	s := report.Stat{Name: name}
	for _, v := range secs {
		s.Samples = append(s.Samples, report.Sample{Dur: time.Duration(v * float64(time.Second)), Rows: rows})
	}
	return s
}
