package ingest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/lake"
)

// servedProc is a quiver serve subprocess.
type servedProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	flight chan string // its Flight address, once announced
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe starts quiver serve with args and env added to the test's
// environment; the test's end kills it if it still runs.
func startServe(t *testing.T, bin string, env []string, args ...string) *servedProc {
	t.Helper()
	p := &servedProc{cmd: exec.Command(bin, append([]string{"serve"}, args...)...), out: &syncBuffer{}, flight: make(chan string, 1)}
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.out, line)
			if addr, ok := strings.CutPrefix(line, "quiver: flight listening on "); ok {
				p.flight <- addr
			}
		}
		_, _ = io.Copy(p.out, stderr)
	}()
	return p
}

// kill kills the process with SIGKILL and reaps it; a second kill does
// nothing.
func (p *servedProc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// ready waits until the server announced its Flight address and returns
// it; the test fails if that takes 60 seconds.
func (p *servedProc) ready(t *testing.T) string {
	t.Helper()
	select {
	case a := <-p.flight:
		return a
	case <-time.After(60 * time.Second):
		p.kill()
		t.Fatalf("quiver serve did not announce its Flight address in 60 s\n%s", p.out)
		return ""
	}
}

// snapshotWatch polls a lake table's snapshots as a reader would, and
// checks each one it finds is a whole commit: it holds as many rows as
// the group's offsets it carries add up to (every message is one row, as
// in tests without bad messages), so rows never show up without their
// offsets or the other way round.
type snapshotWatch struct {
	mu      sync.Mutex
	seen    map[int64]bool
	bad     []string
	stop    chan struct{}
	stopped chan struct{}
}

// watchSnapshots polls the events table of the lake cfg opens every
// 200 ms until the returned watch is stopped.
func watchSnapshots(t *testing.T, cfg lake.Config, group string) *snapshotWatch {
	t.Helper()
	w := &snapshotWatch{seen: map[int64]bool{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	key := lake.OffsetsKey(group, testTopic)
	go func() {
		defer close(w.stopped)
		lk, err := lake.Open(context.Background(), cfg)
		if err != nil {
			w.fail("open the lake: %v", err)
			return
		}
		defer lk.Close()
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			tb, err := lk.Table(ctx, "quiver", "events", nil, nil)
			if err == nil {
				if tbl, err := tb.Iceberg(ctx); err == nil {
					for _, s := range tbl.Metadata().Snapshots() {
						if w.checked(s.SnapshotID) || s.Summary == nil {
							continue
						}
						rows, _ := strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
						var offs map[int32]int64
						_ = json.Unmarshal([]byte(s.Summary.Properties[key]), &offs)
						var sum int64
						for _, o := range offs {
							sum += o
						}
						if rows != sum {
							w.fail("snapshot %d (%s): %d rows, offsets %v add up to %d", s.SnapshotID, s.Summary.Operation, rows, offs, sum)
						}
					}
				}
			}
			cancel() // the store may be down or the table not made yet: look again later
		}
	}()
	t.Cleanup(w.close)
	return w
}

func (w *snapshotWatch) checked(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[id] {
		return true
	}
	w.seen[id] = true
	return false
}

func (w *snapshotWatch) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bad = append(w.bad, fmt.Sprintf(format, args...))
}

func (w *snapshotWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.stopped
}

// check stops the watch and fails the test for every partial snapshot it
// saw, or when it saw fewer than min snapshots.
func (w *snapshotWatch) check(t *testing.T, min int) {
	t.Helper()
	w.close()
	for _, b := range w.bad {
		t.Error("a reader saw a partial commit: " + b)
	}
	if len(w.seen) < min {
		t.Errorf("the reader saw %d snapshots, want at least %d", len(w.seen), min)
	}
	t.Logf("a polling reader checked %d snapshots", len(w.seen))
}

// servedWatch polls a served database over Flight while quiver serve
// runs, and checks every answer is made of whole commits: the rows of
// each partition are its offsets from 0 up, with none missing or twice.
type servedWatch struct {
	polls, bad int
	first      string
}

// poll runs until stop is closed or the server goes away.
func (w *servedWatch) poll(addr string, stop <-chan struct{}) {
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Config{Addr: addr})
	if err != nil {
		return
	}
	defer c.Close()
	const q = `SELECT coalesce(sum(CASE WHEN n = hi + 1 AND n = d THEN 0 ELSE 1 END), 0)::BIGINT, coalesce(string_agg(format('p{} {} rows {} distinct, max {}', p, n, d, hi), '; '), '')
	  FROM (SELECT _partition AS p, count(*) AS n, count(DISTINCT _offset) AS d, max(_offset) AS hi FROM events GROUP BY 1)`
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := c.Query(qctx, q)
		if err != nil {
			cancel()
			continue // not ingesting yet, or being killed
		}
		for r.Next() {
			rec := r.RecordBatch()
			if rec.NumRows() == 0 {
				continue
			}
			w.polls++
			if rec.Column(0).(*array.Int64).Value(0) != 0 {
				w.bad++
				if w.first == "" {
					w.first = rec.Column(1).(*array.String).Value(0)
				}
			}
		}
		r.Release()
		cancel()
	}
}

// TestServe_LakeKill9 kills quiver serve --ingest with kill -9 at random
// moments while messages flow into its served database and from there to
// a lake, whose compactor rewrites files, expires snapshots and deletes
// orphans meanwhile. Nothing is lost or duplicated in the served
// database or in the lake, every snapshot of the lake carries the
// group's offsets, and readers polling the served database over Flight
// and the lake's snapshots never see a partial commit.
func TestServe_LakeKill9(t *testing.T) {
	n := 60_000
	if longTests {
		n = 600_000
	}
	const parts = 3
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	proto, _ := filepath.Abs("testdata/events.proto")
	lakeDir := filepath.Join(dir, "lake")
	warehouse := "file://" + filepath.ToSlash(lakeDir)
	file := filepath.Join(dir, "ingest.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`[[pipeline]]
brokers = %q
topic = %q
group = "serve-kill"
instance-id = "serve-kill"
session-timeout = "6s"
proto = %q
message = "quiver.test.Flat"
table = "events"
batch-rows = 5000
flush-interval = "200ms"
min-free-mb = 0
lake = %q
commit-interval = "300ms"
compact-interval = "400ms"
target-file-mb = 1
snapshot-retention = "2s"
`, strings.Join(addrs, ","), testTopic, proto, warehouse)), 0o644); err != nil {
		t.Fatal(err)
	}
	served := filepath.Join(dir, "served.duckdb")
	args := []string{"--db", served, "--flight", "127.0.0.1:0", "--mysql", "", "--http", "", "--ingest", file, "--log-level", logLevel()}

	produced := make(chan struct{})
	go func() {
		defer close(produced)
		// Spread over the kills below (about 2.5 s apart): n/waves is
		// divisible by parts.
		const waves = 20
		for w := 0; w < waves; w++ {
			produce(t, addrs, parts, flatValues(t, md, w*n/waves, (w+1)*n/waves), time.Unix(1_740_000_000+int64(w*n/waves), 0))
			time.Sleep(600 * time.Millisecond)
		}
	}()
	snaps := watchSnapshots(t, lake.Config{Warehouse: warehouse}, "serve-kill")
	var reader servedWatch
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill schedule seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	lk := openTestLake(t, lakeDir)
	var progress []int64
	for k := 0; k < 5; k++ {
		p := startServe(t, bin, nil, args...)
		addr := p.ready(t)
		stop, polled := make(chan struct{}), make(chan struct{})
		go func() { defer close(polled); reader.poll(addr, stop) }()
		// The server is up and its pipeline consuming: the kill lands
		// somewhere in a batch, a lake commit or a compaction.
		delay := time.Duration(300+rng.IntN(1500)) * time.Millisecond
		time.Sleep(delay)
		p.kill()
		close(stop)
		<-polled
		progress = append(progress, lakeSum(lk, "serve-kill"))
		t.Logf("kill -9 #%d %s after the server was ready; the lake holds %d messages", k+1, delay, progress[k])
		if testing.Verbose() {
			t.Logf("output:\n%s", p.out)
		}
	}
	<-produced
	if progress[len(progress)-1] == 0 {
		t.Fatalf("nothing reached the lake before the last kill: the kills did not land mid-ingest")
	}

	// A last run catches up with the topic and the lake, and stops
	// cleanly.
	p := startServe(t, bin, nil, args...)
	addr := p.ready(t)
	stop, polled := make(chan struct{}), make(chan struct{})
	go func() { defer close(polled); reader.poll(addr, stop) }()
	deadline := time.Now().Add(3 * time.Minute)
	for lakeSum(lk, "serve-kill") != int64(n) && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	close(stop)
	<-polled
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("final run: %v\n%s", err, p.out)
	}
	if got := lakeSum(lk, "serve-kill"); got != int64(n) {
		t.Fatalf("the lake holds %d of %d messages after 3 minutes\n%s", got, n, p.out)
	}
	snaps.check(t, 5)
	if reader.polls == 0 || reader.bad > 0 {
		t.Errorf("Flight reader: %d of %d answers were not whole commits (first: %s)", reader.bad, reader.polls, reader.first)
	}
	t.Logf("a Flight reader polled the served database %d times", reader.polls)
	if got := one(t, []string{served}, "SELECT count(*) || '/' || count(DISTINCT (_partition, _offset)) FROM db0.events"); got != fmt.Sprintf("%d/%d", n, n) {
		t.Errorf("served database: rows/distinct messages %s, want %d/%d", got, n, n)
	}
	checkExactlyOnce(t, lk, "serve-kill", n, parts, nil)
	checkSnapshotOffsets(t, lk, "serve-kill")
	// Files the kills left unreferenced (uploads and compactions cut
	// short) are orphans, which the compactor deletes once old enough:
	// deleting them all now changes nothing the table holds.
	deleteOrphans(t, lk)
	checkExactlyOnce(t, lk, "serve-kill", n, parts, nil)
}

// lakeSum is how many messages of the test topic the lake's events table
// holds by its offsets for group, 0 when it cannot tell yet.
func lakeSum(lk *lake.Lake, group string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tb, err := lk.Table(ctx, "quiver", "events", nil, nil)
	if err != nil {
		return 0
	}
	ends, err := tb.CommittedOffsets(ctx, group, testTopic)
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range ends {
		sum += e
	}
	return sum
}

// checkSnapshotOffsets checks every snapshot the events table keeps
// carries the group's offsets.
func checkSnapshotOffsets(t *testing.T, lk *lake.Lake, group string) {
	t.Helper()
	tb, err := lk.Table(context.Background(), "quiver", "events", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ice, err := tb.Iceberg(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	key := lake.OffsetsKey(group, testTopic)
	for _, s := range ice.Metadata().Snapshots() {
		if s.Summary == nil || s.Summary.Properties[key] == "" {
			t.Errorf("snapshot %d (%v) carries no offsets", s.SnapshotID, s.Summary)
		}
	}
}

// deleteOrphans deletes every file the events table does not reference.
func deleteOrphans(t *testing.T, lk *lake.Lake) {
	t.Helper()
	tb, err := lk.Table(context.Background(), "quiver", "events", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := tb.Orphans(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d orphan files after the kills", len(o.Files))
}

// TestServe_LakeCrashBetweenTables crashes quiver serve --ingest right
// after the first of a lake commit's tables (the dead letters) committed
// and before the main table did. The restarted server commits the main
// table from its first row: a partition only one table holds is not yet
// in the lake, whatever the other table's offsets say.
func TestServe_LakeCrashBetweenTables(t *testing.T) {
	const n, parts = 3_000, 3
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	proto, _ := filepath.Abs("testdata/events.proto")
	lakeDir := filepath.Join(dir, "lake")
	file := filepath.Join(dir, "ingest.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`[[pipeline]]
brokers = %q
topic = %q
group = "between"
proto = %q
message = "quiver.test.Flat"
table = "events"
flush-interval = "100ms"
min-free-mb = 0
lake = %q
commit-interval = "500ms"
`, strings.Join(addrs, ","), testTopic, proto, "file://"+filepath.ToSlash(lakeDir))), 0o644); err != nil {
		t.Fatal(err)
	}
	produce(t, addrs, parts, flatValues(t, md, 0, n), time.Unix(1_740_000_000, 0))
	args := []string{"--db", filepath.Join(dir, "served.duckdb"), "--flight", "127.0.0.1:0", "--mysql", "", "--http", "", "--ingest", file, "--log-level", logLevel()}

	p := startServe(t, bin, []string{ingest.CrashEnv + "=lake-after-commit"}, args...)
	p.ready(t)
	crashed := make(chan error, 1)
	go func() { crashed <- p.cmd.Wait() }()
	select {
	case err := <-crashed:
		if err == nil {
			t.Fatalf("the server exited cleanly, want a crash at lake-after-commit\n%s", p.out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not reach lake-after-commit in 60 s\n%s", p.out)
	}
	lk := openTestLake(t, lakeDir)
	if got := lakeSum(lk, "between"); got != 0 {
		t.Fatalf("the main table holds %d messages after the crash, want 0: the crash came after it committed", got)
	}

	p = startServe(t, bin, nil, args...)
	p.ready(t)
	deadline := time.Now().Add(time.Minute)
	for lakeSum(lk, "between") != n && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("restarted server: %v\n%s", err, p.out)
	}
	if got := lakeSum(lk, "between"); got != n {
		t.Fatalf("the lake's offsets hold %d of %d messages after a minute\n%s", got, n, p.out)
	}
	checkExactlyOnce(t, lk, "between", n, parts, nil)
}
