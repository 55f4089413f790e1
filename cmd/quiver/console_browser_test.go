package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/ingest/protoarrow"
	"github.com/quiverdata/quiver/internal/consolepage"
	"github.com/quiverdata/quiver/internal/consolepage/consoletest"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// The web console in a real browser: headless Chromium (Debian's, or
// $QUIVER_CHROMIUM) drives the page the server embeds, through the ids of
// the page's DOM contract. Without Chromium the tests skip, unless
// QUIVER_REQUIRE_BROWSER=1 (CI), where they fail. With QUIVER_SCREENSHOTS
// set, the screenshots the README shows are written there as
// console-query.png and console-ingest.png.

// browserTab is a tab of a headless Chromium the test started, on a
// console at base.
type browserTab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// openBrowser starts Chromium and returns its tab; the browser is closed
// when the test ends.
func openBrowser(t *testing.T, base string) *browserTab {
	t.Helper()
	path := consoletest.Chromium(t)
	var mu sync.Mutex
	done := false
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf("chromium: "+format, args...)
		}
	}
	ctx, stop := consolepage.NewBrowser(context.Background(), path, logf)
	t.Cleanup(func() {
		stop()
		mu.Lock()
		done = true
		mu.Unlock()
	})
	// The viewport is the window's size, so that screenshots are too.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900)); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return &browserTab{t: t, ctx: ctx, base: base}
}

// step bounds one browser action.
const step = time.Minute

// do runs actions, failing the test on an error.
func (b *browserTab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browserTab, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %.200s: %v", js, err)
	}
	return v
}

// waitFor polls the JavaScript condition until it holds, failing the test
// after limit with what the page shows.
func (b *browserTab) waitFor(what, cond string, limit time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(limit)
	for !eval[bool](b, "!!("+cond+")") {
		if time.Now().After(deadline) {
			b.t.Fatalf("waited %s for %s; the page shows %s", limit, what, b.describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// describe is what the page shows, for failure messages.
func (b *browserTab) describe() string {
	return eval[string](b, `(() => {
	  const t = (id) => { const e = document.getElementById(id); return e ? JSON.stringify(e.textContent.slice(0, 600)) : 'none'; };
	  const st = document.getElementById('result-status');
	  return 'status ' + (st ? JSON.stringify(Object.assign({}, st.dataset)) : 'none') + ' ' + t('result-status') +
	    ', error ' + t('error') + ', login error ' + t('login-error') + ', whoami ' + t('whoami');
	})()`)
}

// fill empties the input or textarea with the id and types text into it.
func (b *browserTab) fill(id, text string) {
	b.t.Helper()
	b.do("type into #"+id,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = ''; e.focus(); })()`, id)),
		chromedp.SendKeys(chromedp.ID(id), text))
}

// run types sql into the editor, clicks #run and waits for the run to end.
func (b *browserTab) run(sql string) consolepage.Result {
	b.t.Helper()
	b.fill("sql", sql)
	ctx, cancel := context.WithTimeout(b.ctx, 2*step)
	defer cancel()
	res, err := consolepage.Run(ctx)
	if err != nil {
		b.t.Fatalf("run %s: %v; the page shows %s", sql, err, b.describe())
	}
	return res
}

// cellText is the text of the grid's cell at row, col ("" when it is not
// in the DOM).
func (b *browserTab) cellText(row int64, col int) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(() => { const c = document.querySelector('#grid div.cell[data-row="%d"][data-col="%d"]'); return c ? c.textContent : ''; })()`, row, col))
}

// waitCell waits until the cell at row, col shows want.
func (b *browserTab) waitCell(row int64, col int, want string) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf("cell row %d col %d to show %q (it shows %q)", row, col, want, b.cellText(row, col)),
		fmt.Sprintf(`(() => { const c = document.querySelector('#grid div.cell[data-row="%d"][data-col="%d"]'); return c && c.textContent === %q; })()`, row, col, want),
		30*time.Second)
}

// screenshot captures the viewport as a PNG, checks it decodes, and
// writes it to $QUIVER_SCREENSHOTS/name when that is set.
func (b *browserTab) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		b.t.Fatalf("screenshot %s is no PNG: %v", name, err)
	}
	if r := img.Bounds(); r.Dx() != 1400 || r.Dy() != 900 {
		b.t.Fatalf("screenshot %s is %dx%d, want the 1400x900 window", name, r.Dx(), r.Dy())
	}
	dir := os.Getenv("QUIVER_SCREENSHOTS")
	if dir == "" {
		b.t.Logf("screenshot %s: %d bytes, %v (set QUIVER_SCREENSHOTS to keep it)", name, len(buf), img.Bounds().Size())
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot written to %s (%d bytes)", p, len(buf))
}

// consoleAPI is the console's HTTP API as a logged-in user, to compare
// what the page shows with what the server answers.
type consoleAPI struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

func newConsoleAPI(t *testing.T, base, user, password string) *consoleAPI {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	a := &consoleAPI{t: t, base: base, hc: &http.Client{Jar: jar, Timeout: time.Minute}}
	req, _ := http.NewRequest("POST", base+"/api/login", nil)
	req.SetBasicAuth(user, password)
	resp, err := a.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ CSRF string }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != 200 {
		t.Fatalf("API login %s: %s, %v", user, resp.Status, err)
	}
	a.csrf = s.CSRF
	return a
}

// queryError runs sql through POST /api/query and returns the error it
// answers.
func (a *consoleAPI) queryError(sql string) (status int, code, msg string) {
	a.t.Helper()
	body, _ := json.Marshal(map[string]string{"sql": sql})
	req, _ := http.NewRequest("POST", a.base+"/api/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", a.csrf)
	resp, err := a.hc.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct{ Error, Code string }
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &e); err != nil {
		a.t.Fatalf("query %q: %s, not an error: %.200s", sql, resp.Status, b)
	}
	return resp.StatusCode, e.Code, e.Error
}

type liveQueryInfo struct {
	ID, Endpoint, User, SQL, State string
}

// queries lists the statements the server runs (GET /api/live).
func (a *consoleAPI) queries() []liveQueryInfo {
	a.t.Helper()
	resp, err := a.hc.Get(a.base + "/api/live")
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap struct{ Queries []liveQueryInfo }
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		a.t.Fatal(err)
	}
	return snap.Queries
}

// waitQuery waits until a statement with sql is (running) or is not
// (!running) listed by the server.
func (a *consoleAPI) waitQuery(sql string, running bool, limit time.Duration) {
	a.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		found := false
		var states []string
		for _, q := range a.queries() {
			if q.SQL == sql {
				found = true
				states = append(states, q.Endpoint+" "+q.State)
			}
		}
		if found == running {
			return
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("waited %s for the server to list %q running=%v; it lists %v", limit, sql, running, states)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var browserUsers = []server.UserSpec{
	{Name: "ada", Password: "ada-secret-1", Role: auth.RoleAdmin},
	{Name: "rita", Password: "rita-secret-1", Role: auth.RoleReadOnly},
}

// TestConsoleBrowser drives the console of a server with users: the first
// load's size on the wire, a failed and a good login, a 1M-row result
// counted and shown, DuckDB's error with its caret line, canceling a
// running aggregate and a running stream, a read-only user's write
// refused, and the schema tree (screenshot console-query.png).
func TestConsoleBrowser(t *testing.T) {
	consoletest.Chromium(t)
	// A database file named quiver, so that the catalog is too (an
	// in-memory database's is "memory").
	srv := testutil.StartServer(t, server.Config{DB: filepath.Join(t.TempDir(), "quiver.duckdb"), HTTPAddr: "127.0.0.1:0",
		Security: server.Security{Users: browserUsers}})
	base := "http://" + srv.HTTPAddr
	c := testutil.Dial(t, srv, client.Config{User: "ada", Password: "ada-secret-1"})
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE TABLE customers (id BIGINT PRIMARY KEY, name VARCHAR, country VARCHAR, signed_up DATE)`,
		`INSERT INTO customers SELECT i, 'customer ' || i, ['NL', 'DE', 'FR', 'US', 'JP'][i % 5 + 1], DATE '2024-01-01' + (i % 365)::INT FROM range(1000) t(i)`,
		`CREATE TABLE orders (id BIGINT, customer_id BIGINT, amount DECIMAL(10,2), ordered_at TIMESTAMP)`,
		`INSERT INTO orders SELECT i, i * 7 % 1000, (i % 997) * 1.25, TIMESTAMP '2024-01-01' + INTERVAL (i) MINUTE FROM range(200000) t(i)`,
		`CREATE VIEW revenue_by_country AS SELECT c.country, count(*) AS orders, sum(o.amount) AS revenue FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY ALL`,
	} {
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	b := openBrowser(t, base)
	admin := newConsoleAPI(t, base, "ada", "ada-secret-1")

	t.Run("first load under 1 MB on the wire", func(t *testing.T) {
		b.t = t
		b.do("open the console", chromedp.Navigate(base+"/"))
		b.waitFor("the login form", `!document.getElementById('login').hidden && document.readyState === 'complete'`, 30*time.Second)
		type entry struct {
			Name     string  `json:"name"`
			Transfer float64 `json:"transfer"`
			Encoded  float64 `json:"encoded"`
			Decoded  float64 `json:"decoded"`
		}
		entries := eval[[]entry](b, `[...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
		  .map((e) => ({name: e.name, transfer: e.transferSize, encoded: e.encodedBodySize, decoded: e.decodedBodySize}))`)
		var total, decoded float64
		seen := map[string]bool{}
		for _, e := range entries {
			total += e.Transfer
			decoded += e.Decoded
			path := strings.TrimPrefix(e.Name, base)
			seen[path] = true
			t.Logf("%-32s %8.0f bytes on the wire, %8.0f decoded", path, e.Transfer, e.Decoded)
			if e.Transfer <= 0 {
				t.Errorf("%s: transferSize %v: not measured, or from a cache", path, e.Transfer)
			}
		}
		for _, p := range []string{"/", "/app.js", "/app.css", "/vendor/Arrow.es2015.min.js", "/vendor/uPlot.iife.min.js", "/vendor/uPlot.min.css"} {
			if !seen[p] {
				t.Errorf("the first load did not fetch %s (it fetched %v)", p, seen)
			}
		}
		t.Logf("first load: %.0f bytes on the wire (%.0f decoded) in %d requests", total, decoded, len(entries))
		if total >= 1<<20 {
			t.Errorf("the first load is %.0f bytes on the wire, want under 1 MB", total)
		}
	})

	t.Run("login", func(t *testing.T) {
		b.t = t
		b.fill("login-user", "ada")
		b.fill("login-password", "not-her-password")
		b.do("submit the login", chromedp.Click(chromedp.ID("login-submit")))
		b.waitFor("the login error", `document.getElementById('login-error').textContent.includes('authentication failed')`, 30*time.Second)
		if got := eval[bool](b, `document.getElementById('app').hidden`); !got {
			t.Errorf("the app shows after a failed login")
		}
		b.fill("login-password", "ada-secret-1")
		b.do("submit the login", chromedp.Click(chromedp.ID("login-submit")))
		b.waitFor("whoami to say ada (admin)", `document.getElementById('whoami').textContent.trim() === 'ada (admin)' && document.getElementById('login').hidden`, 30*time.Second)
		b.waitFor("the editor", `document.getElementById('sql').offsetParent !== null`, 10*time.Second)
	})

	t.Run("1M rows counted and shown", func(t *testing.T) {
		b.t = t
		res := b.run(`SELECT i AS id, i * 3 AS tripled, 'row ' || i AS label FROM range(1000000) t(i)`)
		if res.State != "done" || res.Rows != 1_000_000 {
			t.Fatalf("run ended %q with %d rows (error %q), want done with 1000000", res.State, res.Rows, res.Error)
		}
		if res.Bytes < 1_000_000*16 {
			t.Errorf("data-bytes %d: fewer than the rows' 16 MB of integers", res.Bytes)
		}
		t.Logf("1M rows: %d bytes, %.0f ms as the page measured", res.Bytes, res.MS)
		if got := eval[string](b, `document.getElementById('result-status').textContent`); !strings.Contains(got, "1,000,000 rows") {
			t.Errorf("#result-status says %q, want the count 1,000,000 rows", got)
		}
		b.waitCell(0, 2, "row 0")
		b.waitCell(7, 1, "21")
		b.waitCell(12, 0, "12")
		heads := eval[[]string](b, `[...document.querySelectorAll('#grid div.head')].map((h) => h.textContent)`)
		if len(heads) != 3 || !strings.Contains(heads[1], "tripled") || !strings.Contains(strings.ToLower(heads[1]), "int") {
			t.Errorf("header cells %q, want id, tripled and label with their types", heads)
		}
	})

	t.Run("DuckDB's error with its caret line", func(t *testing.T) {
		b.t = t
		sql := `SELECT id, nmae FROM customers`
		status, code, want := admin.queryError(sql)
		if status != 400 || code != "sql" || !strings.Contains(want, "LINE 1:") || !hasCaretLine(want) {
			t.Fatalf("the API answers %d %q %q; want a 400 sql error with DuckDB's LINE 1: and caret lines", status, code, want)
		}
		res := b.run(sql)
		if res.State != "error" {
			t.Fatalf("run ended %q, want error", res.State)
		}
		got := eval[string](b, `(() => { const e = document.getElementById('error'); return e.tagName + '|' + (e.hidden || e.offsetParent === null ? 'hidden' : 'shown') + '|' + e.textContent; })()`)
		parts := strings.SplitN(got, "|", 3)
		if parts[0] != "PRE" || parts[1] != "shown" {
			t.Errorf("#error is a %s, %s; want a <pre> that shows", parts[0], parts[1])
		}
		if parts[2] != want {
			t.Errorf("#error shows\n%s\nwant the server's message as given\n%s", parts[2], want)
		}
		t.Logf("the page shows:\n%s", parts[2])
	})

	t.Run("cancel a running query", func(t *testing.T) {
		b.t = t
		for _, sql := range []string{
			// an aggregate: no row comes before the cancel
			`SELECT count(*) FROM range(1000000000000) t(i) WHERE i % 7 = 3`,
			// a stream: rows pour in while it runs
			`SELECT i, i * 2 AS twice FROM range(1000000000000) t(i)`,
		} {
			b.fill("sql", sql)
			b.do("start the run", chromedp.Evaluate[chromedp.Void](consolepage.WatchJS), chromedp.Click(chromedp.ID("run")))
			b.waitFor("the run to start", `document.getElementById('result-status').dataset.state === 'running' && !document.getElementById('cancel').disabled`, 10*time.Second)
			admin.waitQuery(sql, true, 30*time.Second)
			b.do("click cancel", chromedp.Click(chromedp.ID("cancel")))
			res := eval[consolepage.Result](b, `window.__quiverRun`)
			if res.State != "canceled" {
				t.Errorf("%s: run ended %q (%s), want canceled", sql, res.State, res.Error)
			}
			admin.waitQuery(sql, false, 30*time.Second)
			if eval[bool](b, `document.getElementById('cancel').disabled && !document.getElementById('run').disabled`) == false {
				t.Errorf("%s: after the cancel #cancel is enabled or #run disabled", sql)
			}
			t.Logf("canceled %s after %d rows, %.0f ms", sql, res.Rows, res.MS)
		}
	})

	t.Run("a read-only user's write is refused", func(t *testing.T) {
		b.t = t
		b.do("log out", chromedp.Click(chromedp.ID("logout")))
		b.waitFor("the login form", `!document.getElementById('login').hidden`, 30*time.Second)
		b.fill("login-user", "rita")
		b.fill("login-password", "rita-secret-1")
		b.do("submit the login", chromedp.Click(chromedp.ID("login-submit")))
		b.waitFor("whoami to say rita (readonly)", `document.getElementById('whoami').textContent.trim() === 'rita (readonly)'`, 30*time.Second)

		sql := `INSERT INTO customers VALUES (1000, 'mallory', 'XX', DATE '2024-06-01')`
		reader := newConsoleAPI(t, base, "rita", "rita-secret-1")
		status, code, want := reader.queryError(sql)
		if status != 403 || code != "denied" {
			t.Fatalf("the API answers %d %q %q, want 403 denied", status, code, want)
		}
		res := b.run(sql)
		if res.State != "error" {
			t.Fatalf("run ended %q, want error", res.State)
		}
		if got := eval[string](b, `document.getElementById('error').textContent`); got != want {
			t.Errorf("#error shows %q, want the server's %q", got, want)
		}
		n, err := testutil.CountRows(ctx, c, `SELECT * FROM customers`)
		if err != nil || n != 1000 {
			t.Errorf("customers has %d rows (%v) after the refused insert, want 1000", n, err)
		}
		res = b.run(`SELECT count(*) AS n FROM customers`)
		if res.State != "done" || res.Rows != 1 {
			t.Fatalf("rita's read ended %q with %d rows (%s)", res.State, res.Rows, res.Error)
		}
		b.waitCell(0, 0, "1000")

		b.do("log out", chromedp.Click(chromedp.ID("logout")))
		b.waitFor("the login form", `!document.getElementById('login').hidden`, 30*time.Second)
		b.fill("login-user", "ada")
		b.fill("login-password", "ada-secret-1")
		b.do("submit the login", chromedp.Click(chromedp.ID("login-submit")))
		b.waitFor("whoami to say ada (admin)", `document.getElementById('whoami').textContent.trim() === 'ada (admin)'`, 30*time.Second)
	})

	t.Run("schema tree", func(t *testing.T) {
		b.t = t
		for _, tbl := range []string{"customers", "orders", "revenue_by_country"} {
			b.waitFor("table "+tbl+" in the schema tree", fmt.Sprintf(`document.querySelector('#schema [data-table="quiver.main.%s"]')`, tbl), 30*time.Second)
		}
		b.do("open customers", chromedp.Click(chromedp.CSS(`#schema [data-table="quiver.main.customers"]`)))
		b.do("open orders", chromedp.Click(chromedp.CSS(`#schema [data-table="quiver.main.orders"]`)))
		text := eval[string](b, `document.getElementById('schema').innerText`)
		for _, want := range []string{"quiver", "main", "customers", "orders", "revenue_by_country"} {
			if !strings.Contains(text, want) {
				t.Errorf("the schema tree lacks %q:\n%s", want, text)
			}
		}
		cols := eval[[]string](b, `[...document.querySelectorAll('#schema li')].filter((li) => li.offsetParent !== null && !li.querySelector('li')).map((li) => li.textContent.replace(/\s+/g, ' ').trim())`)
		for _, want := range []string{"amount DECIMAL(10,2)", "ordered_at TIMESTAMP", "country VARCHAR"} {
			found := false
			for _, c := range cols {
				found = found || c == want
			}
			if !found {
				t.Errorf("the opened tables show no column %q (they show %q)", want, cols)
			}
		}
		if got := eval[string](b, `document.getElementById('sql').value`); got != "SELECT * FROM quiver.main.orders LIMIT 1000" {
			t.Errorf("clicking table orders put %q in the editor", got)
		}
		// The README's screenshot shows a history of two statements.
		b.do("clear the history", chromedp.Evaluate[chromedp.Void](`(() => { const c = document.getElementById('history-clear'); if (c) c.click(); })()`))
		b.do("run the table's query", chromedp.Evaluate[chromedp.Void](consolepage.WatchJS), chromedp.Click(chromedp.ID("run")))
		if res := eval[consolepage.Result](b, `window.__quiverRun`); res.State != "done" || res.Rows != 1000 {
			t.Fatalf("SELECT * FROM quiver.main.orders LIMIT 1000 ended %q with %d rows (%s)", res.State, res.Rows, res.Error)
		}
		res := b.run(`SELECT country, orders, revenue, round(revenue / orders, 2) AS avg_order
FROM revenue_by_country
ORDER BY revenue DESC`)
		if res.State != "done" || res.Rows != 5 {
			t.Fatalf("run ended %q with %d rows (%s), want done with 5", res.State, res.Rows, res.Error)
		}
		b.waitFor("the grid's rows", `document.querySelectorAll('#grid div.cell[data-col="0"]').length === 5`, 10*time.Second)
		b.screenshot("console-query.png")
	})
}

// hasCaretLine reports whether msg has a line of only spaces and a caret.
func hasCaretLine(msg string) bool {
	for _, l := range strings.Split(msg, "\n") {
		if strings.TrimSpace(l) == "^" {
			return true
		}
	}
	return false
}

// heapBytes is the page's JavaScript memory: the V8 heap in use and the
// backing stores of array buffers, where Arrow's batches live.
func heapBytes(b *browserTab) (used, backing float64) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	h, err := chromedp.Call(ctx, cdpruntime.GetHeapUsage, cdp.Empty{})
	if err != nil {
		b.t.Fatalf("Runtime.getHeapUsage: %v", err)
	}
	return h.UsedSize, h.BackingStorageSize + h.EmbedderHeapUsedSize
}

// liveHeapBytes collects garbage in the page and returns what its
// JavaScript still holds, as heapBytes.
func liveHeapBytes(b *browserTab) (used, backing float64) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	if _, err := chromedp.Call(ctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
		b.t.Fatalf("HeapProfiler.collectGarbage: %v", err)
	}
	return heapBytes(b)
}

// The bounds on the page's JavaScript memory (heap in use plus array
// buffers) while it streams and scrolls a result of 10M rows of eight
// BIGINT columns. Holding that result takes 10M × 8 × 8 B = 640 MB of
// array buffers, so a page that kept it, or even half of it, breaks both.
//
// heapPeakBound bounds every sample taken without forcing a collection.
// V8 collects array buffers only once their memory has grown by tens of
// MB since the last collection, and finishes the collection while the
// stream goes on, so the batches the page has counted and dropped pile up
// in between: 110 to 170 MB at the peak here, whatever the result's size.
//
// heapLiveBound bounds what is left after a forced collection, at each
// stop (counted, middle, three quarters, end): the first window, at most
// 16 cached windows of 1,000 rows as display strings, and the DOM of the
// rows in view: a few MB.
const (
	heapResultCols = 8
	heapPeakBound  = 320e6
	heapLiveBound  = 50e6
)

// TestConsoleBrowser_ScrollTenMillionRows streams 10M rows (640 MB) into the page,
// scrolls to the middle, scrubs, and scrolls to the end, checking the
// cells it shows hold the right rows and the JavaScript heap stays
// bounded: the page fetches the windows it shows instead of holding the
// result.
func TestConsoleBrowser_ScrollTenMillionRows(t *testing.T) {
	consoletest.Chromium(t)
	const rows = 10_000_000
	srv := testutil.StartServer(t, server.Config{HTTPAddr: "127.0.0.1:0"})
	base := "http://" + srv.HTTPAddr
	b := openBrowser(t, base)
	b.do("open the console", chromedp.Navigate(base+"/"))
	b.waitFor("the editor", `document.getElementById('sql').offsetParent !== null`, 30*time.Second)

	var peak, peakUsed, peakBacking float64
	var peakAt string
	samples := 0
	sample := func(at string) {
		used, backing := heapBytes(b)
		samples++
		if used+backing > peak {
			peak, peakUsed, peakBacking, peakAt = used+backing, used, backing, at
		}
	}
	used0, backing0 := heapBytes(b)
	t.Logf("heap after the page loaded: %.1f MB used, %.1f MB array buffers", used0/1e6, backing0/1e6)

	// Column k holds row × (k+1).
	cols := []string{"i AS c1"}
	for k := 2; k <= heapResultCols; k++ {
		cols = append(cols, fmt.Sprintf("i * %d AS c%d", k, k))
	}
	sql := fmt.Sprintf(`SELECT %s FROM range(%d) t(i)`, strings.Join(cols, ", "), rows)
	b.fill("sql", sql)
	b.do("start the run", chromedp.Evaluate[chromedp.Void](consolepage.WatchJS), chromedp.Click(chromedp.ID("run")))
	// Sample the heap while the result streams; the round trips also
	// show how long the page's main thread takes to answer.
	var slowest time.Duration
	deadline := time.Now().Add(2 * time.Minute)
	for {
		sample("streaming")
		start := time.Now()
		state := eval[string](b, `document.getElementById('result-status').dataset.state`)
		slowest = max(slowest, time.Since(start))
		if state != "running" && state != "idle" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 10M-row run did not end in 2 minutes: %s", b.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
	res := eval[consolepage.Result](b, `window.__quiverRun`)
	if res.State != "done" || res.Rows != rows {
		t.Fatalf("run ended %q with %d rows (%s), want done with %d", res.State, res.Rows, res.Error, rows)
	}
	t.Logf("10M rows: %.0f MB received in %.0f ms as the page measured; the slowest evaluation while streaming took %s",
		float64(res.Bytes)/1e6, res.MS, slowest.Round(time.Millisecond))
	sample("counted")
	// stop measures what the page holds after a forced collection.
	stop := func(at string) {
		used, backing := liveHeapBytes(b)
		t.Logf("heap %s, after a collection: %.1f MB used, %.1f MB array buffers", at, used/1e6, backing/1e6)
		if used+backing >= heapLiveBound {
			t.Errorf("%s the page holds %.1f MB of JavaScript memory after a collection, want under %.0f MB: it keeps more than windows",
				at, (used+backing)/1e6, heapLiveBound/1e6)
		}
	}
	stop("counted")

	// scrollTo puts the grid's scroll position at frac of its range and
	// waits until the cells in the DOM all show their rows' values.
	scroller := `(() => {
	  const g = document.getElementById('grid');
	  return [g, ...g.querySelectorAll('*')].find((e) => e.scrollHeight > e.clientHeight + 1 && getComputedStyle(e).overflowY !== 'visible');
	})()`
	// cellsRight says whether the grid's cells all show their rows' values
	// (column k holds row × (k+1)) and cover row target, give or take tol.
	cellsRight := `((target, tol) => {
	  const cells = [...document.querySelectorAll('#grid div.cell')];
	  if (!cells.length) return 'no cells';
	  let lo = Infinity, hi = -Infinity;
	  for (const c of cells) {
	    const want = String(BigInt(c.dataset.row) * BigInt(Number(c.dataset.col) + 1));
	    if (c.textContent !== want) return 'row ' + c.dataset.row + ' col ' + c.dataset.col + ' shows ' + JSON.stringify(c.textContent) + ', want ' + want;
	    lo = Math.min(lo, Number(c.dataset.row));
	    hi = Math.max(hi, Number(c.dataset.row));
	  }
	  if (lo > target + tol || hi < target - tol) return 'rows ' + lo + ' to ' + hi + ' shown, want around ' + target;
	  return 'ok';
	})`
	scrollTo := func(frac float64) (first, last int64) {
		b.do(fmt.Sprintf("scroll to %.2f", frac), chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = %s; s.scrollTop = (s.scrollHeight - s.clientHeight) * %v; })()`, scroller, frac)))
		target := int64(frac * (rows - 1))
		deadline := time.Now().Add(30 * time.Second)
		for {
			sample(fmt.Sprintf("scrolled to %.2f", frac))
			why := eval[string](b, fmt.Sprintf(`%s(%d, %d)`, cellsRight, target, rows/100))
			if why == "ok" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("scrolled to %.2f: after 30s %s", frac, why)
			}
			time.Sleep(100 * time.Millisecond)
		}
		span := eval[[]int64](b, `(() => { const r = [...document.querySelectorAll('#grid div.cell[data-col="0"]')].map((c) => Number(c.dataset.row)); return [Math.min(...r), Math.max(...r), document.querySelectorAll('#grid div.cell').length]; })()`)
		if span[2] > heapResultCols*100 {
			t.Errorf("scrolled to %.2f: %d cells in the DOM, want only those in view", frac, span[2])
		}
		return span[0], span[1]
	}

	first, last := scrollTo(0.5)
	t.Logf("middle: rows %d to %d shown", first, last)
	stop("in the middle")
	// Scrub as a user dragging the scroll bar would, faster than windows
	// arrive, then settle.
	for i := 0; i < 20; i++ {
		frac := float64((i*37)%100) / 100
		b.do("scrub", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = %s; s.scrollTop = (s.scrollHeight - s.clientHeight) * %v; })()`, scroller, frac)))
		sample("scrubbing")
		time.Sleep(30 * time.Millisecond)
	}
	first, last = scrollTo(0.75)
	t.Logf("three quarters: rows %d to %d shown", first, last)
	stop("at three quarters")
	first, last = scrollTo(1)
	t.Logf("end: rows %d to %d shown", first, last)
	if last != rows-1 {
		t.Errorf("scrolled to the end, the last row shown is %d, want %d", last, rows-1)
	}
	b.waitCell(rows-1, 0, "9999999")
	b.waitCell(rows-1, heapResultCols-1, strconv.Itoa((rows-1)*heapResultCols))
	inView := eval[bool](b, fmt.Sprintf(`(() => {
	  const s = %s.getBoundingClientRect(), c = document.querySelector('#grid div.cell[data-row="%d"][data-col="0"]').getBoundingClientRect();
	  return c.top >= s.top && c.bottom <= s.bottom + 1;
	})()`, scroller, rows-1))
	if !inView {
		t.Errorf("the cell of the last row is in the DOM but not in view")
	}
	stop("at the end")
	t.Logf("heap peak of %d samples without forced collections: %.1f MB (%.1f MB used, %.1f MB array buffers) while %s; bounds %.0f MB peak, %.0f MB live; the result is %d MB",
		samples, peak/1e6, peakUsed/1e6, peakBacking/1e6, peakAt, heapPeakBound/1e6, heapLiveBound/1e6, rows*heapResultCols*8/1_000_000)
	if peak >= heapPeakBound {
		t.Errorf("the page's JavaScript memory peaked at %.1f MB while %s, want under %.0f MB: it holds the result instead of windows", peak/1e6, peakAt, heapPeakBound/1e6)
	}
}

// TestConsoleBrowser_IngestView runs quiver ingest in-process against an
// in-process Kafka with its console on --http, produces messages while the
// page watches, and checks the ingest view shows the topic, the
// partitions' lag and the counts (screenshot console-ingest.png).
func TestConsoleBrowser_IngestView(t *testing.T) {
	consoletest.Chromium(t)
	const partitions = 3
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	dir := t.TempDir()
	protoPath := filepath.Join(dir, "events.proto")
	if err := os.WriteFile(protoPath, []byte(`syntax = "proto3";
package shop;
message Event {
  int64 id = 1;
  string user = 2;
  string country = 3;
  double amount = 4;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := protoarrow.Compile(context.Background(), protoPath, nil, "shop.Event")
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produced := make(chan error, 1)
	go func() { produced <- produceEvents(ctx, cluster.ListenAddrs(), md) }()

	httpAddr, err := consolepage.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	ingested := make(chan error, 1)
	go func() {
		ingested <- (&ingestCmd{}).Run(ctx, discard(), []string{
			"--brokers", strings.Join(cluster.ListenAddrs(), ","), "--topic", "events", "--group", "console-browser",
			"--proto", protoPath, "--message", "shop.Event", "--db", filepath.Join(dir, "live.duckdb"), "--table", "events",
			"--batch-rows", "500", "--flush-interval", "200ms", "--min-free-mb", "0", "--report-interval", "0",
			"--instance-id", "none", "--http", httpAddr, "--log-level", "error",
		})
	}()
	defer func() {
		cancel()
		select {
		case err := <-ingested:
			if err != nil {
				t.Errorf("quiver ingest: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("quiver ingest did not stop within 30s of its context")
		}
		if err := <-produced; err != nil && ctx.Err() == nil {
			t.Errorf("produce: %v", err)
		}
	}()
	base := "http://" + httpAddr
	if err := consolepage.WaitHTTP(ctx, base+"/healthz", time.Minute); err != nil {
		select {
		case err := <-ingested:
			t.Fatalf("quiver ingest ended: %v", err)
		default:
		}
		t.Fatal(err)
	}

	b := openBrowser(t, base)
	b.do("open the console", chromedp.Navigate(base+"/"))
	b.waitFor("the ingest view", `document.getElementById('ingest') && document.getElementById('ingest').offsetParent !== null`, 30*time.Second)
	if eval[bool](b, `(() => { const q = document.getElementById('tab-query'); return !!q && q.offsetParent !== null; })()`) {
		t.Errorf("the ingest console shows the query tab")
	}
	b.waitFor("the topic and table", `document.getElementById('ingest-topic').textContent === 'events' && document.getElementById('ingest-table').textContent === 'events'`, 30*time.Second)
	b.waitFor("a row per partition", fmt.Sprintf(`document.querySelectorAll('#ingest-partitions tbody tr').length === %d && [...document.querySelectorAll('#ingest-partitions tbody tr')].every((tr) => tr.cells.length === 4 && /^[0-9,]+$/.test(tr.cells[1].textContent))`, partitions), 60*time.Second)
	b.waitFor("messages counted", `Number(document.getElementById('ingest-messages').textContent.replace(/,/g, '')) > 0`, 30*time.Second)
	// A few polls of the snapshot, so that the rate charts have lines;
	// more for the README's screenshot.
	first := eval[string](b, `document.getElementById('ingest-messages').textContent`)
	watch := 4 * time.Second
	if os.Getenv("QUIVER_SCREENSHOTS") != "" {
		watch = 45 * time.Second
	}
	time.Sleep(watch)
	b.waitFor("the count to grow", fmt.Sprintf(`document.getElementById('ingest-messages').textContent !== %q`, first), 30*time.Second)
	if got := eval[string](b, `document.getElementById('ingest-last-error').textContent`); got != "none" {
		t.Errorf("#ingest-last-error shows %q, want none", got)
	}
	t.Logf("ingest view: %s messages, partitions %q", eval[string](b, `document.getElementById('ingest-messages').textContent`),
		eval[[]string](b, `[...document.querySelectorAll('#ingest-partitions tbody tr')].map((tr) => tr.textContent)`))
	b.screenshot("console-ingest.png")
}

// produceEvents writes shop.Event messages to the topic over its
// partitions until ctx ends, every 100 ms between 50 and 550 of them, the
// rate going up and down over 20 seconds.
func produceEvents(ctx context.Context, brokers []string, md protoreflect.MessageDescriptor) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("events"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	countries := []string{"NL", "DE", "FR", "US", "JP"}
	f := md.Fields()
	start := time.Now()
	for id := int64(0); ; {
		var recs []*kgo.Record
		n := 300 + int(250*math.Sin(2*math.Pi*time.Since(start).Seconds()/20))
		for k := 0; k < n; k++ {
			m := dynamicpb.NewMessage(md)
			m.Set(f.ByName("id"), protoreflect.ValueOfInt64(id))
			m.Set(f.ByName("user"), protoreflect.ValueOfString("user-"+strconv.FormatInt(id%5000, 10)))
			m.Set(f.ByName("country"), protoreflect.ValueOfString(countries[id%5]))
			m.Set(f.ByName("amount"), protoreflect.ValueOfFloat64(float64(id%1000)*0.25))
			v, err := proto.Marshal(m)
			if err != nil {
				return err
			}
			recs = append(recs, &kgo.Record{Value: v, Key: []byte(strconv.FormatInt(id, 10))})
			id++
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestConsoleBrowser_ServePipelines opens the console of quiver serve
// --ingest: its live view lists the pipeline with the messages it took.
func TestConsoleBrowser_ServePipelines(t *testing.T) {
	consoletest.Chromium(t)
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	serveIngest(t, 1200, "--http", httpAddr)
	base := "http://" + httpAddr
	b := openBrowser(t, base)
	b.do("open the console", chromedp.Navigate(base+"/"))
	b.waitFor("the live tab", `!!document.getElementById('tab-live')`, 30*time.Second)
	b.do("show the live view", chromedp.Click(chromedp.ID("tab-live")))
	b.waitFor("the pipeline's row", `(() => { const tr = document.querySelector('#pipelines-table tbody tr'); return !!tr && tr.cells.length === 8 && tr.cells[1].textContent === 'events' && tr.cells[3].textContent === '1,200'; })()`, time.Minute)
	if got := eval[string](b, `document.querySelector('#pipelines-table tbody tr').cells[7].textContent`); got != "running" {
		t.Errorf("pipeline state: got %q, want running", got)
	}
	if got := eval[string](b, `document.querySelector('#pipelines-table tbody tr').dataset.pipeline`); !strings.HasSuffix(got, "ingest.toml:1") {
		t.Errorf("pipeline name: got %q, want FILE:1", got)
	}
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
