package ingest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/lake"
)

// steadyProducer produces flat messages in waves of a multiple of the
// partitions, message i to partition i % partitions, until stopped.
type steadyProducer struct {
	n    atomic.Int64 // messages produced so far
	stop chan struct{}
	done chan struct{}
}

// startProducing produces a wave of wave messages every pause.
func startProducing(t *testing.T, addrs []string, parts int32, wave int, pause time.Duration) *steadyProducer {
	t.Helper()
	md := compile(t, "Flat")
	p := &steadyProducer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			from := int(p.n.Load())
			produce(t, addrs, parts, flatValues(t, md, from, from+wave), time.Unix(1_740_000_000+int64(from), 0))
			p.n.Add(int64(wave))
			select {
			case <-p.stop:
				return
			case <-time.After(pause):
			}
		}
	}()
	t.Cleanup(func() { p.finish() })
	return p
}

// finish stops producing and returns how many messages were produced.
func (p *steadyProducer) finish() int {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	return int(p.n.Load())
}

// ingestProc is a quiver ingest subprocess of a fault test.
type ingestProc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed once it exited and was reaped
}

func startIngestProc(t *testing.T, bin string, args, env []string) *ingestProc {
	t.Helper()
	p := &ingestProc{cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	return p
}

// kill kills the process with SIGKILL, if it still runs, and reaps it.
func (p *ingestProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// killedItself reports whether the process died of SIGKILL.
func (p *ingestProc) killedItself() bool {
	st, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && st.Signaled() && st.Signal() == syscall.SIGKILL
}

// TestIngest_LakeCommitCompactKill9 runs two quiver ingest processes in
// one group that commit to a lake every 300 ms while the one consuming
// partition 0 compacts, expires snapshots and deletes orphans. They are
// made to kill themselves with kill -9 at each step of a commit and of a
// compaction, the Nth time they get there for a random N, and are killed
// at random moments besides; each comes straight back, as a supervisor
// would restart it. The lake ends with every message exactly once, every
// snapshot carries the group's offsets, and a reader polling the lake
// meanwhile never sees a snapshot whose rows and offsets disagree.
func TestIngest_LakeCommitCompactKill9(t *testing.T) {
	const parts = 4
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	dir := t.TempDir()
	lakeDir := filepath.Join(dir, "lake")
	warehouse := "file://" + filepath.ToSlash(lakeDir)
	const group = "fresh-kill"
	args := func(i int, extra ...string) []string {
		return ingestArgs(addrs, group, filepath.Join(dir, fmt.Sprintf("live%d.duckdb", i)), "",
			append([]string{"--lake", warehouse, "--instance-id", fmt.Sprintf("fresh-kill-%d", i), "--batch-rows", "2000",
				"--commit-interval", "300ms", "--compact-interval", "300ms", "--target-file-mb", "1",
				"--snapshot-retention", "3s", "--orphan-age", "10s"}, extra...)...)
	}
	prod := startProducing(t, addrs, parts, 2000, 250*time.Millisecond)
	snaps := watchSnapshots(t, lake.Config{Warehouse: warehouse}, group)
	lk := openTestLake(t, lakeDir)

	seed := uint64(time.Now().UnixNano())
	t.Logf("crash and kill schedule seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	procs := []*ingestProc{startIngestProc(t, bin, args(0), nil), startIngestProc(t, bin, args(1), nil)}
	// Each point is armed in both processes, since either may be the one
	// that compacts (it owns partition 0) or commits next; the first to
	// get there dies, and the other is killed at that moment too.
	for _, point := range []string{"compact-after-write", "compact-after-commit", "lake-after-upload", "lake-after-commit", "lake-before-delete", "compact-after-write"} {
		nth := 1 + rng.IntN(3)
		for i, p := range procs {
			p.kill()
			procs[i] = startIngestProc(t, bin, args(i), []string{ingest.CrashEnv + fmt.Sprintf("=%s:%d", point, nth)})
		}
		select {
		case <-procs[0].done:
		case <-procs[1].done:
		case <-time.After(60 * time.Second):
			t.Fatalf("no process reached %s %d times in 60 s\n%s\n%s", point, nth, procs[0].out, procs[1].out)
		}
		for i, p := range procs {
			select {
			case <-p.done:
				if !p.killedItself() {
					t.Fatalf("process %d exited at %s without a crash: %v\n%s", i, point, p.cmd.ProcessState, p.out)
				}
				t.Logf("process %d crashed at %s:%d; the lake holds %d messages", i, point, nth, lakeSum(lk, group))
			default:
			}
			p.kill()
			procs[i] = startIngestProc(t, bin, args(i), nil)
		}
	}
	for k := 0; k < 4; k++ {
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		i := rng.IntN(2)
		procs[i].kill()
		t.Logf("kill -9 #%d: process %d", k+1, i)
		procs[i] = startIngestProc(t, bin, args(i), nil)
	}
	n := prod.finish()
	time.Sleep(2 * time.Second) // the last ones started have set up their signal handling
	for i, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		if p.cmd.ProcessState.ExitCode() != 0 || testing.Verbose() {
			t.Logf("process %d at SIGTERM: %v\n%s", i, p.cmd.ProcessState, p.out)
		}
	}
	// One last run of each drains the rest.
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := startIngestProc(t, bin, args(i, "--idle-exit", "4s"), nil)
			select {
			case <-p.done:
				if p.cmd.ProcessState.ExitCode() != 0 {
					t.Errorf("final run %d: %v\n%s", i, p.cmd.ProcessState, p.out)
				}
			case <-time.After(3 * time.Minute):
				t.Errorf("final run %d did not finish in 3 minutes\n%s", i, p.out)
			}
		}()
	}
	wg.Wait()
	snaps.check(t, 10)
	checkExactlyOnce(t, lk, group, n, parts, nil)
	checkSnapshotOffsets(t, lk, group)
	deleteOrphans(t, lk)
	checkExactlyOnce(t, lk, group, n, parts, nil)
}

// TestServe_LakeStoreDown stops the object store (SeaweedFS, a real
// process) for 30 seconds under quiver serve --ingest feeding a lake on
// it: the served database keeps taking rows, readers of the served
// database see them meanwhile, the lake's commits and compactions fail
// and are tried again, and once the store is back the lake catches up
// with every message exactly once, its readers having seen only whole
// commits.
func TestServe_LakeStoreDown(t *testing.T) {
	testsvc.ClearAWSEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"lake"}})
	const parts = 3
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	dir := t.TempDir()
	proto, _ := filepath.Abs("testdata/events.proto")
	catalog := "sqlite:///" + filepath.ToSlash(filepath.Join(dir, "catalog.db"))
	const group = "store-down"
	file := filepath.Join(dir, "ingest.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`[[pipeline]]
brokers = %q
topic = %q
group = %q
proto = %q
message = "quiver.test.Flat"
table = "events"
batch-rows = 5000
flush-interval = "200ms"
min-free-mb = 0
lake = "s3://lake/down"
catalog = %q
s3-endpoint = %q
s3-region = %q
s3-path-style = true
commit-interval = "500ms"
compact-interval = "1s"
target-file-mb = 1
snapshot-retention = "5s"
`, strings.Join(addrs, ","), testTopic, group, proto, catalog, sw.S3URL, sw.Region)), 0o644); err != nil {
		t.Fatal(err)
	}
	lakeCfg := lake.Config{Warehouse: "s3://lake/down", CatalogURI: catalog, S3: lake.S3Config{
		Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true, AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey}}
	lk, err := lake.Open(context.Background(), lakeCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Close() })
	served := filepath.Join(dir, "served.duckdb")
	p := startServe(t, bin, []string{"AWS_ACCESS_KEY_ID=" + sw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + sw.SecretKey},
		"--db", served, "--flight", "127.0.0.1:0", "--mysql", "", "--http", "", "--ingest", file, "--log-level", "warn")
	addr := p.ready(t)
	c, err := client.Dial(context.Background(), client.Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	servedRows := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := c.Query(ctx, "SELECT count(*) FROM events")
		if err != nil {
			return -1
		}
		defer r.Release()
		var v int64 = -1
		for r.Next() {
			if r.RecordBatch().NumRows() > 0 {
				v = r.RecordBatch().Column(0).(*array.Int64).Value(0)
			}
		}
		return v
	}
	snaps := watchSnapshots(t, lakeCfg, group)
	var reader servedWatch
	stopReader, readerDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(readerDone); reader.poll(addr, stopReader) }()
	prod := startProducing(t, addrs, parts, 1500, 300*time.Millisecond)

	waitFor := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s\n%s", what, limit, p.out)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	waitFor("a first lake commit", 60*time.Second, func() bool { return lakeSum(lk, group) > 0 })
	time.Sleep(2 * time.Second) // some compactions too

	sw.Stop()
	down := time.Now()
	before := servedRows()
	t.Logf("object store down with %d rows served", before)
	time.Sleep(30 * time.Second)
	during := servedRows()
	if during <= before {
		t.Errorf("served rows while the object store was down: %d, then %d 30 s later; want more", before, during)
	}
	sw.Restart(t)
	t.Logf("object store back after %s; %d rows served meanwhile", time.Since(down).Round(time.Second), during-before)

	n := prod.finish()
	waitFor(fmt.Sprintf("the lake reaching %d messages", n), 3*time.Minute, func() bool { return lakeSum(lk, group) == int64(n) })
	close(stopReader)
	<-readerDone
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("stop: %v\n%s", err, p.out)
	}
	if !strings.Contains(p.out.String(), "lake commit failed") {
		t.Errorf("no lake commit failed while the object store was down: the test proved nothing\n%s", p.out)
	}
	snaps.check(t, 3)
	if reader.polls == 0 || reader.bad > 0 {
		t.Errorf("Flight reader: %d of %d answers were not whole commits (first: %s)", reader.bad, reader.polls, reader.first)
	}
	if got := one(t, []string{served}, "SELECT count(*) || '/' || count(DISTINCT (_partition, _offset)) FROM db0.events"); got != fmt.Sprintf("%d/%d", n, n) {
		t.Errorf("served database: rows/distinct messages %s, want %d/%d", got, n, n)
	}
	checkExactlyOnce(t, lk, group, n, parts, nil)
	checkSnapshotOffsets(t, lk, group)
}
