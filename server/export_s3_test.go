package server_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

// TestExport_S3Root exports to an s3:// export root on a real object
// store (SeaweedFS on 127.0.0.1) over Flight and MySQL, reads each object
// back, and checks the refusals and that a failed export leaves nothing.
func TestExport_S3Root(t *testing.T) {
	testsvc.ClearAWSEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"exports"}})
	s3 := lake.S3Config{Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true, AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey}
	env := &exportEnv{audit: &syncbuf.Buffer{}}
	env.srv = testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "q.duckdb"), MySQLAddr: "127.0.0.1:0",
		ExportRoot: "s3://exports/q/", ExportS3: s3,
		Security: server.Security{Users: exportUsers, AuditLog: slog.New(slog.NewTextHandler(env.audit, nil))},
	})
	admin := testutil.Dial(t, env.srv, client.Config{User: "admin", Password: "adminpw"})
	ctx := context.Background()
	if _, err := admin.Exec(ctx, "CREATE TABLE facts AS SELECT range AS n, 'row ' || range AS s FROM range(1000)"); err != nil {
		t.Fatal(err)
	}
	fsys, err := iceio.LoadFS(ctx, map[string]string{
		iceio.S3EndpointURL: sw.S3URL, iceio.S3Region: sw.Region, iceio.S3AccessKeyID: sw.AccessKey,
		iceio.S3SecretAccessKey: sw.SecretKey, iceio.S3ForceVirtualAddressing: "false",
	}, "s3://exports")
	if err != nil {
		t.Fatal(err)
	}
	rw := exportUsers[1]
	for _, p := range exportPaths {
		t.Run(p.name, func(t *testing.T) {
			uri := "s3://exports/q/" + p.name + "/daily/facts.parquet"
			n, err := p.run(t, env, rw, "COPY (SELECT * FROM facts WHERE n % 2 = 0) TO '"+uri+"' (FORMAT parquet, COMPRESSION zstd)")
			if err != nil {
				t.Fatalf("export: %v", err)
			}
			if n != 500 {
				t.Errorf("export reported %d rows, want 500", n)
			}
			rows, sum := readParquetObject(t, fsys, uri)
			if rows != 500 || sum != 249500 {
				t.Errorf("%s: %d rows summing to %d, want 500 summing to 249500", uri, rows, sum)
			}
		})
	}
	if !strings.Contains(env.audit.String(), "s3://exports/q/flight/daily/facts.parquet") {
		t.Errorf("the audit log does not name the export's URI:\n%s", env.audit.String())
	}

	for _, tt := range []struct{ name, target, want string }{
		{"outside the prefix", "s3://exports/other/x.parquet", "not under the root"},
		{"a prefix that only starts alike", "s3://exports/qq/x.parquet", "not under the root"},
		{"climbs out", "s3://exports/q/a/../../x.parquet", `".."`},
		{"empty element", "s3://exports/q/a//x.parquet", "empty"},
		{"the root itself", "s3://exports/q", "not under the root"},
		{"a local path", "/tmp/x.parquet", "Cannot access file"}, // DuckDB's own sandbox refuses it first
	} {
		for _, p := range exportPaths {
			t.Run(tt.name+"/"+p.name, func(t *testing.T) {
				_, err := p.run(t, env, rw, "COPY facts TO '"+tt.target+"' (FORMAT parquet)")
				if err == nil || !p.denied(err) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want a permission error saying %q", err, tt.want)
				}
			})
		}
	}
	t.Run("read-only user", func(t *testing.T) {
		_, err := exportPaths[0].run(t, env, exportUsers[2], "COPY facts TO 's3://exports/q/bi.parquet' (FORMAT parquet)")
		if !isPermissionDenied(err) {
			t.Fatalf("got %v, want PERMISSION_DENIED", err)
		}
	})
	t.Run("root overlapping the lake", func(t *testing.T) {
		lake := &server.LakeConfig{Iceberg: lake.Config{Warehouse: "s3://exports/lake",
			CatalogURI: "sqlite:///" + filepath.Join(t.TempDir(), "catalog.db"), S3: s3}}
		for _, root := range []string{"s3://exports/lake/out", "s3://exports", "s3://exports/lake"} {
			cfg := server.Config{DB: ":memory:", FlightAddr: "127.0.0.1:0", ExportRoot: root, Lake: lake,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			srv, err := server.Start(ctx, cfg)
			if err == nil {
				srv.Shutdown(ctx)
				t.Fatalf("--export-root %s with the lake at s3://exports/lake: the server started", root)
			}
			if !strings.Contains(err.Error(), "overlaps the lake's warehouse") {
				t.Errorf("--export-root %s: got %v, want a refusal naming the overlap", root, err)
			}
		}
	})
	t.Run("failed export leaves nothing", func(t *testing.T) {
		uri := "s3://exports/q/failed/x.parquet"
		_, err := exportPaths[0].run(t, env, rw, "COPY (SELECT CASE WHEN n = 999 THEN error('boom') ELSE n END AS n FROM facts) TO '"+uri+"' (FORMAT parquet)")
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("got %v, want the query's error", err)
		}
		if f, err := fsys.Open(uri); err == nil {
			f.Close()
			t.Fatalf("%s exists after a failed export", uri)
		}
	})
}

// readParquetObject reads a Parquet object and returns its rows and the
// sum of its column n.
func readParquetObject(t *testing.T, fsys iceio.IO, uri string) (rows, sum int64) {
	t.Helper()
	f, err := fsys.Open(uri)
	if err != nil {
		t.Fatalf("open %s: %v", uri, err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	defer pf.Close()
	mem := testmem.Checked(t)
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, mem)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	col := tbl.Column(0)
	for _, c := range col.Data().Chunks() {
		for _, v := range c.(*array.Int64).Int64Values() {
			sum += v
		}
	}
	return tbl.NumRows(), sum
}

// TestExport_S3UploadFails exports to an s3:// root whose store has
// stopped by the time of the export: DuckDB writes the file, its upload fails,
// and the client gets an error that says nothing was exported, the
// staged file is removed, and the failure is counted.
func TestExport_S3UploadFails(t *testing.T) {
	testsvc.ClearAWSEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"gone"}})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the server's staging directory goes here
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "q.duckdb"), ExportRoot: "s3://gone/q",
		ExportS3: lake.S3Config{Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true, AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey},
		Security: server.Security{Users: exportUsers},
	})
	sw.Stop()

	failed := map[string]string{"result": "failed"}
	failedBefore, _ := testutil.Metric(t, "quiver_export_uploads_total", failed)
	rw := exportUsers[1]
	c := testutil.Dial(t, srv, client.Config{User: rw.Name, Password: rw.Password})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.Exec(ctx, "COPY (SELECT range AS n FROM range(1000)) TO 's3://gone/q/x.parquet' (FORMAT parquet)")
	if err == nil || !strings.Contains(err.Error(), "export to s3://gone/q/x.parquet: the file was written but its upload failed, so nothing is there") {
		t.Fatalf("got %v, want the upload's failure", err)
	}
	if got, _ := testutil.Metric(t, "quiver_export_uploads_total", failed); got-failedBefore != 1 {
		t.Errorf("quiver_export_uploads_total{result=\"failed\"} moved by %v, want 1", got-failedBefore)
	}
	staged, err := filepath.Glob(filepath.Join(tmp, "quiver-export-staging-*", "*"))
	if err != nil || len(staged) != 0 {
		t.Errorf("staged files left behind: %v %v", staged, err)
	}
	// The connection is still good.
	if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
		t.Errorf("after the failed export: %v", err)
	}
}
