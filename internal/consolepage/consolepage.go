// Package consolepage drives quiver's web console in headless Chromium,
// for the console's browser tests and the console benchmark: it finds the
// browser (nothing is downloaded), starts it, types SQL into the page,
// clicks Run and waits for the page to say how the run ended.
package consolepage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/chromedp/chromedp"
)

// Result is how a run in the page ended: #result-status's state
// and data attributes, and the error box's text.
type Result struct {
	State string  `json:"state"`
	Rows  int64   `json:"rows"`
	MS    float64 `json:"ms"`
	Bytes int64   `json:"bytes"`
	Error string  `json:"error"`
}

// WatchJS arms window.__quiverRun, a promise of the end of the next
// run: #result-status goes to running, then to done, error or canceled
// (the page sets data-rows, data-ms and data-bytes before data-state).
const WatchJS = `(() => {
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

// Run clicks #run on the console page in ctx, running the SQL in
// the editor, and waits for the run to end.
func Run(ctx context.Context) (Result, error) {
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](WatchJS), chromedp.Click(chromedp.ID("run"))); err != nil {
		return Result{}, fmt.Errorf("click run: %w", err)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[Result](`window.__quiverRun`, chromedp.EvalAwaitPromise))
	if err != nil {
		return Result{}, fmt.Errorf("wait for the run to end: %w", err)
	}
	return res, nil
}

// TypeSQL empties the console's editor and types sql into it.
func TypeSQL(ctx context.Context, sql string) error {
	err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`(() => { const e = document.getElementById('sql'); e.value = ''; e.focus(); })()`),
		chromedp.SendKeys(chromedp.ID("sql"), sql))
	if err != nil {
		return fmt.Errorf("type the SQL: %w", err)
	}
	return nil
}

// ChromiumPath finds the browser the console's bench and tests drive:
// $QUIVER_CHROMIUM, else Debian's /usr/bin/chromium, else chromium,
// chromium-browser or google-chrome on the PATH. Nothing is downloaded.
func ChromiumPath() (string, error) {
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

// NewBrowser starts headless Chromium at path (no sandbox: CI runs as
// root in a container) with a 1400×900 window, and returns the context of
// its first tab; stop closes the browser and waits for it. logf, when
// given, receives chromedp's errors.
func NewBrowser(ctx context.Context, path string, logf func(string, ...any)) (context.Context, context.CancelFunc) {
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

// FreeLoopbackAddr returns a loopback address with a port that was free a
// moment ago.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// WaitHTTP waits until url answers 200.
func WaitHTTP(ctx context.Context, url string, limit time.Duration) error {
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
