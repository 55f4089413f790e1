package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/serveproc"
	"github.com/quiverdata/quiver/internal/workload"
)

func init() {
	registerSuite("console", benchSuite{"a num20 result in the web console (headless Chromium) against quiver query --format arrow, alternated", func(fs *flag.FlagSet) func(context.Context, int) (*report.Report, error) {
		var cfg consoleBenchConfig
		rows := fs.String("rows", "1M", "rows of num20 the result holds")
		fs.StringVar(&cfg.chromium, "chromium", "", "Chromium or Chrome binary (default: $QUIVER_CHROMIUM, else /usr/bin/chromium or chromium on the PATH)")
		return func(ctx context.Context, reps int) (*report.Report, error) {
			ns, err := bench.ParseSizes(*rows)
			if err != nil || len(ns) != 1 {
				return nil, usagef("bad --rows %q: one size, e.g. 1M", *rows)
			}
			if cfg.chromium == "" {
				if cfg.chromium, err = chromiumPath(); err != nil {
					return nil, err
				}
			}
			if cfg.bin, err = os.Executable(); err != nil {
				return nil, fmt.Errorf("find the quiver binary: %w", err)
			}
			cfg.rows, cfg.reps = ns[0], reps
			return benchConsole(ctx, cfg)
		}
	}})
}

// consoleBenchConfig configures the console suite.
type consoleBenchConfig struct {
	bin      string // quiver, run as the server and as quiver query
	chromium string
	rows     int64
	reps     int
}

// benchConsole times one num20 result two ways against the same server
// process, alternated: A is `quiver query --format arrow` (a process of
// this binary, its output to /dev/null), B is the web console in headless
// Chromium, from the click on Run until the page says it is done and has
// counted every row. The page streams the result through apache-arrow's
// RecordBatchReader and keeps only the first window of rows.
func benchConsole(ctx context.Context, cfg consoleBenchConfig) (*report.Report, error) {
	dir, err := os.MkdirTemp("", "quiver-bench-console-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	srv, err := serveproc.Start(ctx, cfg.bin, filepath.Join(dir, "bench.duckdb"), false, "--http", httpAddr)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	base := "http://" + httpAddr
	if err := waitHTTP(ctx, base+"/api/session", time.Minute); err != nil {
		return nil, fmt.Errorf("the server's console: %w", err)
	}
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr})
	if err != nil {
		return nil, err
	}
	w := workload.Workloads["num20"]
	_, err = c.Exec(ctx, workload.CreateSQL(w.Table, cfg.rows))
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("generate %s: %w", w.Table, err)
	}
	sql := w.Query(cfg.rows)

	bctx, stop := newBrowser(ctx, cfg.chromium, nil)
	defer stop()
	if err := chromedp.Do(bctx); err != nil { // starts the browser, for as long as bctx lasts
		return nil, fmt.Errorf("start %s: %w", cfg.chromium, err)
	}
	octx, cancel := context.WithTimeout(bctx, time.Minute)
	err = chromedp.Do(octx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("sql")))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("open the console in %s: %w", cfg.chromium, err)
	}

	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer devNull.Close()
	cli := report.Contender{Name: "quiver query --format arrow", Run: func() (report.Sample, error) {
		cmd := exec.CommandContext(ctx, cfg.bin, "query", "--server", srv.FlightAddr, "--format", "arrow", "--quiet", sql)
		var errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = devNull, &errOut
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			return report.Sample{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(errOut.String()))
		}
		return report.Sample{Dur: d, Rows: cfg.rows}, nil
	}}
	// The page's own figure (data-ms) of each timed run; the first run of
	// each contender is Alternate's warm-up.
	var pageMS []time.Duration
	var pageBytes int64
	page := report.Contender{Name: "console (wall)", Run: func() (report.Sample, error) {
		rctx, cancel := context.WithTimeout(bctx, 10*time.Minute)
		defer cancel()
		if err := typeSQL(rctx, sql); err != nil {
			return report.Sample{}, err
		}
		start := time.Now()
		res, err := consoleRun(rctx)
		d := time.Since(start)
		if err != nil {
			return report.Sample{}, err
		}
		if res.State != "done" {
			return report.Sample{}, fmt.Errorf("the page ended the run %q: %s", res.State, res.Error)
		}
		if res.Rows != cfg.rows {
			return report.Sample{}, fmt.Errorf("the page counted %d rows, want %d", res.Rows, cfg.rows)
		}
		pageMS = append(pageMS, time.Duration(res.MS*float64(time.Millisecond)))
		pageBytes = res.Bytes
		return report.Sample{Dur: d, Rows: res.Rows, Bytes: res.Bytes}, nil
	}}
	stats, err := report.Alternate(cfg.reps, cli, page)
	if err != nil {
		return nil, err
	}
	pageStat := report.Stat{Name: "console (page data-ms)"}
	for _, d := range pageMS[1:] {
		pageStat.Samples = append(pageStat.Samples, report.Sample{Dur: d, Rows: cfg.rows, Bytes: pageBytes})
	}
	for i := range stats[0].Samples {
		stats[0].Samples[i].Bytes = pageBytes // the same Arrow stream, in the CLI's format
	}
	a, b := stats[0], stats[1]
	cas := fmt.Sprintf("num20/%s", report.FmtRows(cfg.rows))
	r := &report.Report{Suite: "console", Reps: cfg.reps}
	r.Add("console", cas, a)
	r.Add("console", cas, b)
	r.Add("console", cas, pageStat)
	wall, pg := report.Ratio(a, b), report.Ratio(a, pageStat)
	verdict := "met"
	if wall > 2 {
		verdict = "NOT met"
	}
	r.Tables = append(r.Tables, &report.Table{
		Title: "Web console: a num20 result reaches headless Chromium and is counted, against quiver query --format arrow",
		Note: fmt.Sprintf("Same server process and rows (%s), alternated. A: quiver query --format arrow > /dev/null, a process, wall clock. "+
			"B: the console page: type the SQL, then (timed) click Run until #result-status says done with every row counted; wall is the bench's clock "+
			"around the click and the wait, page is the page's own data-ms. The page reads the Arrow stream with apache-arrow's RecordBatchReader.", sql),
		Columns: []string{"rows", "MB", "A: query --format arrow ms", "B: console wall ms", "B: page ms", "B/A wall", "B/A page"},
		Rows: [][]string{{report.FmtRows(cfg.rows), fmt.Sprintf("%.0f", float64(pageBytes)/1e6), report.FmtMS(a), report.FmtMS(b), report.FmtMS(pageStat),
			fmt.Sprintf("%.2f×", wall), fmt.Sprintf("%.2f×", pg)}},
		Footer: fmt.Sprintf("Target: B ≤ 2× A, wall clock: %s (%.2f×).", verdict, wall),
		Bars: []report.Bar{
			{Group: cas, Series: a.Name, Value: report.Millis(a.Median()), Unit: "ms (lower is better)"},
			{Group: cas, Series: b.Name, Value: report.Millis(b.Median()), Unit: "ms (lower is better)"},
			{Group: cas, Series: pageStat.Name, Value: report.Millis(pageStat.Median()), Unit: "ms (lower is better)"},
		},
	})
	return r, nil
}

// consoleResult is how a run in the page ended: #result-status's state
// and data attributes, and the error box's text.
type consoleResult struct {
	State string  `json:"state"`
	Rows  int64   `json:"rows"`
	MS    float64 `json:"ms"`
	Bytes int64   `json:"bytes"`
	Error string  `json:"error"`
}

// consoleWatchJS arms window.__quiverRun, a promise of the end of the next
// run: #result-status goes to running, then to done, error or canceled
// (the page sets data-rows, data-ms and data-bytes before data-state).
const consoleWatchJS = `(() => {
  const st = document.getElementById('result-status');
  window.__quiverRun = new Promise((resolve) => {
    let ran = false;
    const mo = new MutationObserver(() => {
      const s = st.getAttribute('data-state');
      if (s === 'running') { ran = true; return; }
      if (ran && (s === 'done' || s === 'error' || s === 'canceled')) {
        mo.disconnect();
        resolve({state: s, rows: Number(st.dataset.rows || -1), ms: Number(st.dataset.ms || -1),
          bytes: Number(st.dataset.bytes || -1), error: document.getElementById('error').textContent});
      }
    });
    mo.observe(st, {attributes: true, attributeFilter: ['data-state']});
  });
  return true;
})()`

// consoleRun clicks #run on the console page in ctx, running the SQL in
// the editor, and waits for the run to end.
func consoleRun(ctx context.Context) (consoleResult, error) {
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](consoleWatchJS), chromedp.Click(chromedp.ID("run"))); err != nil {
		return consoleResult{}, fmt.Errorf("click run: %w", err)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[consoleResult](`window.__quiverRun`, chromedp.EvalAwaitPromise))
	if err != nil {
		return consoleResult{}, fmt.Errorf("wait for the run to end: %w", err)
	}
	return res, nil
}

// typeSQL empties the console's editor and types sql into it.
func typeSQL(ctx context.Context, sql string) error {
	err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`(() => { const e = document.getElementById('sql'); e.value = ''; e.focus(); })()`),
		chromedp.SendKeys(chromedp.ID("sql"), sql))
	if err != nil {
		return fmt.Errorf("type the SQL: %w", err)
	}
	return nil
}

// chromiumPath finds the browser the console's bench and tests drive:
// $QUIVER_CHROMIUM, else Debian's /usr/bin/chromium, else chromium,
// chromium-browser or google-chrome on the PATH. Nothing is downloaded.
func chromiumPath() (string, error) {
	if p := os.Getenv("QUIVER_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if found, err := exec.LookPath(p); err == nil {
			return found, nil
		}
	}
	return "", errors.New("no Chromium found: install it (apt-get install chromium, or make deps) or name it with --chromium or QUIVER_CHROMIUM")
}

// newBrowser starts headless Chromium at path (no sandbox: CI runs as
// root in a container) with a 1400×900 window, and returns the context of
// its first tab; stop closes the browser and waits for it. logf, when
// given, receives chromedp's errors.
func newBrowser(ctx context.Context, path string, logf func(string, ...any)) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("enable-precise-memory-info", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(logf))
	return bctx, func() { cancelTab(); cancelAlloc() }
}

// freeLoopbackAddr returns a loopback address with a port that was free a
// moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// waitHTTP waits until url answers 200.
func waitHTTP(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
