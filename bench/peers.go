package bench

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/internal/serveproc"
	"github.com/quiverdata/quiver/internal/workload"
	"github.com/quiverdata/quiver/mempool"
)

// peerFiles are the Python side of the peers suite: the C++ Flight peer,
// the Quack server and client, and the pins of their venv.
//
//go:embed peers/flight_peer.py peers/quack_bench.py peers/requirements.txt
var peerFiles embed.FS

// PeerRequirements is the pinned requirements file of the peers' venv.
func PeerRequirements() []byte {
	b, _ := peerFiles.ReadFile("peers/requirements.txt")
	return b
}

// PeersConfig configures the peers suite.
type PeersConfig struct {
	// Bin is the quiver binary to run as the server; Python is the venv's
	// python (PythonVenv with PeerRequirements).
	Bin, Python string
	// Flight and Quack pick the comparisons to run.
	Flight, Quack bool
	// Num20Rows and Str20Rows size the fetched tables.
	Num20Rows, Str20Rows int64
	// PeerBatchRows is the C++ Flight peer's record batch size.
	PeerBatchRows int
	// PointRows is the point-query table's size; Points the queries timed.
	PointRows int64
	Points    int
	// InsertWindow is how long each insert round runs, with each of
	// InsertClients client processes.
	InsertWindow  time.Duration
	InsertClients []int
	// Reps alternated runs per figure, after Warmup untimed ones.
	Reps, Warmup int
	// Log takes the Python side's messages.
	Log io.Writer
}

// The quiver user of the suite: Quack takes a token, so quiver checks a
// user too.
const (
	peersUser     = "bench"
	peersPassword = "bench-password"
	quackToken    = "bench-token"
)

// peersInsertSQL is the single-row insert both servers take.
const peersInsertSQL = "INSERT INTO ins VALUES (?, 'x')"

// Peers runs quiver against its peers on the same machine and data: the
// C++ Flight stack (DuckDB's Arrow export streamed by pyarrow.flight), read
// by the same Go client, and DuckDB's own protocol, Quack, from Python.
func Peers(ctx context.Context, cfg PeersConfig) (*report.Report, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	r := &report.Report{Suite: "peers", Reps: cfg.Reps}
	dir, err := os.MkdirTemp("", "quiver-bench-peers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, f := range []string{"flight_peer.py", "quack_bench.py"} {
		b, _ := peerFiles.ReadFile("peers/" + f)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return nil, err
		}
	}
	setup := peerSetupSQL(cfg)
	srv, err := serveproc.Start(ctx, cfg.Bin, filepath.Join(dir, "quiver.duckdb"), false, "--user", peersUser, "--password", peersPassword)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr, User: peersUser, Password: peersPassword})
	if err != nil {
		return nil, err
	}
	for _, sql := range setup {
		if _, err := c.Exec(ctx, sql); err != nil {
			c.Close()
			return nil, fmt.Errorf("generate quiver's tables: %w", err)
		}
	}
	c.Close()
	if cfg.Flight {
		t, err := flightPeer(ctx, cfg, dir, srv, r)
		if err != nil {
			return nil, err
		}
		r.Tables = append(r.Tables, t)
	}
	if cfg.Quack {
		t, err := quackPeer(ctx, cfg, dir, srv.FlightAddr, setup, r)
		if err != nil {
			return nil, err
		}
		r.Tables = append(r.Tables, t)
	}
	return r, nil
}

// fetchSetupSQL generates the fetched tables, num and str, the same on
// every server.
func fetchSetupSQL(cfg PeersConfig) []string {
	return []string{workload.CreateSQL("num", cfg.Num20Rows), workload.CreateSQL("str", cfg.Str20Rows)}
}

// peerSetupSQL generates the tables of the comparisons cfg runs: the
// fetched ones, and for Quack the point-query table and the insert
// target.
func peerSetupSQL(cfg PeersConfig) []string {
	sqls := fetchSetupSQL(cfg)
	if cfg.Quack {
		sqls = append(sqls,
			fmt.Sprintf("CREATE OR REPLACE TABLE pt AS SELECT i AS id, 'val_' || i AS s FROM range(%d) t(i)", cfg.PointRows),
			"CREATE OR REPLACE TABLE ins (id BIGINT, s VARCHAR)")
	}
	return sqls
}

// peerFetches are the fetch cases of both comparisons: a plain scan of
// each table, the query a client most often sends and the one quiver
// plans as several endpoints.
func peerFetches(cfg PeersConfig) []peerFetch {
	return []peerFetch{
		{Workload: "num20", Rows: cfg.Num20Rows, SQL: "SELECT * FROM num"},
		{Workload: "str20", Rows: cfg.Str20Rows, SQL: "SELECT * FROM str"},
	}
}

type peerFetch struct {
	Workload string
	Rows     int64
	SQL      string
}

func (f peerFetch) Case() string { return f.Workload + "/" + report.FmtRows(f.Rows) }

// flightPeer times the same arrow-go Flight client fetching each table
// from quiver (its endpoints one after another, as arrow-go's flightsql
// client, pyarrow.flight and most hand-written clients read them) and
// from the C++ Flight peer (DoGet of its one ticket), alternated, with
// each server's CPU time per fetch read from /proc.
func flightPeer(ctx context.Context, cfg PeersConfig, dir string, srv *serveproc.Proc, r *report.Report) (*report.Table, error) {
	args := []string{filepath.Join(dir, "flight_peer.py"), "--db", filepath.Join(dir, "flight_peer.duckdb"),
		"--batch-rows", strconv.Itoa(cfg.PeerBatchRows)}
	for _, sql := range fetchSetupSQL(cfg) {
		args = append(args, "--setup", sql)
	}
	peer, err := startPyServer(ctx, "the C++ Flight peer", cfg.Python, peerReady, args...)
	if err != nil {
		return nil, err
	}
	defer peer.Stop()

	qc, qctx, err := dialFlightSQL(ctx, srv.FlightAddr, peersUser, peersPassword)
	if err != nil {
		return nil, err
	}
	defer qc.Close()
	pc, pctx, err := dialFlightSQL(ctx, peer.addr, "", "")
	if err != nil {
		return nil, err
	}
	defer pc.Close()

	t := &report.Table{
		Title: "quiver against the C++ Flight stack: the same Go client fetches a table and discards it",
		Note: fmt.Sprintf("Peer: DuckDB %s's Arrow record batch reader (%d-row batches) streamed by pyarrow.flight's RecordBatchStream, DoGet of one ticket. "+
			"quiver: Execute, then DoGet of each endpoint in order. Client: arrow-go's Flight SQL client with quiver's gRPC settings, on both. "+
			"Server CPU is the server process's user+system time over one fetch, from /proc.", peerDuckDBVersion, cfg.PeerBatchRows),
		Columns: []string{"workload", "rows", "endpoints", "quiver ms", "peer ms", "quiver rows/s", "peer rows/s",
			"quiver CPU-s", "peer CPU-s", "speed quiver/peer", "CPU quiver/peer"},
	}
	for _, f := range peerFetches(cfg) {
		var endpoints int
		quiver := report.Contender{Name: "quiver", Run: func() (report.Sample, error) {
			return cpuTimed(srv.Pid(), func() (int64, int64, error) { return fetchEndpoints(qctx, qc, f.SQL, &endpoints) })
		}}
		other := report.Contender{Name: "C++ Flight peer", Run: func() (report.Sample, error) {
			return cpuTimed(peer.Pid(), func() (int64, int64, error) {
				rdr, err := pc.DoGet(pctx, &flight.Ticket{Ticket: []byte(f.SQL)})
				if err != nil {
					return 0, 0, fmt.Errorf("doget: %w", err)
				}
				defer rdr.Release()
				return drainReader(rdr)
			})
		}}
		stats, err := report.Alternate(cfg.Reps, quiver, other)
		if err != nil {
			return nil, err
		}
		for _, s := range stats {
			if s.Rows() != f.Rows {
				return nil, fmt.Errorf("%s %s: fetched %d rows, want %d", s.Name, f.Case(), s.Rows(), f.Rows)
			}
			r.Add("flight", f.Case(), s)
		}
		t.Rows = append(t.Rows, flightPeerRow(f, endpoints, stats[0], stats[1]))
		for _, s := range stats {
			t.Bars = append(t.Bars, report.Bar{Group: f.Case(), Series: s.Name, Value: report.Millis(s.Median()), Unit: "ms (lower is better)"})
		}
	}
	t.Footer = "Targets: speed quiver/peer ≥ 1.5× on both, with CPU quiver/peer ≤ 0.7×."
	return t, nil
}

// peerReady bounds a peer's start, its tables generated. The full-size
// tables took the C++ Flight peer more than 10 minutes on a 2-core
// machine shared with other work, so the bound only catches a peer that
// hangs.
const peerReady = 30 * time.Minute

// peerDuckDBVersion is the DuckDB the peers run, pinned in
// peers/requirements.txt.
const peerDuckDBVersion = "1.5.5"

// flightPeerRow lays out one fetch of the C++ Flight comparison.
func flightPeerRow(f peerFetch, endpoints int, q, p report.Stat) []string {
	qcpu, pcpu := medianCPU(q), medianCPU(p)
	cpuRatio := "—"
	if pcpu > 0 {
		cpuRatio = report.FmtX(qcpu.Seconds() / pcpu.Seconds())
	}
	return []string{f.Workload, report.FmtRows(f.Rows), strconv.Itoa(endpoints), report.FmtMS(q), report.FmtMS(p),
		report.FmtRate(q.RowsPerSec()), report.FmtRate(p.RowsPerSec()),
		fmt.Sprintf("%.2f", qcpu.Seconds()), fmt.Sprintf("%.2f", pcpu.Seconds()),
		report.FmtX(report.Ratio(q, p)), cpuRatio}
}

// medianCPU is the median server CPU time of s's runs.
func medianCPU(s report.Stat) time.Duration {
	var v []time.Duration
	for _, x := range s.Samples {
		v = append(v, x.CPU)
	}
	return report.Median(v)
}

// cpuTimed times fn and reads process pid's CPU time around it.
func cpuTimed(pid int, fn func() (int64, int64, error)) (report.Sample, error) {
	before, _ := osfacts.ProcessCPU(pid)
	s, err := report.Timed(fn)
	after, _ := osfacts.ProcessCPU(pid)
	s.CPU = after - before
	return s, err
}

// fetchEndpoints runs sql on quiver and reads its endpoints one after
// another on the same connection, and sets *endpoints to their number.
func fetchEndpoints(ctx context.Context, c *flightsql.Client, sql string, endpoints *int) (int64, int64, error) {
	info, err := c.Execute(ctx, sql)
	if err != nil {
		return 0, 0, fmt.Errorf("execute: %w", err)
	}
	*endpoints = len(info.Endpoint)
	var bytes, rows int64
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			return 0, 0, fmt.Errorf("doget: %w", err)
		}
		b, n, err := drainReader(rdr)
		rdr.Release()
		if err != nil {
			return 0, 0, err
		}
		bytes, rows = bytes+b, rows+n
	}
	return bytes, rows, nil
}

// dialFlightSQL connects arrow-go's Flight SQL client with quiver's gRPC
// settings and, given a user, logs in; calls take the context it returns.
func dialFlightSQL(ctx context.Context, addr, user, password string) (*flightsql.Client, context.Context, error) {
	opts := append(client.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	c, err := flightsql.NewClientCtx(ctx, addr, nil, nil, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	// The bench drops each batch as soon as it is counted.
	c.Alloc = mempool.New()
	if user == "" {
		return c, ctx, nil
	}
	actx, err := c.Client.AuthenticateBasicToken(ctx, user, password)
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("log in to %s: %w", addr, err)
	}
	return c, actx, nil
}

// quackOutput is what quack_bench.py run prints.
type quackOutput struct {
	Versions map[string]string `json:"versions"`
	Fetch    []struct {
		Workload string               `json:"workload"`
		Rows     int64                `json:"rows"`
		Seconds  map[string][]float64 `json:"seconds"`
	} `json:"fetch"`
	// Point holds each contender's point-query latencies in seconds.
	Point  map[string][]float64 `json:"point"`
	Insert []struct {
		Clients  int                  `json:"clients"`
		RowsPerS map[string][]float64 `json:"rows_per_s"`
	} `json:"insert"`
}

// quackPeer runs DuckDB serving the same tables over Quack, and
// quack_bench.py timing Python clients of both servers.
func quackPeer(ctx context.Context, cfg PeersConfig, dir, quiverAddr string, setup []string, r *report.Report) (*report.Table, error) {
	script := filepath.Join(dir, "quack_bench.py")
	args := []string{script, "serve", "--db", filepath.Join(dir, "quack.duckdb"), "--token", quackToken}
	for _, sql := range setup {
		args = append(args, "--setup", sql)
	}
	quack, err := startPyServer(ctx, "the Quack server", cfg.Python, peerReady, args...)
	if err != nil {
		return nil, err
	}
	defer quack.Stop()
	args = []string{script, "run", "--quiver", quiverAddr, "--user", peersUser, "--password", peersPassword,
		"--quack", quack.addr, "--token", quackToken, "--reps", strconv.Itoa(cfg.Reps), "--warmup", strconv.Itoa(cfg.Warmup),
		"--point-sql", "SELECT * FROM pt WHERE id = ?", "--point-rows", strconv.FormatInt(cfg.PointRows, 10), "--points", strconv.Itoa(cfg.Points),
		"--insert-sql", peersInsertSQL, "--insert-window", strconv.FormatFloat(cfg.InsertWindow.Seconds(), 'f', -1, 64),
		"--insert-clients", joinInts(cfg.InsertClients)}
	for _, f := range peerFetches(cfg) {
		args = append(args, "--fetch", fmt.Sprintf("%s:%d:%s", f.Workload, f.Rows, f.SQL))
	}
	cmd := exec.CommandContext(ctx, cfg.Python, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, cfg.Log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("run quack_bench.py: %w", err)
	}
	var out quackOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("read quack_bench.py's output: %w", err)
	}
	return quackReport(out, cfg, r)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// quackReport lays out the Quack comparison as the call, each side's
// figure, and how many times faster quiver is (below 1: slower).
func quackReport(out quackOutput, cfg PeersConfig, r *report.Report) (*report.Table, error) {
	t := &report.Table{
		Title: "quiver against DuckDB's own protocol, Quack, from Python",
		Note: fmt.Sprintf("quiver: ADBC %s (Flight SQL), a user. Quack: DuckDB %s with the quack and httpfs extensions from their wheels, ATTACH 'quack:…' with a token. "+
			"pyarrow %s, Python %s. Fetches into a pyarrow Table; point queries and inserts with a bound parameter, autocommit; inserts from client processes for %s each round.",
			out.Versions["adbc_driver_flightsql"], out.Versions["duckdb"], out.Versions["pyarrow"], out.Versions["python"], cfg.InsertWindow),
		Columns: []string{"call", "quiver", "Quack", "quiver vs Quack"},
	}
	for _, f := range out.Fetch {
		cas := fmt.Sprintf("fetch %s/%s", f.Workload, report.FmtRows(f.Rows))
		q, k := secondsStat("quiver", f.Seconds["quiver"], f.Rows), secondsStat("Quack", f.Seconds["quack"], f.Rows)
		if len(q.Samples) == 0 || len(k.Samples) == 0 {
			return nil, fmt.Errorf("quack_bench.py gave no times for %s", cas)
		}
		r.Add("quack", cas, q)
		r.Add("quack", cas, k)
		t.Rows = append(t.Rows, []string{cas, fmtSeconds(q.Median()), fmtSeconds(k.Median()), fasterOrSlower(report.Ratio(q, k))})
		t.Bars = append(t.Bars, report.Bar{Group: cas, Series: "quiver", Value: report.Millis(q.Median()), Unit: "ms (lower is better)"},
			report.Bar{Group: cas, Series: "Quack", Value: report.Millis(k.Median()), Unit: "ms (lower is better)"})
	}
	q, k := secondsStat("quiver", out.Point["quiver"], 1), secondsStat("Quack", out.Point["quack"], 1)
	if len(q.Samples) == 0 || len(k.Samples) == 0 {
		return nil, fmt.Errorf("quack_bench.py gave no point-query latencies")
	}
	pointCase := fmt.Sprintf("point query (WHERE id = ?, %s rows)", report.FmtRows(cfg.PointRows))
	r.Add("quack", "point", q)
	r.Add("quack", "point", k)
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		qd, kd := quantile(q, p.q), quantile(k, p.q)
		t.Rows = append(t.Rows, []string{pointCase + ", " + p.name, fmtMillis(qd), fmtMillis(kd), fasterOrSlower(float64(kd) / float64(qd))})
	}
	for _, in := range out.Insert {
		qr, kr := report.Median(in.RowsPerS["quiver"]), report.Median(in.RowsPerS["quack"])
		if qr == 0 || kr == 0 {
			return nil, fmt.Errorf("no inserts at %d clients: quiver %.0f/s, Quack %.0f/s", in.Clients, qr, kr)
		}
		who := "1 client"
		if in.Clients != 1 {
			who = fmt.Sprintf("%d client processes", in.Clients)
		}
		cas := fmt.Sprintf("single-row INSERT, autocommit, %s", who)
		t.Rows = append(t.Rows, []string{cas, fmt.Sprintf("%.0f /s", qr), fmt.Sprintf("%.0f /s", kr), fasterOrSlower(qr / kr)})
		for _, x := range []struct {
			name string
			rate float64
		}{{"quiver", qr}, {"Quack", kr}} {
			r.Results = append(r.Results, report.Result{Table: "quack", Case: fmt.Sprintf("insert/%d", in.Clients), Contender: x.name, RowsPerS: x.rate})
		}
	}
	t.Footer = "Targets: fetches ≥ 2× (num20) and ≥ 4× (str20) faster; point-query p50 ≥ 2× faster; single-row inserts ≥ 1.5× at 1 and at 8 clients."
	return t, nil
}

// secondsStat makes a stat of durations in seconds, each moving rows.
func secondsStat(name string, secs []float64, rows int64) report.Stat {
	s := report.Stat{Name: name}
	for _, v := range secs {
		s.Samples = append(s.Samples, report.Sample{Dur: time.Duration(v * float64(time.Second)), Rows: rows})
	}
	return s
}

// quantile is the q-quantile of s's durations (nearest rank).
func quantile(s report.Stat, q float64) time.Duration {
	d := make([]time.Duration, len(s.Samples))
	for i, x := range s.Samples {
		d[i] = x.Dur
	}
	slices.Sort(d)
	i := int(q*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

func fmtSeconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func fmtMillis(d time.Duration) string { return fmt.Sprintf("%.1f ms", report.Millis(d)) }

// fasterOrSlower says how quiver compares, given its speed over Quack's.
func fasterOrSlower(x float64) string {
	if x >= 1 {
		return fmt.Sprintf("%.2f× faster", x)
	}
	return fmt.Sprintf("%.2f× (slower)", x)
}
