package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/consolepage"
	"github.com/quiverdata/quiver/internal/serveproc"
	"github.com/quiverdata/quiver/internal/workload"
)

// ConsoleConfig configures the console suite.
type ConsoleConfig struct {
	// Bin is the quiver binary, run as the server and as quiver query.
	Bin string
	// Chromium is the browser binary (consolepage.ChromiumPath finds one).
	Chromium string
	// Rows is how many num20 rows the result holds.
	Rows int64
	Reps int
}

// Console times one num20 result two ways against the same server
// process, alternated: A is `quiver query --format arrow` (a process of
// the quiver binary, its output to /dev/null), B is the web console in headless
// Chromium, from the click on Run until the page says it is done and has
// counted every row. The page streams the result through apache-arrow's
// RecordBatchReader and keeps only the first window of rows.
func Console(ctx context.Context, cfg ConsoleConfig) (*report.Report, error) {
	dir, err := os.MkdirTemp("", "quiver-bench-console-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	httpAddr, err := consolepage.FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	srv, err := serveproc.Start(ctx, cfg.Bin, filepath.Join(dir, "bench.duckdb"), false, "--http", httpAddr)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	base := "http://" + httpAddr
	if err := consolepage.WaitHTTP(ctx, base+"/api/session", time.Minute); err != nil {
		return nil, fmt.Errorf("the server's console: %w", err)
	}
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr})
	if err != nil {
		return nil, err
	}
	w := workload.Workloads["num20"]
	_, err = c.Exec(ctx, workload.CreateSQL(w.Table, cfg.Rows))
	c.Close()
	if err != nil {
		return nil, fmt.Errorf("generate %s: %w", w.Table, err)
	}
	sql := w.Query(cfg.Rows)

	bctx, stop := consolepage.NewBrowser(ctx, cfg.Chromium, nil)
	defer stop()
	if err := chromedp.Do(bctx); err != nil { // starts the browser, for as long as bctx lasts
		return nil, fmt.Errorf("start %s: %w", cfg.Chromium, err)
	}
	octx, cancel := context.WithTimeout(bctx, time.Minute)
	err = chromedp.Do(octx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("sql")))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("open the console in %s: %w", cfg.Chromium, err)
	}

	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer devNull.Close()
	query := report.Contender{Name: "quiver query --format arrow", Run: func() (report.Sample, error) {
		cmd := exec.CommandContext(ctx, cfg.Bin, "query", "--server", srv.FlightAddr, "--format", "arrow", "--quiet", sql)
		var errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = devNull, &errOut
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			return report.Sample{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(errOut.String()))
		}
		return report.Sample{Dur: d, Rows: cfg.Rows}, nil
	}}
	// The page's own figure (data-ms) of each timed run; the first run of
	// each contender is Alternate's warm-up.
	var pageMS []time.Duration
	var pageBytes int64
	page := report.Contender{Name: "console (wall)", Run: func() (report.Sample, error) {
		rctx, cancel := context.WithTimeout(bctx, 10*time.Minute)
		defer cancel()
		if err := consolepage.TypeSQL(rctx, sql); err != nil {
			return report.Sample{}, err
		}
		start := time.Now()
		res, err := consolepage.Run(rctx)
		d := time.Since(start)
		if err != nil {
			return report.Sample{}, err
		}
		if res.State != "done" {
			return report.Sample{}, fmt.Errorf("the page ended the run %q: %s", res.State, res.Error)
		}
		if res.Rows != cfg.Rows {
			return report.Sample{}, fmt.Errorf("the page counted %d rows, want %d", res.Rows, cfg.Rows)
		}
		pageMS = append(pageMS, time.Duration(res.MS*float64(time.Millisecond)))
		pageBytes = res.Bytes
		return report.Sample{Dur: d, Rows: res.Rows, Bytes: res.Bytes}, nil
	}}
	stats, err := report.Alternate(cfg.Reps, query, page)
	if err != nil {
		return nil, err
	}
	pageStat := report.Stat{Name: "console (page data-ms)"}
	for _, d := range pageMS[1:] {
		pageStat.Samples = append(pageStat.Samples, report.Sample{Dur: d, Rows: cfg.Rows, Bytes: pageBytes})
	}
	for i := range stats[0].Samples {
		stats[0].Samples[i].Bytes = pageBytes // the same Arrow stream, in the CLI's format
	}
	a, b := stats[0], stats[1]
	cas := fmt.Sprintf("num20/%s", report.FmtRows(cfg.Rows))
	r := &report.Report{Suite: "console", Reps: cfg.Reps}
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
		Rows: [][]string{{report.FmtRows(cfg.Rows), fmt.Sprintf("%.0f", float64(pageBytes)/1e6), report.FmtMS(a), report.FmtMS(b), report.FmtMS(pageStat),
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
