package ingest_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/testsvc"
)

// longTests turns on the full-size end-to-end tests (2M messages).
var longTests = os.Getenv("QUIVER_LONG_TESTS") == "1"

// TestMain removes the quiver binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	testsvc.RemoveBuilt()
	os.Exit(code)
}

// ingestArgs are the arguments of a quiver ingest subprocess.
func ingestArgs(addrs []string, group, db, exportDir string, extra ...string) []string {
	proto, _ := filepath.Abs("testdata/events.proto")
	args := []string{"ingest",
		"--brokers", strings.Join(addrs, ","), "--topic", testTopic, "--group", group,
		"--proto", proto, "--message", "quiver.test.Flat", "--db", db, "--table", "events",
		"--flush-interval", "200ms", "--report-interval", "0", "--min-free-mb", "0",
		"--session-timeout", "6s", "--log-level", logLevel(),
	}
	if exportDir != "" {
		args = append(args, "--export-dir", exportDir)
	}
	return append(args, extra...)
}

// logLevel is the subprocesses' log level: info when keeping files for a
// post-mortem.
func logLevel() string {
	if os.Getenv("QUIVER_TEST_KEEP") != "" {
		return "info"
	}
	return "warn"
}

// startIngest starts quiver ingest; its output goes to the test log.
func startIngest(t *testing.T, bin string, args []string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// httpIngest is a quiver ingest subprocess that serves /metrics.
type httpIngest struct {
	cmd *exec.Cmd
	// Metrics is the URL of its /metrics page.
	Metrics string
	// Stdout is its standard output; read it after Wait.
	Stdout  bytes.Buffer
	stderr  bytes.Buffer
	scanned chan struct{}
}

// startIngestHTTP starts quiver ingest with args and --http on a free
// loopback port, and returns once it announced the port. The test fails
// if it exits or says nothing within 30 seconds.
func startIngestHTTP(t *testing.T, bin string, args []string) *httpIngest {
	t.Helper()
	p := &httpIngest{cmd: exec.Command(bin, append(args, "--http", "127.0.0.1:0")...), scanned: make(chan struct{})}
	p.cmd.Stdout = &p.Stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(p.scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.stderr.WriteString(sc.Text() + "\n")
			if a, ok := strings.CutPrefix(sc.Text(), "quiver: http listening on "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		p.Metrics = "http://" + a + "/metrics"
		return p
	case <-p.scanned:
		err := p.Wait()
		t.Fatalf("quiver ingest exited before serving metrics: %v\n%s", err, p.Stderr())
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		p.Wait()
		t.Fatalf("no 'quiver: http listening on' line\n%s", p.Stderr())
	}
	return nil
}

// Wait waits for the process to exit, after its standard error has been
// read to the end.
func (p *httpIngest) Wait() error {
	<-p.scanned
	return p.cmd.Wait()
}

// Stderr is what the process wrote to standard error; complete once Wait
// returned.
func (p *httpIngest) Stderr() string { return p.stderr.String() }

// verifyExactlyOnce checks that the live files, their sealed segments and
// the Parquet exports hold message ids 0..n-1 exactly once, each under a
// distinct (partition, offset).
func verifyExactlyOnce(t *testing.T, n int, dbs []string, exportDir string) {
	t.Helper()
	files := append([]string{}, dbs...)
	for _, db := range dbs {
		segs, err := segment.Sealed(db)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range segs {
			t.Logf("sealed segment left for the next start: %s", s.ID)
			files = append(files, s.Path)
		}
	}
	var parts []string
	for i := range files {
		parts = append(parts, fmt.Sprintf("SELECT id, _partition, _offset FROM db%d.events", i))
	}
	if exportDir != "" {
		glob := filepath.Join(exportDir, "events", "**", "*.parquet")
		if m, _ := filepath.Glob(filepath.Join(exportDir, "events", "*", "*.parquet")); len(m) > 0 {
			parts = append(parts, fmt.Sprintf("SELECT id, _partition, _offset FROM read_parquet('%s', hive_partitioning = true)", glob))
			t.Logf("%d parquet files", len(m))
		}
	}
	all := "(" + strings.Join(parts, " UNION ALL ") + ")"
	got := query(t, files, "SELECT count(*), count(DISTINCT id), count(DISTINCT (_partition, _offset)), min(id), max(id) FROM "+all)
	want := []string{fmt.Sprint(n), fmt.Sprint(n), fmt.Sprint(n), "0", fmt.Sprint(n - 1)}
	if fmt.Sprint(got[0]) != fmt.Sprint(want) {
		t.Errorf("rows, distinct ids, distinct (partition, offset), min id, max id: got %v, want %v", got[0], want)
		dups := query(t, files, "SELECT _partition, _offset, count(*) FROM "+all+" GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL LIMIT 5")
		t.Errorf("first duplicates: %v", dups)
	}
}

func TestIngest_ExactlyOnceKill9(t *testing.T) {
	n := 200_000
	if longTests {
		n = 2_000_000
	}
	const parts = 4
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	if keep := os.Getenv("QUIVER_TEST_KEEP"); keep != "" {
		dir = keep // leave the files for a post-mortem
	}
	db, exportDir := filepath.Join(dir, "live.duckdb"), filepath.Join(dir, "lake")

	// Produce in waves while quiver runs and gets killed.
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		const waves = 20
		for w := 0; w < waves; w++ {
			produce(t, addrs, parts, flatValues(t, md, w*n/waves, (w+1)*n/waves), time.Unix(1_740_000_000+int64(w*n/waves), 0))
			time.Sleep(400 * time.Millisecond)
		}
	}()

	args := ingestArgs(addrs, "exactly-once", db, exportDir,
		"--instance-id", "eo-test", "--batch-rows", "20000", "--rotate-mb", "4", "--rotate-age", "700ms")
	// Kill moments spread over the ingest: up to 3s apart for 200k
	// messages, proportionally more for the long run.
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill schedule seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	maxDelay := 3000 * max(1, n/200_000) / 2
	if n <= 200_000 {
		maxDelay = 3000
	}
	for k := 0; k < 5; k++ {
		cmd, out := startIngest(t, bin, args)
		delay := time.Duration(300+rng.IntN(maxDelay-300)) * time.Millisecond
		time.Sleep(delay)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		t.Logf("kill -9 #%d after %s", k+1, delay)
		if s := strings.TrimSpace(out.String()); s != "" {
			t.Logf("output before kill:\n%s", s)
		}
		if os.Getenv("QUIVER_TEST_KEEP") != "" {
			logState(t, db, exportDir)
		}
	}
	<-produced

	// A last run drains the topic, exports what was rotated, and exits.
	cmd, out := startIngest(t, bin, append(args, "--idle-exit", "3s"))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("final run: %v\n%s", err, out.String())
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("final run did not finish\n%s", out.String())
	}
	t.Logf("final run report:\n%s", out.String())
	verifyExactlyOnce(t, n, []string{db}, exportDir)
}

func TestIngest_TwoProcessesOneGroup(t *testing.T) {
	const n, parts = 60_000, 6
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	dbA, dbB := filepath.Join(dir, "a.duckdb"), filepath.Join(dir, "b.duckdb")

	produce(t, addrs, parts, flatValues(t, md, 0, n/4), time.Now())
	extra := []string{"--idle-exit", "3s", "--batch-rows", "5000"}
	a, outA := startIngest(t, bin, ingestArgs(addrs, "shared", dbA, "", extra...))
	time.Sleep(1500 * time.Millisecond)
	// B joins while A consumes: A hands some partitions over (after its
	// next heartbeat) and keeps the rest.
	b, outB := startIngest(t, bin, ingestArgs(addrs, "shared", dbB, "", extra...))
	for w := 1; w < 4; w++ {
		time.Sleep(time.Second)
		produce(t, addrs, parts, flatValues(t, md, w*n/4, (w+1)*n/4), time.Now())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, p := range []struct {
		name string
		cmd  *exec.Cmd
		out  *bytes.Buffer
	}{{"A", a, outA}, {"B", b, outB}} {
		errc := make(chan error, 1)
		go func() { errc <- p.cmd.Wait() }()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("process %s: %v\n%s", p.name, err, p.out.String())
			}
		case <-ctx.Done():
			_ = p.cmd.Process.Kill()
			t.Fatalf("process %s did not finish\n%s", p.name, p.out.String())
		}
		t.Logf("process %s:\n%s", p.name, p.out.String())
	}
	if !strings.Contains(outA.String()+outB.String(), "other processes share this consumer group") {
		t.Errorf("neither process warned that the group is shared without a lake")
	}
	for _, db := range []string{dbA, dbB} {
		if got := one(t, []string{db}, "SELECT count(*) FROM db0.events"); got == "0" {
			t.Errorf("%s ingested nothing: the partitions were not shared", filepath.Base(db))
		}
	}
	verifyExactlyOnce(t, n, []string{dbA, dbB}, "")
}

// logState logs where rows are, for a post-mortem (QUIVER_TEST_KEEP).
func logState(t *testing.T, db, exportDir string) {
	t.Helper()
	files := []string{db}
	segs, _ := segment.Sealed(db)
	for _, s := range segs {
		files = append(files, s.Path)
	}
	for _, f := range files {
		if one(t, []string{f}, "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'db0' AND table_name = 'events'") == "0" {
			t.Logf("%s: no tables yet", filepath.Base(f))
			continue
		}
		t.Logf("%s: %v", filepath.Base(f), query(t, []string{f}, `SELECT count(*), count(DISTINCT (_partition, _offset)), (SELECT list(("partition", m) ORDER BY "partition") FROM (SELECT "partition", max(next_offset) m FROM db0._quiver_offsets GROUP BY ALL)) FROM db0.events`))
	}
	glob := filepath.Join(exportDir, "events", "**", "*.parquet")
	if m, _ := filepath.Glob(filepath.Join(exportDir, "events", "*", "*.parquet")); len(m) > 0 {
		t.Logf("parquet: %v", query(t, nil, fmt.Sprintf("SELECT count(*), count(DISTINCT (_partition, _offset)), min(_offset), max(_offset) FROM read_parquet('%s')", glob)))
	}
}

// TestIngest_LongSharedGroupWithoutLake shows what --lake is for: three
// processes in one group, each with its own database and no lake, two of
// them killed with kill -9 while partitions move between them. Each
// process keeps its offsets in its own database, so a moved partition
// restarts from Kafka's committed offset, which can lag what the dead
// process had stored: rows can be ingested twice. The test logs the
// figures and checks that nothing is lost and that the processes warned.
func TestIngest_LongSharedGroupWithoutLake(t *testing.T) {
	if !longTests {
		t.Skip("QUIVER_LONG_TESTS=1 runs it (make long-test)")
	}
	const n, parts = 300_000, 6
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	dbs := []string{filepath.Join(dir, "a.duckdb"), filepath.Join(dir, "b.duckdb"), filepath.Join(dir, "c.duckdb")}
	args := func(i int, extra ...string) []string {
		return ingestArgs(addrs, "shared-nolake", dbs[i], "", append([]string{"--batch-rows", "5000", "--instance-id", "none"}, extra...)...)
	}
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for w := 0; w < 10; w++ {
			produce(t, addrs, parts, flatValues(t, md, w*n/10, (w+1)*n/10), time.Now())
			time.Sleep(300 * time.Millisecond)
		}
	}()
	procs := make([]*exec.Cmd, 3)
	outs := make([]*bytes.Buffer, 3)
	for i := range procs {
		procs[i], outs[i] = startIngest(t, bin, args(i))
	}
	var warned bool
	for k, i := range []int{1, 2} {
		time.Sleep(1500 * time.Millisecond)
		_ = procs[i].Process.Signal(syscall.SIGKILL)
		_ = procs[i].Wait()
		warned = warned || strings.Contains(outs[i].String(), "other processes share this consumer group")
		t.Logf("kill -9 #%d: process %d", k+1, i)
		time.Sleep(7 * time.Second) // past the 6 s session: its partitions move
		procs[i], outs[i] = startIngest(t, bin, args(i))
	}
	<-produced
	for i, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
		_ = p.Wait()
		warned = warned || strings.Contains(outs[i].String(), "other processes share this consumer group")
	}
	// The final runs share the group too; their warnings count, since a
	// process warns only once its assignment is in and the group described,
	// which a killed process may not have lived to do.
	var wg sync.WaitGroup
	finals := make([]*bytes.Buffer, len(procs))
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd, out := startIngest(t, bin, args(i, "--idle-exit", "4s"))
			if err := cmd.Wait(); err != nil {
				t.Errorf("final run %d: %v\n%s", i, err, out)
			}
			finals[i] = out
		}()
	}
	wg.Wait()
	for _, out := range finals {
		warned = warned || strings.Contains(out.String(), "other processes share this consumer group")
	}
	var parts2 []string
	for i := range dbs {
		parts2 = append(parts2, fmt.Sprintf("SELECT _partition, _offset FROM db%d.events", i))
	}
	all := "(" + strings.Join(parts2, " UNION ALL ") + ")"
	got := query(t, dbs, "SELECT count(*), count(DISTINCT (_partition, _offset)) FROM "+all)
	t.Logf("without a lake, 3 processes, 2 kill -9s: %s rows for %s distinct messages (%d produced)", got[0][0], got[0][1], n)
	if got[0][1] != fmt.Sprint(n) {
		t.Errorf("distinct messages: got %s, want %d (lost rows)", got[0][1], n)
	}
	if !warned {
		t.Errorf("no process warned that the group is shared without a lake")
	}
}
