package bench

import (
	"context"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	duckdbgo "github.com/duckdb/duckdb-go/v2"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/serveproc"
	"github.com/quiverdata/quiver/internal/workload"
)

// IngestConfig configures the ingest suite.
type IngestConfig struct {
	Rows int
	// Appender also times duckdb-go's row Appender (slow: a cell at a time).
	Appender bool
	Bin      string
	Reps     int
}

// Ingest times bulk ingest of the flat 14-column rows into a file
// database: Flight DoPut (CommandStatementIngest) against DuckDB's native
// INSERT INTO t2 SELECT * FROM t of the same rows on the same server, and
// optionally duckdb-go's row Appender.
func Ingest(ctx context.Context, cfg IngestConfig) (*report.Report, error) {
	recs, size := workload.Flat14(cfg.Rows)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	dir, err := os.MkdirTemp("", "quiver-bench-ingest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := serveproc.Start(ctx, cfg.Bin, filepath.Join(dir, "ingest.duckdb"), false)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rows := int64(cfg.Rows)

	doput := report.Contender{Name: "Flight DoPut", Run: func() (report.Sample, error) {
		if _, err := c.Exec(ctx, fmt.Sprintf(workload.Flat14DDL, "t")); err != nil {
			return report.Sample{}, err
		}
		return report.Timed(func() (int64, int64, error) {
			rdr, err := array.NewRecordReader(recs[0].Schema(), recs)
			if err != nil {
				return 0, 0, err
			}
			defer rdr.Release()
			n, err := c.Ingest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: "t", TableDefinitionOptions: &flightsql.TableDefinitionOptions{
				IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail,
				IfExists:   flightsql.TableDefinitionOptionsTableExistsOptionAppend,
			}})
			if err == nil && n != rows {
				err = fmt.Errorf("ingested %d rows, want %d", n, rows)
			}
			return size, n, err
		})
	}}
	native := report.Contender{Name: "DuckDB INSERT … SELECT", Run: func() (report.Sample, error) {
		if _, err := c.Exec(ctx, fmt.Sprintf(workload.Flat14DDL, "t2")); err != nil {
			return report.Sample{}, err
		}
		return report.Timed(func() (int64, int64, error) {
			n, err := c.Exec(ctx, "INSERT INTO t2 SELECT * FROM t")
			if err == nil && n != rows {
				err = fmt.Errorf("inserted %d rows, want %d", n, rows)
			}
			return size, n, err
		})
	}}
	cs := []report.Contender{doput, native}
	if cfg.Appender {
		app, closeApp, err := appenderContender(ctx, filepath.Join(dir, "appender.duckdb"), recs, size)
		if err != nil {
			return nil, err
		}
		defer closeApp()
		cs = append(cs, app)
	}
	// The native insert needs t filled: DoPut runs first in each round.
	stats, err := report.Alternate(cfg.Reps, cs...)
	if err != nil {
		return nil, err
	}
	r := &report.Report{Suite: "ingest", Reps: cfg.Reps}
	t := &report.Table{
		Title:   fmt.Sprintf("Ingest: %s rows × 14 columns (10 BIGINT, 4 VARCHAR) into a file database", report.FmtRows(rows)),
		Note:    "DoPut goes through quiver's server over loopback; the native insert copies the same rows inside the same server.",
		Columns: []string{"path", "ms", "rows/s", "MB/s", "vs native"},
	}
	for _, s := range stats {
		r.Add("ingest", "flat14", s)
		t.Rows = append(t.Rows, []string{s.Name, report.FmtMS(s), report.FmtRate(s.RowsPerSec()), report.FmtMBps(s), report.FmtX(s.RowsPerSec() / stats[1].RowsPerSec())})
		t.Bars = append(t.Bars, report.Bar{Group: "flat14 " + report.FmtRows(rows), Series: s.Name, Value: s.RowsPerSec(), Unit: "rows/s"})
	}
	r.Tables = append(r.Tables, t)
	return r, nil
}

// appenderContender times duckdb-go's row Appender into its own file
// database in this process.
func appenderContender(ctx context.Context, path string, recs []arrow.RecordBatch, size int64) (report.Contender, func(), error) {
	connector, err := duckdbgo.NewConnector(path, nil)
	if err != nil {
		return report.Contender{}, nil, fmt.Errorf("open duckdb-go: %w", err)
	}
	conn, err := connector.Connect(ctx)
	if err != nil {
		connector.Close()
		return report.Contender{}, nil, err
	}
	closeAll := func() { conn.Close(); connector.Close() }
	exec := conn.(driver.ExecerContext)
	run := func() (report.Sample, error) {
		if _, err := exec.ExecContext(ctx, fmt.Sprintf(workload.Flat14DDL, "t"), nil); err != nil {
			return report.Sample{}, err
		}
		return report.Timed(func() (int64, int64, error) {
			app, err := duckdbgo.NewAppenderFromConn(conn, "", "t")
			if err != nil {
				return 0, 0, err
			}
			row := make([]driver.Value, 14)
			var n int64
			for _, rec := range recs {
				cols := rec.Columns()
				for i := 0; i < int(rec.NumRows()); i++ {
					for c := 0; c < 10; c++ {
						row[c] = cols[c].(*array.Int64).Value(i)
					}
					for c := 0; c < 4; c++ {
						row[10+c] = cols[10+c].(*array.String).Value(i)
					}
					if err := app.AppendRow(row...); err != nil {
						app.Close()
						return 0, 0, err
					}
					n++
				}
			}
			return size, n, app.Close()
		})
	}
	return report.Contender{Name: "duckdb-go row Appender", Run: run}, closeAll, nil
}
