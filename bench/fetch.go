package bench

import (
	"context"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	duckdbgo "github.com/duckdb/duckdb-go/v2"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/serveproc"
	"github.com/quiverdata/quiver/internal/workload"
	"github.com/quiverdata/quiver/ipcx"
	"github.com/quiverdata/quiver/mempool"
)

// FetchConfig configures the fetch suite.
type FetchConfig struct {
	Workloads []workload.Workload
	Sizes     []int64
	// Protocols to time end to end: "flight", "mysql".
	Protocols []string
	// Bin is the quiver binary to run as the server.
	Bin string
	// MariaDB, when set, is "HOST:PORT:USER:PASSWORD" of a MariaDB holding
	// the same rows, for the MySQL comparison.
	MariaDB string
	// SkipEngine skips the in-process engine-export table.
	SkipEngine bool
	Reps       int
	Dir        string // scratch directory for the server's database
}

// Fetch times a result fetched over Flight against mysql --quick (and
// MariaDB) on the same rows, and adds the engine export comparison and
// the end-to-end share of raw TCP.
func Fetch(ctx context.Context, cfg FetchConfig) (*report.Report, error) {
	r := &report.Report{Suite: "fetch", Reps: cfg.Reps}
	maxRows := int64(0)
	for _, n := range cfg.Sizes {
		maxRows = max(maxRows, n)
	}
	if !cfg.SkipEngine {
		if err := engineExport(ctx, cfg, maxRows, r); err != nil {
			return nil, err
		}
	}
	if err := protocolFetch(ctx, cfg, maxRows, r); err != nil {
		return nil, err
	}
	return r, nil
}

// engineExport times DuckDB → Arrow batches in-process: quiver's streaming
// vector copy against duckdb-go's Arrow.QueryContext, each on its own
// in-memory database holding the same generated rows.
func engineExport(ctx context.Context, cfg FetchConfig, maxRows int64, r *report.Report) error {
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:"})
	if err != nil {
		return err
	}
	defer db.Close()
	qc, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer qc.Release()

	// The baseline gets the optimizer setting quiver's engine uses (see
	// engine.Options.LateMaterialization), so the comparison is of the
	// export paths alone.
	connector, err := duckdbgo.NewConnector("", func(ex driver.ExecerContext) error {
		_, err := ex.ExecContext(ctx, "SET disabled_optimizers = 'late_materialization'", nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("open duckdb-go: %w", err)
	}
	defer connector.Close()
	dconn, err := connector.Connect(ctx)
	if err != nil {
		return fmt.Errorf("connect duckdb-go: %w", err)
	}
	defer dconn.Close()
	ar, err := duckdbgo.NewArrowFromConn(dconn)
	if err != nil {
		return fmt.Errorf("duckdb-go arrow: %w", err)
	}
	// Both databases hold the tables in memory, and duckdb-go
	// materialises a result: sizes that would not fit are reported, not
	// run.
	fit := engineFit(cfg, memAvailable())
	if fit > 0 {
		for _, table := range tablesOf(cfg.Workloads) {
			if _, err := qc.Exec(ctx, workload.CreateSQL(table, fit)); err != nil {
				return fmt.Errorf("generate %s: %w", table, err)
			}
			if _, err := dconn.(driver.ExecerContext).ExecContext(ctx, workload.CreateSQL(table, fit), nil); err != nil {
				return fmt.Errorf("generate %s in duckdb-go: %w", table, err)
			}
		}
	}
	t := &report.Table{
		Title:   "Engine export: DuckDB table → Arrow record batches, in-process",
		Note:    "quiver's streaming vector copy against duckdb-go's Arrow.QueryContext (materialises, then converts per 2,048-row chunk).",
		Columns: []string{"workload", "rows", "quiver ms", "MB/s", "duckdb-go ms", "MB/s", "speedup"},
	}
	for _, w := range cfg.Workloads {
		for _, n := range cfg.Sizes {
			if n > fit {
				need := engineNeed(cfg, n)
				t.Rows = append(t.Rows, []string{w.Name, report.FmtRows(n), "not run", "", "", "", ""})
				t.Footer = strings.TrimPrefix(t.Footer+"\n"+fmt.Sprintf("%s/%s not run: two in-memory copies of the tables and duckdb-go's materialised result need about %s; %s is available.",
					w.Name, report.FmtRows(n), fmtGB(need), fmtGB(memAvailable())), "\n")
				continue
			}
			q := w.Query(n)
			quiver := report.Contender{Name: "quiver engine", Run: func() (report.Sample, error) {
				return report.Timed(func() (int64, int64, error) {
					// The bench discards each batch, as DoGet does once
					// it is sent: strings may come from recycled memory.
					rows, err := qc.QueryTransient(ctx, q)
					if err != nil {
						return 0, 0, err
					}
					defer rows.Close()
					return drainReader(rows)
				})
			}}
			base := report.Contender{Name: "duckdb-go Arrow", Run: func() (report.Sample, error) {
				return report.Timed(func() (int64, int64, error) {
					rdr, err := ar.QueryContext(ctx, q)
					if err != nil {
						return 0, 0, err
					}
					defer rdr.Release()
					return drainReader(rdr)
				})
			}}
			stats, err := report.Alternate(cfg.Reps, quiver, base)
			if err != nil {
				return err
			}
			cas := fmt.Sprintf("%s/%s", w.Name, report.FmtRows(n))
			r.Add("engine", cas, stats[0])
			r.Add("engine", cas, stats[1])
			x := report.Ratio(stats[0], stats[1])
			t.Rows = append(t.Rows, []string{w.Name, report.FmtRows(n), report.FmtMS(stats[0]), report.FmtMBps(stats[0]), report.FmtMS(stats[1]), report.FmtMBps(stats[1]), report.FmtX(x)})
			t.Bars = append(t.Bars,
				report.Bar{Group: cas, Series: "quiver engine", Value: stats[0].MBps(), Unit: "MB/s"},
				report.Bar{Group: cas, Series: "duckdb-go Arrow", Value: stats[1].MBps(), Unit: "MB/s"})
		}
	}
	r.Tables = append(r.Tables, t)
	return nil
}

// engineNeed is about the memory the engine table needs at n rows: two
// in-memory copies of each table, and duckdb-go's materialised result
// of the widest workload (its Arrow conversion about as much again).
func engineNeed(cfg FetchConfig, n int64) int64 {
	var need, widest int64
	for _, table := range tablesOf(cfg.Workloads) {
		need += 2 * n * tableRowBytes(table)
		widest = max(widest, tableRowBytes(table))
	}
	return need + 2*n*widest
}

// engineFit is the largest of cfg's sizes whose engine table fits in
// half of avail bytes, or 0.
func engineFit(cfg FetchConfig, avail int64) int64 {
	var fit int64
	for _, n := range cfg.Sizes {
		if engineNeed(cfg, n) <= avail/2 {
			fit = max(fit, n)
		}
	}
	return fit
}

func tablesOf(ws []workload.Workload) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range ws {
		if !seen[w.Table] {
			seen[w.Table] = true
			out = append(out, w.Table)
		}
	}
	return out
}

// drainReader reads every batch and counts Arrow buffer bytes and rows.
func drainReader(rdr array.RecordReader) (int64, int64, error) {
	var bytes, rows int64
	for rdr.Next() {
		rec := rdr.RecordBatch()
		bytes += ipcx.RecordBytes(rec)
		rows += rec.NumRows()
	}
	return bytes, rows, rdr.Err()
}

// protocolFetch runs a quiver server process and times each protocol
// fetching the same rows, plus raw TCP moving the Flight byte count.
func protocolFetch(ctx context.Context, cfg FetchConfig, maxRows int64, r *report.Report) error {
	wantMySQL := hasProto(cfg.Protocols, "mysql")
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "quiver-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	srv, err := serveproc.Start(ctx, cfg.Bin, filepath.Join(dir, "bench.duckdb"), wantMySQL)
	if err != nil {
		return err
	}
	defer srv.Stop()
	// The bench keeps nothing of a batch it has released, so batches of
	// every workload, strings included, may come from recycled memory
	// (client.Config.Allocator).
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr, Allocator: mempool.New()})
	if err != nil {
		return err
	}
	defer c.Close()
	for _, table := range tablesOf(cfg.Workloads) {
		if _, err := c.Exec(ctx, workload.CreateSQL(table, maxRows)); err != nil {
			return fmt.Errorf("generate %s: %w", table, err)
		}
	}
	if cfg.MariaDB != "" && wantMySQL {
		if err := loadMariaDB(ctx, c, cfg.MariaDB, dir, tablesOf(cfg.Workloads)); err != nil {
			return err
		}
	}
	tcpAddr, stopTCP, err := startTCPSink()
	if err != nil {
		return err
	}
	defer stopTCP()

	cols := []string{"workload", "rows"}
	if wantMySQL {
		cols = append(cols, "mysql --quick ms")
		if cfg.MariaDB != "" {
			cols = append(cols, "MariaDB ms")
		}
	}
	cols = append(cols, "Flight ms", "Flight MB/s", "Flight rows/s", "server RSS MB", "client RSS MB")
	if wantMySQL {
		cols = append(cols, "speedup")
		if cfg.MariaDB != "" {
			cols = append(cols, "vs MariaDB")
		}
	}
	cols = append(cols, "raw TCP MB/s", "Flight/TCP")
	t := &report.Table{
		Title:   "Protocol fetch: client fetches the result and discards it",
		Note:    "Same server process and rows. mysql is Debian's mariadb-client; Flight is quiver's Go client holding Arrow batches. RSS columns: the peak resident memory of the server and of the client (this process) during the Flight fetches, sampled every 20 ms.",
		Columns: cols,
	}
	for _, w := range cfg.Workloads {
		for _, n := range cfg.Sizes {
			q := w.Query(n)
			var cs []report.Contender
			var serverPeak, clientPeak int64
			flight := report.Contender{Name: "Flight", Run: func() (report.Sample, error) {
				watch := watchRSS(srv)
				defer func() {
					sp, cp := watch.Stop()
					serverPeak, clientPeak = max(serverPeak, sp), max(clientPeak, cp)
				}()
				return report.Timed(func() (int64, int64, error) {
					res, err := c.Query(ctx, q)
					if err != nil {
						return 0, 0, err
					}
					defer res.Release()
					return drainReader(res)
				})
			}}
			cs = append(cs, flight)
			if wantMySQL {
				cs = append(cs, mysqlCLI("mysql --quick", srv.MySQLAddr, "", "", "main", q, n))
				if cfg.MariaDB != "" {
					host, user, pw := splitMariaDB(cfg.MariaDB)
					cs = append(cs, mysqlCLI("MariaDB", host, user, pw, "quiver_bench", q, n))
				}
			}
			// Raw TCP moves the bytes Flight moved (known after a warm-up).
			warm, err := flight.Run()
			if err != nil {
				return err
			}
			cs = append(cs, report.Contender{Name: "raw TCP", Run: func() (report.Sample, error) {
				return report.Timed(func() (int64, int64, error) { return runTCP(tcpAddr, warm.Bytes) })
			}})
			stats, err := report.Alternate(cfg.Reps, cs...)
			if err != nil {
				return err
			}
			cas := fmt.Sprintf("%s/%s", w.Name, report.FmtRows(n))
			for _, s := range stats {
				r.Add("fetch", cas, s)
			}
			fl, tcp := stats[0], stats[len(stats)-1]
			row := []string{w.Name, report.FmtRows(n)}
			if wantMySQL {
				row = append(row, report.FmtMS(stats[1]))
				if cfg.MariaDB != "" {
					row = append(row, report.FmtMS(stats[2]))
				}
			}
			row = append(row, report.FmtMS(fl), report.FmtMBps(fl), report.FmtRate(fl.RowsPerSec()), fmt.Sprint(serverPeak>>20), fmt.Sprint(clientPeak>>20))
			if wantMySQL {
				row = append(row, report.FmtX(report.Ratio(fl, stats[1])))
				if cfg.MariaDB != "" {
					row = append(row, report.FmtX(report.Ratio(fl, stats[2])))
				}
			}
			row = append(row, report.FmtMBps(tcp), report.FmtX(fl.MBps()/tcp.MBps()))
			t.Rows = append(t.Rows, row)
			for _, s := range stats[:len(stats)-1] {
				t.Bars = append(t.Bars, report.Bar{Group: cas, Series: s.Name, Value: s.Median().Seconds() * 1000, Unit: "ms (lower is better)"})
			}
		}
	}
	r.Tables = append(r.Tables, t)
	return nil
}

func hasProto(ps []string, p string) bool {
	for _, x := range ps {
		if strings.EqualFold(x, p) {
			return true
		}
	}
	return false
}

func splitMariaDB(dsn string) (hostPort, user, password string) {
	parts := strings.SplitN(dsn, ":", 4)
	if len(parts) < 2 {
		return dsn, "", ""
	}
	hostPort = parts[0] + ":" + parts[1]
	if len(parts) > 2 {
		user = parts[2]
	}
	if len(parts) > 3 {
		password = parts[3]
	}
	return
}
