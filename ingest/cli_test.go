package ingest_test

import (
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quiverdata/quiver/internal/testsvc"
)

// TestIngestCLI_Errors checks that bad flags and a bad schema or topic
// fail at start with exit status 2 and a one-line reason.
func TestIngestCLI_Errors(t *testing.T) {
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, 1)
	dir := t.TempDir()
	db := filepath.Join(dir, "x.duckdb")
	base := func(extra ...string) []string { return ingestArgs(addrs, "g", db, "", extra...) }
	replace := func(args []string, flag, value string) []string {
		out := append([]string{}, args...)
		for i := range out {
			if out[i] == flag {
				out[i+1] = value
			}
		}
		return out
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no flags", []string{"ingest"}, "--brokers is required"},
		{"unknown flag", base("--nope"), "flag provided but not defined"},
		{"negative batch", base("--batch-rows", "-5"), "--batch-rows cannot be negative"},
		{"negative partition fetch", base("--fetch-partition-mb", "-1"), "--fetch-partition-mb cannot be negative"},
		{"negative queue bytes", base("--queue-mb", "-1"), "--queue-mb cannot be negative"},
		{"queue smaller than a batch", base("--queue-mb", "100"), "queue of 100 MiB cannot hold one batch of up to 256 MiB"},
		{"rotation without export dir", base("--rotate-mb", "10"), "--rotate-mb needs --export-dir"},
		{"parquet version without export dir", base("--parquet-version", "V1"), "--parquet-version needs --export-dir or --lake"},
		{"unknown parquet version", base("--export-dir", filepath.Join(dir, "lake"), "--parquet-version", "V3"), `--parquet-version: unknown Parquet version "V3": use V1 or V2`},
		{"bad partition spec", append(base("--export-dir", filepath.Join(dir, "lake")), "--partition-by", "dt=f("), "--partition-by"},
		{"unknown message", replace(base(), "--message", "quiver.test.Nope"), "unknown message"},
		{"missing proto", replace(base(), "--proto", filepath.Join(dir, "none.proto")), "--proto"},
		{"bad normalizer", base("--normalize", "nope[].x"), "normaliz"},
		{"unknown topic", replace(base(), "--topic", "nope"), `topic "nope" does not exist`},
		{"reserved column", replace(base(), "--table", "_quiver_x"), "reserved"},
		{"bad partition column", append(base("--export-dir", filepath.Join(dir, "lake")), "--partition-by", "d=year(nope)"), "partition keys"},
		{"lake and export dir", base("--lake", "file://"+dir+"/lake", "--export-dir", filepath.Join(dir, "x")), "--lake and --export-dir cannot be used together"},
		{"lake with two clients", base("--lake", "file://"+dir+"/lake", "--kafka-clients", "2"), "--kafka-clients 1"},
		{"catalog without lake", base("--catalog", "sqlite:///x.db"), "--catalog needs --lake"},
		{"relative lake", base("--lake", "file://lake"), "use file:///absolute/dir or s3://bucket/prefix"},
		{"lake scheme", base("--lake", "gs://b/p"), "use file:///absolute/dir or s3://bucket/prefix"},
		{"lake partition transform", base("--lake", "file://"+dir+"/lake", "--partition-by", "month(_timestamp)"), "unknown transform"},
		{"lake partition expression", base("--lake", "file://"+dir+"/lake", "--partition-by", "d=year(_timestamp)"), "has no Iceberg transform"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(bin, tt.args...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("got %v, want exit status 2\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(lastLines(string(out))), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) || !strings.HasPrefix(lines[0], "quiver ingest: ") {
				t.Errorf("got %q, want one line containing %q", out, tt.want)
			}
		})
	}
}

// lastLines drops log lines (time=… or DuckDB warnings), keeping what the
// command itself printed.
func lastLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "quiver ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestIngestCLI_Metrics runs quiver ingest with --http and reads /metrics
// while it ingests.
func TestIngestCLI_Metrics(t *testing.T) {
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, 2)
	md := compile(t, "Flat")
	produce(t, addrs, 2, flatValues(t, md, 0, 5000), time.Now())
	dir := t.TempDir()
	p := startIngestHTTP(t, bin, ingestArgs(addrs, "m", filepath.Join(dir, "m.duckdb"), "",
		"--idle-exit", "2s", "--batch-rows", "1000", "--report-interval", "500ms", "--log-level", "info"))
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(p.Metrics)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if strings.Contains(body, "quiver_ingest_records_total 5000") {
			break
		}
	}
	for _, want := range []string{"quiver_ingest_records_total 5000", "quiver_ingest_records_per_second",
		"quiver_ingest_total_rows_per_second", "quiver_ingest_transfer_rate_bytes_per_second",
		"quiver_ingest_duckdb_files_total", `quiver_ingest_next_offset{partition="0",topic="events"} 2500`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("quiver ingest: %v\n%s", err, p.Stderr())
	}
	if !strings.Contains(p.Stderr(), `msg="ingest report"`) || !strings.Contains(p.Stdout.String(), "records:                5_000.00") {
		t.Errorf("missing periodic or final report:\nstderr:\n%s\nstdout:\n%s", p.Stderr(), p.Stdout.String())
	}
}

// TestIngestCLI_SIGTERM checks a graceful stop: exit status 0, the final
// report on stdout, and a database whose offsets match its rows exactly.
func TestIngestCLI_SIGTERM(t *testing.T) {
	bin := testsvc.QuiverBinary(t)
	const parts = 3
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	produce(t, addrs, parts, flatValues(t, md, 0, 30_000), time.Now())
	db := filepath.Join(t.TempDir(), "s.duckdb")
	cmd, out := startIngest(t, bin, ingestArgs(addrs, "term", db, "", "--batch-rows", "2000"))
	time.Sleep(3 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: got %v, want status 0\n%s", err, out)
		}
	case <-time.After(40 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no exit after SIGTERM\n%s", out)
	}
	if !strings.Contains(out.String(), "records_per_second:") {
		t.Errorf("no final report:\n%s", out)
	}
	// Each partition's stored position is exactly its row count: the rows
	// are a gap-free prefix of the partition and nothing is pending.
	got := one(t, []string{db}, `SELECT count(*) FROM (SELECT _partition, count(*) AS n, max(_offset) + 1 AS m FROM db0.events GROUP BY ALL) r
		FULL JOIN (SELECT "partition", max(next_offset) AS next FROM db0._quiver_offsets GROUP BY ALL) o ON r._partition = o."partition"
		WHERE r.n IS DISTINCT FROM o.next OR r.m IS DISTINCT FROM o.next`)
	if got != "0" {
		t.Errorf("partitions whose offsets do not match their rows: %s", got)
	}
}
