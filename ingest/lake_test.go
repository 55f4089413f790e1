package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
)

// openTestLake opens a file:// lake with its SQLite catalog in dir.
func openTestLake(t testing.TB, dir string) *lake.Lake {
	t.Helper()
	lk, err := lake.Open(context.Background(), lake.Config{Warehouse: "file://" + filepath.ToSlash(dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Close() })
	return lk
}

// lakeConfig is testConfig writing to lk, rotating small files often.
func lakeConfig(t testing.TB, cfg ingest.Config, lk *lake.Lake, group string) ingest.Config {
	cfg.Lake = &ingest.LakeConfig{Lake: lk, Namespace: "quiver", Group: group, Topic: testTopic}
	cfg.Rotate = segment.Policy{MaxBytes: 1 << 20, MaxAge: 300 * time.Millisecond}
	return cfg
}

// lakeContents reads an Iceberg table: its row count, how many times each
// (partition, offset) pair occurs, and the offsets the table recorded.
type lakeContents struct {
	rows    int64
	pairs   map[[2]int64]int
	offsets map[int32]int64
}

func readLake(t testing.TB, lk *lake.Lake, table, partCol, offCol, group string) lakeContents {
	t.Helper()
	ctx := context.Background()
	tb, err := lk.Table(ctx, "quiver", table, nil, nil)
	if err != nil {
		t.Fatalf("load %s: %v", table, err)
	}
	c := lakeContents{pairs: map[[2]int64]int{}}
	if c.offsets, err = tb.CommittedOffsets(ctx, group, testTopic); err != nil {
		t.Fatal(err)
	}
	ice, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at, err := ice.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan %s: %v", table, err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				t.Fatalf("%s: no column %s in %s", table, name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		parts, offs := col(partCol).(*array.Int32), col(offCol).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			c.pairs[[2]int64{int64(parts.Value(i)), offs.Value(i)}]++
		}
		c.rows += rec.NumRows()
	}
	return c
}

// checkExactlyOnce checks the main table holds exactly the messages
// [0, n) less the bad ones, once each, and records every partition's end.
func checkExactlyOnce(t testing.TB, lk *lake.Lake, group string, n int, parts int32, bad func(i int) bool) {
	t.Helper()
	c := readLake(t, lk, "events", ingest.LakeColPartition, ingest.ColOffset, group)
	dl := readLake(t, lk, "events_dead_letters", "partition", "offset", group)
	want := map[[2]int64]bool{}
	wantDead := map[[2]int64]bool{}
	for i := 0; i < n; i++ {
		key := [2]int64{int64(int32(i) % parts), int64(i) / int64(parts)}
		if bad != nil && bad(i) {
			wantDead[key] = true
		} else {
			want[key] = true
		}
	}
	for _, tc := range []struct {
		name string
		got  lakeContents
		want map[[2]int64]bool
	}{{"events", c, want}, {"events_dead_letters", dl, wantDead}} {
		dups, missing, extra := 0, 0, 0
		for k, times := range tc.got.pairs {
			if times > 1 {
				dups += times - 1
			}
			if !tc.want[k] {
				extra++
			}
		}
		for k := range tc.want {
			if tc.got.pairs[k] == 0 {
				missing++
			}
		}
		if missing > 0 {
			t.Logf("%s: missing ranges: %s", tc.name, missingRanges(tc.got.pairs, tc.want))
		}
		if dups+missing+extra > 0 || tc.got.rows != int64(len(tc.want)) {
			t.Errorf("%s: %d rows for %d messages: %d duplicated, %d missing, %d unexpected", tc.name, tc.got.rows, len(tc.want), dups, missing, extra)
		}
	}
	for p := int32(0); p < parts; p++ {
		end := int64(n) / int64(parts)
		if int64(n)%int64(parts) > int64(p) {
			end++
		}
		if c.offsets[p] != end {
			t.Errorf("partition %d: lake offset %d, want %d (all: %v)", p, c.offsets[p], end, c.offsets)
		}
		if dl.offsets[p] != end {
			t.Errorf("partition %d: dead letters' lake offset %d, want %d", p, dl.offsets[p], end)
		}
	}
}

func TestPipeline_Lake(t *testing.T) {
	const n, parts = 12000, 3
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	lk := openTestLake(t, filepath.Join(dir, "lake"))
	cfg := lakeConfig(t, testConfig(t, md, dir), lk, "lake")
	values := flatValues(t, md, 0, n)
	bad := func(i int) bool { return i%1000 == 7 }
	for i := range values {
		if bad(i) {
			values[i] = []byte{0xff}
		}
	}
	streamed := func() (rows, asIs float64) {
		rows, _ = testutil.Metric(t, "quiver_ingest_lake_streamed_rows_total", nil)
		asIs, _ = testutil.Metric(t, "quiver_ingest_lake_streamed_files_uploaded_total", nil)
		return rows, asIs
	}
	rows0, asIs0 := streamed()
	base := time.Date(2025, 2, 24, 20, 0, 0, 0, time.UTC)
	produce(t, addrs, parts, values[:n/2], base)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(700 * time.Millisecond)
		produce(t, addrs, parts, values[n/2:], base.Add(n/2*time.Second))
	}()
	rep := runUntilIdle(t, cfg, newSource(t, addrs, "lake"))
	<-done
	if rep.DuckDBFiles == 0 {
		t.Errorf("no file rotated")
	}
	if segs, _ := segment.Sealed(cfg.DBPath); len(segs) != 0 {
		t.Errorf("sealed segments left after a clean stop: %v", segs)
	}
	checkExactlyOnce(t, lk, "lake", n, parts, bad)
	// The main rows went straight from the decoded batches into the lake's
	// files, which were uploaded as they were written (one day of
	// timestamps: 20:00 to 23:20).
	if rows, asIs := streamed(); rows-rows0 != n-12 || asIs-asIs0 < 1 {
		t.Errorf("%.0f rows streamed, %.0f files uploaded as written; want %d rows, at least one file", rows-rows0, asIs-asIs0, n-12)
	}
	// The data files are Parquet V2, as DuckDB writes it: the offsets
	// delta-encoded, not PLAIN.
	if got := offsetChunks(t, dir, "string_agg(DISTINCT encodings, '; ')"); got != "DELTA_BINARY_PACKED" {
		t.Errorf("encodings of the lake files' %s column: got %q, want DELTA_BINARY_PACKED (Parquet V2)", ingest.ColOffset, got)
	}

	// A second run resumes from the lake's offsets: only new messages.
	more := flatValues(t, md, n, n+3000)
	for i := range more {
		if bad(n + i) {
			more[i] = []byte{0xff}
		}
	}
	produce(t, addrs, parts, more, base.Add(n*time.Second))
	runUntilIdle(t, cfg, newSource(t, addrs, "lake"))
	checkExactlyOnce(t, lk, "lake", n+3000, parts, bad)
	// Those span midnight: the streamed file was rewritten into one file
	// per day, as the table is partitioned.
	files := "read_parquet(" + engine.QuoteString(filepath.Join(dir, "lake", "quiver.db", "events", "data", "**", "*.parquet")) + ")"
	if got := one(t, nil, "SELECT (count(DISTINCT filename) >= 2) || ':' || count(DISTINCT _timestamp::DATE) FROM "+files+" WHERE _offset >= 4000"); got != "true:2" {
		t.Errorf("the last run's rows: got several files:days %s, want true:2", got)
	}
	if got := one(t, nil, "SELECT count(*) FROM (SELECT filename FROM "+files+" GROUP BY ALL HAVING count(DISTINCT _timestamp::DATE) > 1)"); got != "0" {
		t.Errorf("%s data files span two days of a day-partitioned table", got)
	}
}

// offsetChunks aggregates, with agg, DuckDB's parquet_metadata rows of
// the offset column in the events table's data files of the file:// lake
// under dir/lake.
func offsetChunks(t *testing.T, dir, agg string) string {
	t.Helper()
	files := engine.QuoteString(filepath.Join(dir, "lake", "quiver.db", "events", "data", "**", "*.parquet"))
	return one(t, nil, "SELECT "+agg+" FROM parquet_metadata("+files+") WHERE path_in_schema = "+engine.QuoteString(ingest.ColOffset))
}

// TestPipeline_LakeRowGroupSize checks that the lake's files take the
// configured row group size (DuckDB's own when unset, as the test above
// has) and the configured Parquet version.
func TestPipeline_LakeRowGroupSize(t *testing.T) {
	const n, parts = 5000, 1
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	lk := openTestLake(t, filepath.Join(dir, "lake"))
	cfg := lakeConfig(t, testConfig(t, md, dir), lk, "rowgroups")
	// The main rows stream into the file in batches of cfg.BatchRows (1000):
	// DuckDB closes a row group once it holds at least the size, so one
	// may overshoot it by less than a batch.
	cfg.RowGroupSize, cfg.ParquetVersion = 2048, "V1"
	produce(t, addrs, parts, flatValues(t, md, 0, n), time.Date(2025, 2, 24, 20, 0, 0, 0, time.UTC))
	runUntilIdle(t, cfg, newSource(t, addrs, "rowgroups"))
	checkExactlyOnce(t, lk, "rowgroups", n, parts, nil)
	want := "true 5000 PLAIN"
	if got := offsetChunks(t, dir, fmt.Sprintf("(max(row_group_num_rows) BETWEEN 2048 AND %d) || ' ' || sum(row_group_num_rows) || ' ' || string_agg(DISTINCT encodings, '; ')",
		2048+cfg.BatchRows-1)); got != want {
		t.Errorf("largest row group within [2048, 2048+batch), rows and encodings of the offsets: got %q, want %q (%s)", got, want,
			offsetChunks(t, dir, "string_agg(row_group_num_rows::VARCHAR, ',')"))
	}
}

// TestPipeline_LakeThreeProcesses runs three pipelines, each with its own
// database, in one group writing one lake, while messages arrive and the
// group rebalances as they join and leave.
func TestPipeline_LakeThreeProcesses(t *testing.T) {
	const n, parts = 36000, 6
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	lk := openTestLake(t, filepath.Join(dir, "lake"))
	values := flatValues(t, md, 0, n)
	base := time.Date(2025, 2, 24, 20, 0, 0, 0, time.UTC)
	produce(t, addrs, parts, values[:n/3], base)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 400 * time.Millisecond) // join one after another
			cfg := lakeConfig(t, testConfig(t, md, filepath.Join(dir)), lk, "three")
			cfg.DBPath = filepath.Join(dir, fmt.Sprintf("live%d.duckdb", i))
			cfg.IdleExit = 4 * time.Second
			p, err := ingest.New(cfg)
			if err != nil {
				errs[i] = err
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, errs[i] = p.Run(ctx, newSource(t, addrs, "three"))
		}()
	}
	time.Sleep(time.Second)
	produce(t, addrs, parts, values[n/3:2*n/3], base.Add(n/3*time.Second))
	time.Sleep(time.Second)
	produce(t, addrs, parts, values[2*n/3:], base.Add(2*n/3*time.Second))
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("pipeline %d: %v", i, err)
		}
	}
	checkExactlyOnce(t, lk, "three", n, parts, nil)
}

// TestIngest_LakeKill9ThreeProcesses runs three quiver ingest processes in
// one group writing one lake. It kills one of them with kill -9 five times
// at random moments (each comes straight back, as a supervisor would
// restart it), then makes one crash itself at each step of a lake commit
// (after the upload, after the main table's commit, before the local file
// is deleted, and during an assignment), and checks the lake holds every
// message exactly once. The long run (make long-test) writes 1.2M
// messages to a lake on a real S3 server, and, with QUIVER_PYTHON naming a
// Python that has pyiceberg, reads it back with pyiceberg too.
func TestIngest_LakeKill9ThreeProcesses(t *testing.T) {
	n := 120_000
	if longTests {
		n = 1_200_000
	}
	const parts = 6
	bin := testsvc.QuiverBinary(t)
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	lakeArgs := []string{"--lake", "file://" + filepath.ToSlash(filepath.Join(dir, "lake"))}
	var env []string
	var s3cfg *lake.Config
	if longTests {
		sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"lake"}})
		catalog := "sqlite:///" + filepath.ToSlash(filepath.Join(dir, "catalog.db"))
		lakeArgs = []string{"--lake", "s3://lake/kill", "--catalog", catalog, "--s3-endpoint", sw.S3URL, "--s3-path-style", "--s3-region", sw.Region}
		env = []string{"AWS_ACCESS_KEY_ID=" + sw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + sw.SecretKey}
		s3cfg = &lake.Config{Warehouse: "s3://lake/kill", CatalogURI: catalog, S3: lake.S3Config{
			Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true, AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey}}
	}
	args := func(i int, extra ...string) []string {
		a := ingestArgs(addrs, "lake-kill", filepath.Join(dir, fmt.Sprintf("live%d.duckdb", i)), "",
			append(lakeArgs, "--batch-rows", "5000", "--rotate-mb", "2", "--rotate-age", "500ms")...)
		return append(a, extra...)
	}
	start := func(i int, extraEnv ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, args(i)...)
		cmd.Env = append(append(os.Environ(), env...), extraEnv...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		const waves = 10 // n/waves divisible by parts, so message i lands in partition i % parts
		for w := 0; w < waves; w++ {
			produce(t, addrs, parts, flatValues(t, md, w*n/waves, (w+1)*n/waves), time.Unix(1_740_000_000+int64(w*n/waves), 0))
			time.Sleep(1500 * time.Millisecond) // crashes and kills land while messages flow
		}
	}()

	procs := make([]*exec.Cmd, 3)
	outs := make([]*bytes.Buffer, 3)
	for i := range procs {
		procs[i], outs[i] = start(i)
	}
	// Crashes at each step of a lake commit, one process at a time. Killing
	// a process also makes the others take its partitions over, so the
	// assignment crash lands during a rebalance.
	for k, point := range []string{"lake-after-upload", "lake-after-commit", "lake-before-delete", "lake-during-assign"} {
		i := k % 3
		_ = procs[i].Process.Signal(syscall.SIGKILL)
		_ = procs[i].Wait()
		cmd, out := start(i, ingest.CrashEnv+"="+point)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
			if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() && st.Signal() == syscall.SIGKILL {
				t.Logf("process %d crashed at %s", i, point)
			} else {
				t.Errorf("process %d did not crash at %s: %v\n%s", i, point, cmd.ProcessState, out)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("process %d never reached %s\n%s", i, point, out)
		}
		procs[i], outs[i] = start(i)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill schedule seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	for k := 0; k < 5; k++ {
		time.Sleep(time.Duration(400+rng.IntN(1600)) * time.Millisecond)
		i := rng.IntN(3)
		if err := procs[i].Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = procs[i].Wait()
		t.Logf("kill -9 #%d: process %d", k+1, i)
		procs[i], outs[i] = start(i)
	}
	<-produced
	time.Sleep(2 * time.Second) // the last ones started have set up their signal handling
	// Stop the three cleanly, then one last run of each drains the rest.
	for i, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
		if err := p.Wait(); err != nil || testing.Verbose() {
			t.Logf("process %d at SIGTERM: %v\n%s", i, err, outs[i])
		}
	}
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, args(i, "--idle-exit", "4s")...)
			cmd.Env = append(os.Environ(), env...)
			out := &bytes.Buffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("final run %d: %v\n%s", i, err, out)
				}
			case <-time.After(6 * time.Minute):
				_ = cmd.Process.Kill()
				t.Errorf("final run %d did not finish\n%s", i, out)
			}
		}()
	}
	wg.Wait()
	var lk *lake.Lake
	if s3cfg != nil {
		var err error
		if lk, err = lake.Open(context.Background(), *s3cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lk.Close() })
	} else {
		lk = openTestLake(t, filepath.Join(dir, "lake"))
	}
	checkExactlyOnce(t, lk, "lake-kill", n, parts, nil)
	// The files of the commits the crashes interrupted were deleted when
	// their segments were committed again.
	for _, table := range []string{"events", "events_dead_letters"} {
		tb, err := lk.Table(context.Background(), "quiver", table, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		o, err := tb.Orphans(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Files) > 0 {
			t.Errorf("%s: %d orphan data files left: %v", table, len(o.Files), o.Files)
		}
	}
	if py := os.Getenv("QUIVER_PYTHON"); py != "" && s3cfg != nil {
		checkWithPyiceberg(t, py, *s3cfg, n)
	}
}

// checkWithPyiceberg reads the table with pyiceberg and checks it holds
// ids 0..n-1 once each.
func checkWithPyiceberg(t *testing.T, python string, cfg lake.Config, n int) {
	t.Helper()
	script := `
import sys
from pyiceberg.catalog.sql import SqlCatalog
uri, endpoint, region, key, secret, n = sys.argv[1:7]
cat = SqlCatalog("quiver", uri=uri, **{"s3.endpoint": endpoint, "s3.region": region,
    "s3.access-key-id": key, "s3.secret-access-key": secret})
ids = cat.load_table("quiver.events").scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
ok = len(ids) == int(n) and set(ids) == set(range(int(n)))
print(f"pyiceberg read {len(ids)} rows, {len(set(ids))} distinct ids")
sys.exit(0 if ok else 1)
`
	out, err := exec.Command(python, "-c", script, cfg.CatalogURI, cfg.S3.Endpoint, cfg.S3.Region,
		cfg.S3.AccessKeyID, cfg.S3.SecretAccessKey, fmt.Sprint(n)).CombinedOutput()
	t.Logf("%s", bytes.TrimSpace(out))
	if err != nil {
		t.Errorf("pyiceberg check: %v", err)
	}
}

// TestIngest_RestartReclaimsPartitions ingests a topic, kills quiver ingest
// with kill -9 three times in a row, and checks the next start reaches the
// end of the topic, with the group's Kafka offsets caught up, within 15 s:
// the restarted process rejoins as the same static member and gets its
// partitions back at once, and commits to Kafka the positions it stored.
// The group keeps franz-go's 45 s session timeout, so a process that had
// to wait for its dead predecessors to time out would take far longer.
func TestIngest_RestartReclaimsPartitions(t *testing.T) {
	for _, mode := range []string{"duckdb", "lake"} {
		t.Run(mode, func(t *testing.T) {
			const n, parts = 100_000, 4
			bin := testsvc.QuiverBinary(t)
			addrs := startCluster(t, parts)
			md := compile(t, "Flat")
			dir := t.TempDir()
			group := "restart-" + mode
			var extra []string
			if mode == "lake" {
				extra = []string{"--lake", "file://" + filepath.ToSlash(filepath.Join(dir, "lake")), "--rotate-age", "500ms"}
			}
			args := ingestArgs(addrs, group, filepath.Join(dir, "live.duckdb"), "", append(extra, "--session-timeout", "45s")...)
			produce(t, addrs, parts, flatValues(t, md, 0, n), time.Unix(1_740_000_000, 0))

			cmd, out := startIngest(t, bin, args)
			waitCaughtUp(t, addrs, group, n, 60*time.Second, out)
			for k := 0; k < 3; k++ {
				if k > 0 {
					cmd, out = startIngest(t, bin, args)
					time.Sleep(time.Second)
				}
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
			}
			produce(t, addrs, parts, flatValues(t, md, n, n+parts*1000), time.Unix(1_740_000_000+n, 0))
			start := time.Now()
			cmd, out = startIngest(t, bin, args)
			waitCaughtUp(t, addrs, group, n+parts*1000, 15*time.Second, out)
			t.Logf("caught up %s after the restart that followed three kill -9s", time.Since(start).Round(10*time.Millisecond))
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("stop: %v\n%s", err, out)
			}
			if mode == "lake" {
				checkExactlyOnce(t, openTestLake(t, filepath.Join(dir, "lake")), group, n+parts*1000, parts, nil)
			} else {
				verifyExactlyOnceIDs(t, n+parts*1000, filepath.Join(dir, "live.duckdb"))
			}
		})
	}
}

// waitCaughtUp waits until the group's committed Kafka offsets add up to
// total, failing the test after limit.
func waitCaughtUp(t *testing.T, addrs []string, group string, total int, limit time.Duration, out *bytes.Buffer) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(limit)
	var sum int64
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		offs, err := adm.FetchOffsets(ctx, group)
		cancel()
		if err == nil {
			sum = 0
			offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
			if sum >= int64(total) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s committed %d of %d offsets after %s\n%s", group, sum, total, limit, out)
}

// verifyExactlyOnceIDs checks a database and its sealed files hold the
// messages [0, n) once each.
func verifyExactlyOnceIDs(t *testing.T, n int, db string) {
	t.Helper()
	verifyExactlyOnce(t, n, []string{db}, "")
}

// missingRanges describes the (partition, offset) pairs of want that got
// lacks, as runs of offsets per partition.
func missingRanges(got map[[2]int64]int, want map[[2]int64]bool) string {
	byPart := map[int64][]int64{}
	for k := range want {
		if got[k] == 0 {
			byPart[k[0]] = append(byPart[k[0]], k[1])
		}
	}
	var out []string
	for p, offs := range byPart {
		slices.Sort(offs)
		start, prev := offs[0], offs[0]
		for _, o := range offs[1:] {
			if o != prev+1 {
				out = append(out, fmt.Sprintf("p%d[%d,%d]", p, start, prev))
				start = o
			}
			prev = o
		}
		out = append(out, fmt.Sprintf("p%d[%d,%d]", p, start, prev))
	}
	slices.Sort(out)
	if len(out) > 20 {
		out = append(out[:20], "…")
	}
	return strings.Join(out, " ")
}

// TestPipeline_LakeCommitIntervalCompacts runs a lake pipeline that
// commits every 200 ms while its compactor rewrites the small files: every
// row is in the lake once, every snapshot (the compactor's replace
// snapshots too) carries the group's offsets, never going back, and the
// table ends with fewer files than commits.
func TestPipeline_LakeCommitIntervalCompacts(t *testing.T) {
	const n, parts = 12000, 3 // four bursts of a multiple of parts
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	lk := openTestLake(t, filepath.Join(dir, "lake"))
	cfg := lakeConfig(t, testConfig(t, md, dir), lk, "fresh")
	cfg.Rotate = segment.Policy{MaxBytes: 1 << 30, MaxAge: time.Hour}
	cfg.CommitInterval = 200 * time.Millisecond
	cfg.IdleExit = 2500 * time.Millisecond
	cfg.Lake.Maintain = ingest.Maintenance{Interval: 300 * time.Millisecond, TargetFileBytes: 64 << 20}
	compactions0, _ := testutil.Metric(t, "quiver_ingest_lake_compactions_total", nil)
	values := flatValues(t, md, 0, n)
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 4; i++ {
			produce(t, addrs, parts, values[i*n/4:(i+1)*n/4], base.Add(time.Duration(i*n/4)*time.Second))
			time.Sleep(500 * time.Millisecond)
		}
	}()
	rep := runUntilIdle(t, cfg, newSource(t, addrs, "fresh"))
	<-done
	checkExactlyOnce(t, lk, "fresh", n, parts, nil)
	if got, _ := testutil.Metric(t, "quiver_ingest_lake_compactions_total", nil); got <= compactions0 {
		t.Errorf("compactions: got %.0f, want more than %.0f", got, compactions0)
	}
	tb, err := lk.Table(context.Background(), "quiver", "events", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ice, err := tb.Iceberg(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	key := lake.OffsetsKey("fresh", testTopic)
	var chain []string
	for s := ice.CurrentSnapshot(); s != nil; {
		if s.Summary == nil || s.Summary.Properties[key] == "" {
			t.Errorf("snapshot %d (%v) carries no offsets", s.SnapshotID, s.Summary)
		} else {
			chain = append(chain, string(s.Summary.Operation)+" "+s.Summary.Properties[key])
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = ice.SnapshotByID(*s.ParentSnapshotID)
	}
	if !slices.ContainsFunc(chain, func(c string) bool { return strings.HasPrefix(c, "replace ") }) {
		t.Errorf("no replace snapshot in the history: %v", chain)
	}
	files, _ := strconv.ParseInt(ice.CurrentSnapshot().Summary.Properties["total-data-files"], 10, 64)
	if files == 0 || files >= int64(rep.DuckDBFiles) {
		t.Errorf("data files: got %d after %d commits, want fewer", files, rep.DuckDBFiles)
	}
}
