package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/workload"
)

func TestPartRows(t *testing.T) {
	for _, tt := range []struct{ n, mod, v, want int64 }{
		{0, 100, 7, 0},
		{7, 100, 7, 0},
		{8, 100, 7, 1},
		{100, 100, 7, 1},
		{107, 100, 7, 1},
		{108, 100, 7, 2},
		{10_000_000, 100, 7, 100_000},
		{200_000, 100, 7, 2_000},
	} {
		if got := partRows(tt.n, tt.mod, tt.v); got != tt.want {
			t.Errorf("partRows(%d, %d, %d): got %d, want %d", tt.n, tt.mod, tt.v, got, tt.want)
		}
	}
}

func TestPruningRow(t *testing.T) {
	t.Run("share per scan", func(t *testing.T) {
		// Two scans (the planning and the fetch) of 1 file of 100, each
		// 1.5 MB of a 150 MB snapshot.
		row, err := pruningRow("num20_part", "part = 7", 100_000, 100, 2, 2, 3e6, 300e6)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"num20_part", "part = 7", "100k", "1 of 100", "1.5", "150.0", "1.00%", "≤ 2%"}
		if strings.Join(row, "|") != strings.Join(want, "|") {
			t.Errorf("got %q, want %q", row, want)
		}
	})
	t.Run("no scan counted", func(t *testing.T) {
		if _, err := pruningRow("t", "p", 1, 1, 0, 0, 0, 0); err == nil || !strings.Contains(err.Error(), "no lake scan") {
			t.Errorf("got %v, want an error saying no scan was counted", err)
		}
	})
}

func TestLakeFiles_CopyOptions(t *testing.T) {
	var f LakeFiles
	f.defaults()
	if f.Bytes != 32<<20 || f.RowGroups != 4 || f.String() != "zstd Parquet V2" {
		t.Errorf("defaults: got %d bytes, %d row groups, %s; want 32 MiB or 4 row groups of zstd Parquet V2, as quiver ingest writes", f.Bytes, f.RowGroups, f)
	}
	opts, err := f.copyOptions()
	if got, want := strings.Join(opts, ", "), "COMPRESSION zstd, COMPRESSION_LEVEL 1, PARQUET_VERSION V2"; err != nil || got != want {
		t.Errorf("defaults: got %q, %v; want %q", got, err, want)
	}
	for _, c := range LakeFileCompressions {
		for _, v := range segment.ParquetVersions {
			opts, err := LakeFiles{Compression: c, ParquetVersion: v}.copyOptions()
			if err != nil || !strings.Contains(opts[0], "COMPRESSION "+c) || opts[len(opts)-1] != "PARQUET_VERSION "+v {
				t.Errorf("%s %s: got %q, %v", c, v, opts, err)
			}
		}
	}
	for _, f := range []LakeFiles{{Compression: "brotli", ParquetVersion: "V1"}, {Compression: "zstd", ParquetVersion: "V3"}} {
		if _, err := f.copyOptions(); err == nil {
			t.Errorf("%s: got no error", f)
		}
	}
}

func TestScrapeMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `# HELP quiver_lake_scan_bytes_total Bytes.
# TYPE quiver_lake_scan_bytes_total counter
quiver_lake_scan_bytes_total 1.2345e+06
quiver_lake_scan_bytes_total_other 9
quiver_flight_calls_total{method="DoGet",code="OK"} 3
quiver_lake_scans_total 4
`)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	got, err := scrapeMetrics(context.Background(), addr, "", "", "quiver_lake_scan_bytes_total", "quiver_lake_scans_total", "quiver_missing")
	if err != nil {
		t.Fatal(err)
	}
	if got["quiver_lake_scan_bytes_total"] != 1234500 || got["quiver_lake_scans_total"] != 4 || got["quiver_missing"] != 0 {
		t.Errorf("got %v", got)
	}
	if _, err := scrapeMetrics(context.Background(), addr+"/nope", "", "", "x"); err == nil {
		t.Error("a 404: got no error")
	}
}

func TestNSProc_Announced(t *testing.T) {
	p := &nsProc{}
	p.log.WriteString("time=… level=WARN msg=x\nquiver: flight listening on 127.0.0.1:4242\nquiver: http listening on 127.0.0.1:9999\n")
	if got := p.announced("flight"); got != "127.0.0.1:4242" {
		t.Errorf("flight: got %q", got)
	}
	if got := p.announced("mysql"); got != "" {
		t.Errorf("mysql: got %q, want nothing", got)
	}
}

// TestLakeRead_Small runs the lakeread suite with 200k rows: a lake built
// with DuckDB's Parquet writer, served by quiver serve --lake, fetched by
// the Go client against the local table, and the pruning figure.
func TestLakeRead_Small(t *testing.T) {
	if testing.Short() {
		t.Skip("builds quiver and runs a server")
	}
	bin := testsvc.QuiverBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const rows = 200_000
	// Small files and parts, so the scan is split as at full size.
	rep, err := LakeRead(ctx, LakeReadConfig{
		Bin: bin, Workloads: []workload.Workload{workload.Workloads["num20"], workload.Workloads["str20"]}, Rows: rows, Reps: 1,
		Dir: t.TempDir(), Files: LakeFiles{Bytes: 4 << 20}, PartBytes: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != 2 {
		t.Fatalf("got %d tables, want the scan's and the pruning's", len(rep.Tables))
	}
	scan, prune := rep.Tables[0], rep.Tables[1]
	if len(scan.Rows) != 4 {
		t.Errorf("scan table: %d rows, want lake and local for 2 workloads", len(scan.Rows))
	}
	for _, row := range scan.Rows {
		if row[2] == "lake" && row[1] == "200k" && row[3] == "1" && row[0] == "num20" {
			t.Logf("the num20 lake scan had one endpoint: is the multi-endpoint planner in this build?")
		}
	}
	for _, r := range rep.Results {
		if r.Table == "lakeread" && r.Rows != rows {
			t.Errorf("%s %s: %d rows, want %d", r.Case, r.Contender, r.Rows, rows)
		}
	}
	if len(prune.Rows) != 1 {
		t.Fatalf("pruning table: %d rows, want 1", len(prune.Rows))
	}
	row := prune.Rows[0]
	var share float64
	if _, err := fmt.Sscanf(row[6], "%f%%", &share); err != nil {
		t.Fatalf("share %q: %v", row[6], err)
	}
	if share <= 0 || share > 2 {
		t.Errorf("pruned scan read %.2f%% of the snapshot's bytes, want (0, 2]", share)
	}
	var b strings.Builder
	rep.Print(&b)
	t.Log("\n" + b.String())
}

func TestFmtMB(t *testing.T) {
	for n, want := range map[int64]string{17_400: "17 kB", 300_000: "0.3 MB", 7_100_000: "7.1 MB", 206_000_000: "206 MB"} {
		if got := fmtMB(n); got != want {
			t.Errorf("fmtMB(%d) = %q, want %q", n, got, want)
		}
	}
}
