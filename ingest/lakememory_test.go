package ingest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/internal/scrape"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/lake"
)

// Sizes of TestLong_LakeMemoryBounded: messages of about 1 KB (a random,
// incompressible blob), so a segment of more than 1 GiB holds about a
// million of them, and enough of them that the first rotation, at
// lakeMemRotateMB, comes well before the end of the backlog.
const (
	lakeMemMessages = 1_400_000
	lakeMemBlob     = 1000
	lakeMemParts    = 4
	lakeMemRotateMB = 1100
	lakeMemWave     = 100_000 // messages produced at a time; divisible by lakeMemParts
	lakeMemHeapMax  = 512 << 20
)

// TestLong_LakeMemoryBounded checks that quiver ingest's Go heap stays
// under 512 MB while it uploads and commits a sealed segment of more than
// 1 GiB to an Iceberg lake on S3 (SeaweedFS, SQLite catalog), draining a
// backlog of 1.4M messages of about 1 KB that spans 16 days (one second
// apart, partitioned by day) while the next file fills. The process's Go
// heap and RSS are sampled every 100 ms from its /metrics and
// /proc/PID/status; only the Go heap is asserted on (DuckDB's memory is
// outside it). At the end the lake must hold every message exactly once.
func TestLong_LakeMemoryBounded(t *testing.T) {
	if !longTests {
		t.Skip("set QUIVER_LONG_TESTS=1")
	}
	bin := testsvc.QuiverBinary(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"lake"}})
	addrs := startCluster(t, lakeMemParts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	// The test writes about 4 GB to disk (the live file, the sealed
	// segment's Parquet files, their copy in the object store); a machine
	// short of space fails it in ways that look like something else.
	var disk syscall.Statfs_t
	if err := syscall.Statfs(dir, &disk); err == nil {
		t.Logf("free disk space under %s: %.1f GB", dir, float64(disk.Bavail)*float64(disk.Bsize)/1e9)
	}

	start := time.Now()
	rng := rand.New(rand.NewChaCha8([32]byte{1, 2, 3}))
	base := time.Date(2025, 2, 10, 0, 0, 0, 0, time.UTC)
	for from := 0; from < lakeMemMessages; from += lakeMemWave {
		to := min(from+lakeMemWave, lakeMemMessages)
		produce(t, addrs, lakeMemParts, blobValues(t, md, rng, from, to), base.Add(time.Duration(from)*time.Second))
	}
	t.Logf("produced %d messages of about %d bytes in %s", lakeMemMessages, lakeMemBlob, time.Since(start).Round(time.Second))

	catalog := "sqlite:///" + filepath.ToSlash(filepath.Join(dir, "catalog.db"))
	s3cfg := lake.Config{Warehouse: "s3://lake/mem", CatalogURI: catalog, S3: lake.S3Config{
		Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true, AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey}}
	// The subprocess takes its S3 keys from the environment.
	t.Setenv("AWS_ACCESS_KEY_ID", sw.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", sw.SecretKey)
	db := filepath.Join(dir, "live.duckdb")
	const group = "lake-mem"
	args := ingestArgs(addrs, group, db, "",
		"--lake", s3cfg.Warehouse, "--catalog", catalog, "--s3-endpoint", sw.S3URL, "--s3-path-style", "--s3-region", sw.Region,
		"--rotate-mb", strconv.Itoa(lakeMemRotateMB), "--rotate-age", "0", "--commit-interval", "0", "--shutdown-timeout", "5m",
		// Small batches, queues and fetches keep the pipeline's own share
		// of the heap small: with the defaults, 1 KB messages make each
		// batch 120 MB and the queued and inserting ones over 2 GB, which
		// is not what this test measures (the Go heap peaked at 2.6 GB
		// before the first rotation).
		"--batch-rows", "8192", "--queue-batches", "2", "--inserters", "2", "--decoders", "1",
		"--fetch-max-mb", "16", "--fetch-partition-mb", "4",
		"--log-level", "info")
	start = time.Now()
	p := startIngestHTTP(t, bin, args)
	exited := make(chan error, 1)
	go func() { exited <- p.Wait() }()

	// A segment's upload runs from its rotation (the rotated-files counter
	// moves) to its commit (the lake-commits counter catches up).
	type upload struct {
		rotated, committed time.Duration // since start
		bytes              int64         // the file's size at rotation
		peakHeap, peakRSS  float64       // while it uploaded
	}
	var (
		uploads                    []*upload
		peakHeap, peakAlloc        float64
		peakRSS, hwm               float64
		peakIngest                 float64 // before the first rotation
		records, files, fileBytes  float64
		commits, streamed          float64
		sealedMax                  = map[string]int64{}
		samples                    int
		lastLog                    time.Duration
		heapSamples, uploadSamples int
	)
	// Once every message is in and every rotated segment committed, a
	// SIGTERM stops the process cleanly, committing the rest of the live
	// file. (--idle-exit could fire while the pipeline waits on DuckDB.)
	var drained, stopping time.Duration
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(15 * time.Minute)
loop:
	for {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("quiver ingest: %v\n%s", err, p.Stderr())
			}
			break loop
		case <-deadline:
			p.cmd.Process.Kill()
			<-exited
			// The whole log of a stuck run is too long to read (and CI
			// cuts it); its rotations, exports, warnings and errors say
			// what went wrong, the first error above all.
			t.Fatalf("quiver ingest did not drain %d messages in 15 minutes; its log's notable lines:\n%s",
				lakeMemMessages, strings.Join(notableLines(p.Stderr(), 40), "\n"))
		case <-tick.C:
		}
		now := time.Since(start)
		samples++
		mem, _ := osfacts.ProcessMemory(p.cmd.Process.Pid)
		rss := float64(mem.RSS)
		peakRSS, hwm = max(peakRSS, rss), max(hwm, float64(mem.Peak))
		for _, s := range sealedSegments(t, db) {
			sealedMax[s.ID] = max(sealedMax[s.ID], segmentBytes(s))
		}
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		f, err := scrape.Page(sctx, p.Metrics)
		cancel()
		if err != nil {
			continue // exiting
		}
		m := f.Sums()
		heap, ok := m["go_memstats_heap_inuse_bytes"]
		if !ok {
			continue
		}
		heapSamples++
		peakHeap = max(peakHeap, heap)
		if len(uploads) == 0 {
			peakIngest = max(peakIngest, heap)
		}
		peakAlloc = max(peakAlloc, m["go_memstats_heap_alloc_bytes"])
		records = m["quiver_ingest_records_total"]
		if f := m["quiver_ingest_duckdb_files_total"]; f > files {
			b := m["quiver_ingest_duckdb_files_bytes_total"]
			uploads = append(uploads, &upload{rotated: now, bytes: int64(b - fileBytes)})
			files, fileBytes = f, b
		}
		commits = m["quiver_ingest_lake_commits_total"]
		streamed = m["quiver_engine_rows_streamed_total"]
		for i, u := range uploads {
			if u.committed == 0 && float64(i) < commits {
				u.committed = now
			}
			if u.committed == 0 {
				u.peakHeap, u.peakRSS = max(u.peakHeap, heap), max(u.peakRSS, rss)
				uploadSamples++
			}
		}
		if drained == 0 && records == lakeMemMessages {
			drained = now
		}
		if stopping == 0 && records == lakeMemMessages && files > 0 && commits >= files && m["quiver_ingest_lake_backlog_segments"] == 0 {
			stopping = now
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		if now-lastLog >= 5*time.Second {
			lastLog = now
			t.Logf("%5.1fs: heap in use %4.0f MB, RSS %5.0f MB, %7.0f records, %.0f files rotated, %.0f committed, backlog %.0f, %.0f rows read back out of DuckDB",
				now.Seconds(), heap/(1<<20), rss/(1<<20), records, files, commits, m["quiver_ingest_lake_backlog_segments"], streamed)
		}
	}
	took := time.Since(start)
	if stopping == 0 {
		t.Errorf("quiver ingest exited before it was stopped")
	}
	for _, line := range notableLines(p.Stderr(), 0) {
		t.Log(line)
	}
	t.Logf("quiver ingest drained %d messages in %s, stopped at %s, exited at %s; %d samples, %d with the Go heap, %d during an upload",
		lakeMemMessages, drained.Round(time.Second), stopping.Round(time.Second), took.Round(time.Second), samples, heapSamples, uploadSamples)
	t.Logf("rows read back out of DuckDB (quiver_engine_rows_streamed_total) at the last sample: %.0f", streamed)
	t.Logf("peak Go heap in use %.0f MB (heap alloc %.0f MB), %.0f MB before the first rotation; peak RSS sampled %.0f MB, VmHWM %.0f MB",
		peakHeap/(1<<20), peakAlloc/(1<<20), peakIngest/(1<<20), peakRSS/(1<<20), hwm/(1<<20))
	var biggest int64
	var upPeak float64 // Go heap while a segment of 1 GiB or more uploaded
	for id, size := range sealedMax {
		t.Logf("sealed segment %s: %d bytes (%.2f GiB)", id, size, float64(size)/(1<<30))
		biggest = max(biggest, size)
	}
	for i, u := range uploads {
		upTook := "not seen to finish"
		if u.committed > 0 {
			upTook = (u.committed - u.rotated).Round(100 * time.Millisecond).String()
		}
		t.Logf("segment %d: %.2f GiB at rotation (%.1fs), upload and commit %s, peak Go heap meanwhile %.0f MB, peak RSS %.0f MB",
			i+1, float64(u.bytes)/(1<<30), u.rotated.Seconds(), upTook, u.peakHeap/(1<<20), u.peakRSS/(1<<20))
		if u.bytes >= 1<<30 {
			upPeak = max(upPeak, u.peakHeap)
		}
	}
	if biggest < 1<<30 {
		t.Errorf("no sealed segment reached 1 GiB (largest %d bytes): the test did not upload what it is meant to", biggest)
	}
	if heapSamples == 0 || uploadSamples == 0 {
		t.Errorf("no Go heap sample during an upload (%d heap samples)", heapSamples)
	}
	if peakHeap >= lakeMemHeapMax {
		t.Errorf("peak Go heap in use %.0f MB, not under %d MB: %.0f MB while a segment of 1 GiB or more uploaded, %.0f MB before the first rotation",
			peakHeap/(1<<20), lakeMemHeapMax>>20, upPeak/(1<<20), peakIngest/(1<<20))
	}
	if records != lakeMemMessages {
		t.Errorf("ingested %.0f of %d messages", records, lakeMemMessages)
	}

	lk, err := lake.Open(context.Background(), s3cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	checkLakeIDs(t, lk, group, lakeMemMessages, lakeMemParts)
}

// notableLines returns the lines of an ingest log that tell how its
// segments went: rotations, exports, warnings and errors, at most max of
// them (all when max is 0), the first ones kept.
func notableLines(log string, max int) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "rotated database file") || strings.Contains(line, "exported segment") ||
			strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			if max > 0 && len(out) == max {
				out = append(out, "…")
				break
			}
			out = append(out, line)
		}
	}
	return out
}

// blobValues returns Flat messages from..to-1: message i has id i, the
// name and scalars of flatValue, and a blob of lakeMemBlob random bytes.
func blobValues(t testing.TB, md protoreflect.MessageDescriptor, rng *rand.Rand, from, to int) [][]byte {
	t.Helper()
	f := md.Fields()
	tsField := f.ByName("at")
	out := make([][]byte, 0, to-from)
	blob := make([]byte, lakeMemBlob)
	for i := from; i < to; i++ {
		for j := 0; j < len(blob); j += 8 {
			v := rng.Uint64()
			for k := 0; k < 8 && j+k < len(blob); k++ {
				blob[j+k] = byte(v >> (8 * k))
			}
		}
		m := dynamicpb.NewMessage(md)
		m.Set(f.ByName("id"), protoreflect.ValueOfInt64(int64(i)))
		m.Set(f.ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("name-%d", i)))
		m.Set(f.ByName("price"), protoreflect.ValueOfFloat64(float64(i)*0.5))
		m.Set(f.ByName("ok"), protoreflect.ValueOfBool(i%2 == 0))
		m.Set(f.ByName("qty"), protoreflect.ValueOfInt32(int32(i%1000)))
		m.Set(f.ByName("color"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(i%3)))
		ts := dynamicpb.NewMessage(tsField.Message())
		ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1_700_000_000+int64(i)))
		m.Set(tsField, protoreflect.ValueOfMessage(ts))
		m.Set(f.ByName("blob"), protoreflect.ValueOfBytes(blob))
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// sealedSegments lists the sealed files beside db; none once it is gone.
// segmentBytes is a sealed segment's size: its DuckDB file and the
// Parquet files its main rows were streamed to.
func segmentBytes(s segment.Segment) int64 {
	n := s.Size()
	parts, _ := filepath.Glob(filepath.Join(filepath.Dir(s.Path), s.ID+".main.*.parquet"))
	for _, p := range parts {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func sealedSegments(t testing.TB, db string) []segment.Segment {
	segs, err := segment.Sealed(db)
	if err != nil {
		return nil
	}
	return segs
}

// checkLakeIDs checks, reading only the id, partition and offset columns,
// that the lake's main table holds the messages [0, n) once each, message
// i at partition i % parts and offset i / parts, that the dead-letter
// table is empty, and that the main table's offsets reach each
// partition's end.
func checkLakeIDs(t *testing.T, lk *lake.Lake, group string, n int, parts int) {
	t.Helper()
	ctx := context.Background()
	tb, err := lk.Table(ctx, "quiver", "events", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ice, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := ice.Scan(table.WithSelectedFields("id", ingest.LakeColPartition, ingest.ColOffset)).ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, n)
	var rows, dups, outside, misplaced int64
	for rec, err := range recs {
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				t.Fatalf("no column %s in %s", name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		ids, ps, offs := col("id").(*array.Int64), col(ingest.LakeColPartition).(*array.Int32), col(ingest.ColOffset).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			id := ids.Value(i)
			switch {
			case id < 0 || id >= int64(n):
				outside++
			case seen[id]:
				dups++
			default:
				seen[id] = true
			}
			if int64(ps.Value(i)) != id%int64(parts) || offs.Value(i) != id/int64(parts) {
				misplaced++
			}
		}
		rows += rec.NumRows()
		rec.Release()
	}
	missing := 0
	for _, ok := range seen {
		if !ok {
			missing++
		}
	}
	t.Logf("lake: %d rows for %d messages: %d duplicated, %d missing, %d unexpected, %d not at their (partition, offset)",
		rows, n, dups, missing, outside, misplaced)
	if rows != int64(n) || dups+outside+misplaced > 0 || missing > 0 {
		t.Errorf("the lake does not hold every message exactly once")
		if tasks, err := ice.Scan().PlanFiles(ctx); err == nil {
			for _, task := range tasks {
				t.Logf("data file %s: %d rows, %d bytes", task.File.FilePath(), task.File.Count(), task.File.FileSizeBytes())
			}
		}
		if s := ice.CurrentSnapshot(); s != nil && s.Summary != nil {
			t.Logf("current snapshot %d: %v", s.SnapshotID, s.Summary.Properties)
		}
	}
	offsets, err := tb.CommittedOffsets(ctx, group, testTopic)
	if err != nil {
		t.Fatal(err)
	}
	for p := 0; p < parts; p++ {
		if want := int64(n / parts); offsets[int32(p)] != want {
			t.Errorf("partition %d: lake offset %d, want %d", p, offsets[int32(p)], want)
		}
	}
	dl, err := lk.Table(ctx, "quiver", "events_dead_letters", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dice, err := dl.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, dlRecs, err := dice.Scan(table.WithSelectedFields("offset")).ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var dead int64
	for rec, err := range dlRecs {
		if err != nil {
			t.Fatalf("scan dead letters: %v", err)
		}
		dead += rec.NumRows()
		rec.Release()
	}
	if dead != 0 {
		t.Errorf("%d dead letters", dead)
	}
}

// TestLong_LakeFileSize checks the lake's data files reach the segment
// size at a sustained rate: 460,000 messages of about 1 KB (random,
// incompressible) drain through an unpartitioned table rotating at
// --rotate-mb 128, and every file but the one the clean stop sealed early
// must be at least 128 MiB. Seed 003's pipeline wrote files of 13 MB. (A
// segment overshoots the size by what DuckDB's COPY holds back from the
// file when rotation reads it: up to a 16 MiB row group per thread.)
func TestLong_LakeFileSize(t *testing.T) {
	if !longTests {
		t.Skip("set QUIVER_LONG_TESTS=1")
	}
	const n, parts, rotate = 460_000, lakeMemParts, 128 << 20
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	rng := rand.New(rand.NewChaCha8([32]byte{4, 5, 6}))
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for from := 0; from < n; from += lakeMemWave {
		to := min(from+lakeMemWave, n)
		produce(t, addrs, parts, blobValues(t, md, rng, from, to), base.Add(time.Duration(from)*time.Second))
	}
	lk := openTestLake(t, filepath.Join(dir, "lake"))
	cfg := lakeConfig(t, testConfig(t, md, dir), lk, "lake-size")
	cfg.Lake.PartitionBy = []lake.PartitionField{} // unpartitioned: one file per segment
	cfg.Rotate = segment.Policy{MaxBytes: rotate}
	cfg.BatchRows = 8192
	runUntilIdle(t, cfg, newSource(t, addrs, "lake-size"))
	checkLakeIDs(t, lk, "lake-size", n, parts)

	tb, err := lk.Table(context.Background(), "quiver", "events", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ice, err := tb.Iceberg(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	snaps := ice.Metadata().Snapshots()
	var sizes []int64
	for _, s := range snaps {
		files, _ := strconv.ParseInt(s.Summary.Properties["added-data-files"], 10, 64)
		bytes, _ := strconv.ParseInt(s.Summary.Properties["added-files-size"], 10, 64)
		t.Logf("snapshot %d: %d files, %.1f MiB", s.SequenceNumber, files, float64(bytes)/(1<<20))
		if files != 1 {
			t.Errorf("snapshot %d added %d files, want one (one segment, unpartitioned)", s.SequenceNumber, files)
		}
		sizes = append(sizes, bytes)
	}
	if len(sizes) < 3 {
		t.Fatalf("%d commits, want at least 2 rotated segments and the stop's", len(sizes))
	}
	var total int64
	for i, b := range sizes[:len(sizes)-1] { // the last is the stop's
		total += b
		if b < rotate {
			t.Errorf("file of commit %d: %.1f MiB, want at least %d MiB", i+1, float64(b)/(1<<20), rotate>>20)
		}
	}
	t.Logf("%d rotated files, mean %.1f MiB", len(sizes)-1, float64(total)/float64(len(sizes)-1)/(1<<20))
}
