package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kfake"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/bench/stages"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/lake"
)

// LakeConfig configures the lake suite.
type LakeConfig struct {
	Messages   int
	Partitions int32
	// RotateBytes is the size at which the lake run's live DuckDB file
	// rotates into a segment that is committed to the lake.
	RotateBytes int64
	// Decoders, Inserters and the fetch sizes are as in KafkaConfig.
	Decoders, Inserters                int
	FetchPartitionBytes, FetchMaxBytes int32
	// S3 reaches the object store; Bucket must exist in it. The warehouse
	// is a fresh prefix s3://Bucket/bench-<random>; the catalog is SQLite
	// in a temporary directory.
	S3     lake.S3Config
	Bucket string
	// Store names the object store in the title.
	Store string
	// StorePID, when not 0, is the object store's process on this
	// machine; its CPU time over each lake run is reported too.
	StorePID int
	Reps     int
	// Logger receives the pipeline's logs; nil discards them.
	Logger *slog.Logger
}

// Names of the lake suite's contenders.
const (
	lakeA = "pipeline" // Kafka → DuckDB alone, no rotation
	lakeB = "lake"     // the same, rotating into Iceberg on S3
)

// lakeRun is what one run measured beyond its Sample.
type lakeRun struct {
	ingest   time.Duration // first delivery until every row is committed to DuckDB
	tail     time.Duration // from then until the end (with a lake, the last lake commit)
	tailCPU  time.Duration // this process's CPU time over the tail
	storeCPU time.Duration // the object store's CPU time over the run
	// The whole machine's busy CPU time over the run and over the tail,
	// other processes included.
	machineCPU, machineTailCPU time.Duration

	// Lake runs only: the main table's snapshots and data files.
	commits       int   // snapshots of the main table
	commitsBefore int   // of them, committed before every row was in DuckDB
	files         int64 // data files
	fileBytes     int64 // their size
	// The data files of every commit but the last: the segments sealed at
	// --rotate-mb or --rotate-age, without the final one the clean stop
	// sealed early. Their mean size is what a sustained ingest writes.
	rotatedFiles, rotatedBytes int64
	lakeRows                   int64 // rows the main table holds
	segments                   int   // DuckDB files rotated out
	segmentMB                  int64 // their total size
	tables                     int   // commits to all tables (main and dead letters)
}

// Lake times the Kafka → DuckDB pipeline alone against the same pipeline
// committing rotated segments to Apache Iceberg tables on S3, over the
// same topic, alternated.
func Lake(ctx context.Context, cfg LakeConfig) (*report.Report, error) {
	r, _, err := lakeSuite(ctx, cfg)
	return r, err
}

// lakeSuite runs the suite and returns the report and the lake runs'
// details (warm-up excluded).
func lakeSuite(ctx context.Context, cfg LakeConfig) (*report.Report, []lakeRun, error) {
	if cfg.Messages < 1 || cfg.Partitions < 1 || cfg.RotateBytes < 1 {
		return nil, nil, errors.New("lake bench: messages, partitions and the rotation size must be positive")
	}
	if cfg.Bucket == "" {
		return nil, nil, errors.New("lake bench: a bucket is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tmp, err := os.MkdirTemp("", "quiver-bench-lake-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)

	// The topic: the kafka suite's flat messages, in a broker of our own.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, nil, fmt.Errorf("start in-process kafka: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	data, err := stages.New(ctx, stages.Config{
		Messages: cfg.Messages, Partitions: cfg.Partitions, Flat: true, Brokers: brokers,
		Stages: []string{stages.Consume}, Logger: log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("prepare lake bench: %w", err)
	}
	defer data.Close()
	topic, md := data.Topic(), data.Message()

	// The lake: a fresh prefix of the bucket, a SQLite catalog.
	warehouse := fmt.Sprintf("s3://%s/bench-%s", cfg.Bucket, randomHex(6))
	lk, err := lake.Open(ctx, lake.Config{
		Warehouse:  warehouse,
		CatalogURI: "sqlite:///" + filepath.ToSlash(filepath.Join(tmp, "catalog.db")),
		S3:         cfg.S3,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("open the lake at %s: %w", warehouse, err)
	}
	defer lk.Close()

	h := &lakeHarness{cfg: cfg, log: log, dir: tmp, brokers: brokers, topic: topic, md: md, lk: lk}
	var pipeRuns, lakeRuns []lakeRun
	stats, err := report.Alternate(cfg.Reps,
		report.Contender{Name: lakeA, Run: func() (report.Sample, error) {
			s, run, err := h.run(ctx, false)
			pipeRuns = append(pipeRuns, run)
			return s, err
		}},
		report.Contender{Name: lakeB, Run: func() (report.Sample, error) {
			s, run, err := h.run(ctx, true)
			lakeRuns = append(lakeRuns, run)
			return s, err
		}},
	)
	if err != nil {
		return nil, nil, err
	}
	pipeRuns, lakeRuns = pipeRuns[1:], lakeRuns[1:] // drop the warm-ups
	return lakeReport(cfg, stats[0], stats[1], pipeRuns, lakeRuns, warehouse), lakeRuns, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// lakeHarness runs the pipeline over the topic, with or without the lake.
type lakeHarness struct {
	cfg     LakeConfig
	log     *slog.Logger
	dir     string
	brokers []string
	topic   string
	md      protoreflect.MessageDescriptor
	lk      *lake.Lake
	n       int
}

// run runs the pipeline once with a fresh consumer group and database,
// from the first delivery until everything is committed: to DuckDB
// (pipeline), or to the lake, the final segment sealed and committed at
// the clean stop included (lake).
func (h *lakeHarness) run(ctx context.Context, withLake bool) (report.Sample, lakeRun, error) {
	h.n++
	dir := filepath.Join(h.dir, fmt.Sprintf("run-%d", h.n))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return report.Sample{}, lakeRun{}, err
	}
	defer os.RemoveAll(dir)
	group := fmt.Sprintf("quiver-bench-lake-%d-%d", h.n, time.Now().UnixNano())
	namespace := fmt.Sprintf("bench_%d", h.n)
	const table = "events"
	cfg := ingest.Config{
		DBPath: filepath.Join(dir, "bench.duckdb"), Table: table, Message: h.md,
		Decoders: h.cfg.Decoders, Inserters: h.cfg.Inserters,
		// As the kafka suite: the default flush interval, a clean stop
		// once the whole topic is delivered. The idle exit only guards
		// against a run that never gets there.
		IdleExit: time.Minute, ReportInterval: -1, Logger: h.log,
	}
	if withLake {
		cfg.Lake = &ingest.LakeConfig{Lake: h.lk, Namespace: namespace, Group: group, Topic: h.topic}
		cfg.Rotate = segment.Policy{MaxBytes: h.cfg.RotateBytes}
	}
	p, err := ingest.New(cfg)
	if err != nil {
		return report.Sample{}, lakeRun{}, err
	}
	src, err := kafka.New(kafka.Brokers(h.brokers...), kafka.Topic(h.topic), kafka.Group(group), kafka.Logger(h.log),
		kafka.FetchMaxPartitionBytes(h.cfg.FetchPartitionBytes), kafka.FetchMaxBytes(h.cfg.FetchMaxBytes))
	if err != nil {
		return report.Sample{}, lakeRun{}, err
	}
	total := int64(h.cfg.Messages)
	w := &stopAtEnd{Source: src, total: total, storePID: h.cfg.StorePID}
	rep, err := p.Run(ctx, w)
	if err != nil {
		return report.Sample{}, lakeRun{}, err
	}
	if rep.Records != total {
		return report.Sample{}, lakeRun{}, fmt.Errorf("the pipeline committed %d of %d messages (%d dead letters)", rep.Records, total, rep.DeadLetters)
	}
	first, done, end, ok := w.times()
	if !ok {
		return report.Sample{}, lakeRun{}, errors.New("the run ended before everything was delivered and committed")
	}
	s := report.Sample{Dur: end.Sub(first), Bytes: rep.Bytes, Rows: rep.Records, CPU: w.cpuEnd - w.cpuFirst}
	run := lakeRun{ingest: done.Sub(first), tail: end.Sub(done), tailCPU: w.cpuEnd - w.cpuDone, storeCPU: w.storeEnd - w.storeFirst,
		machineCPU: w.machEnd - w.machFirst, machineTailCPU: w.machEnd - w.machDone}
	if !withLake {
		return s, run, nil
	}
	run.segments, run.segmentMB = rep.DuckDBFiles, rep.DuckDBFilesMB
	if err := h.readLake(ctx, namespace, table, done, &run); err != nil {
		return s, run, err
	}
	if run.lakeRows != total {
		return s, run, fmt.Errorf("the lake holds %d rows of %d messages", run.lakeRows, total)
	}
	return s, run, nil
}

// readLake counts the main table's commits and data files, and the
// commits to every table of the run.
func (h *lakeHarness) readLake(ctx context.Context, namespace, table string, ingested time.Time, run *lakeRun) error {
	for _, name := range []string{table, table + "_dead_letters"} {
		t, err := h.lk.Table(ctx, namespace, name, nil, nil)
		if err != nil {
			return err
		}
		ice, err := t.Iceberg(ctx)
		if err != nil {
			return err
		}
		snaps := ice.Metadata().Snapshots()
		run.tables += len(snaps)
		if name != table {
			continue
		}
		run.commits = len(snaps)
		for _, s := range snaps {
			if time.UnixMilli(s.TimestampMs).Before(ingested) {
				run.commitsBefore++
			}
		}
		run.rotatedFiles, run.rotatedBytes = rotatedFiles(snaps)
		if cur := ice.CurrentSnapshot(); cur != nil && cur.Summary != nil {
			prop := func(k string) int64 { v, _ := strconv.ParseInt(cur.Summary.Properties[k], 10, 64); return v }
			run.files, run.fileBytes, run.lakeRows = prop("total-data-files"), prop("total-files-size"), prop("total-records")
		}
	}
	return nil
}

// rotatedFiles adds up the data files that every snapshot but the last
// (in sequence order) added, and their bytes.
func rotatedFiles(snaps []table.Snapshot) (files, bytes int64) {
	snaps = slices.Clone(snaps)
	slices.SortFunc(snaps, func(a, b table.Snapshot) int { return cmp.Compare(a.SequenceNumber, b.SequenceNumber) })
	for _, s := range snaps[:max(len(snaps)-1, 0)] {
		if s.Summary == nil {
			continue
		}
		n, _ := strconv.ParseInt(s.Summary.Properties["added-data-files"], 10, 64)
		b, _ := strconv.ParseInt(s.Summary.Properties["added-files-size"], 10, 64)
		files, bytes = files+n, bytes+b
	}
	return files, bytes
}

// stopAtEnd has the pipeline flush once the whole topic is delivered
// (as the kafka suite does), then stops its source cleanly, and records
// when the first message was delivered, when every row was committed to
// DuckDB, and when the stop's commit returned: with a lake, the commit of
// the final segment and of any still queued.
type stopAtEnd struct {
	ingest.Source
	total    int64
	storePID int

	delivered atomic.Int64
	flushed   sync.Once
	mu        sync.Mutex
	first     time.Time
	done, end time.Time
	// This process's CPU time at first delivery, when the rows were all
	// in DuckDB, and at the end; the object store's at first and end.
	cpuFirst, cpuDone, cpuEnd    time.Duration
	storeFirst, storeEnd         time.Duration
	machFirst, machDone, machEnd time.Duration
}

// Clients passes on the source's client count for the report.
func (s *stopAtEnd) Clients() int {
	if cc, ok := s.Source.(ingest.ClientCounter); ok {
		return cc.Clients()
	}
	return 1
}

func (s *stopAtEnd) Run(ctx context.Context, h ingest.Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return s.Source.Run(ctx, &stopHandler{Handler: h, s: s, stop: cancel})
}

// times returns the first delivery, the moment every row was in DuckDB
// and the end, and whether the run got to the end.
func (s *stopAtEnd) times() (first, done, end time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.done, s.end, !s.first.IsZero() && !s.done.IsZero() && !s.end.IsZero()
}

type stopHandler struct {
	ingest.Handler
	s    *stopAtEnd
	stop context.CancelFunc
}

func (h *stopHandler) Deliver(ctx context.Context, chunks []ingest.Chunk) error {
	var n int64
	for _, c := range chunks {
		n += int64(len(c.Messages))
	}
	if n > 0 {
		h.s.mu.Lock()
		if h.s.first.IsZero() {
			h.s.first, h.s.cpuFirst, h.s.storeFirst, h.s.machFirst = time.Now(), osfacts.SelfCPU(), pidCPU(h.s.storePID), machineBusy()
		}
		h.s.mu.Unlock()
	}
	if err := h.Handler.Deliver(ctx, chunks); err != nil {
		return err
	}
	if n > 0 && h.s.delivered.Add(n) >= h.s.total {
		// Flush the last partial batch at once rather than after the
		// flush interval, then stop: the source's clean stop commits
		// everything delivered (with a lake, to the lake). A failed
		// flush needs no handling: the pipeline's Run returns the error.
		h.s.flushed.Do(func() {
			go func() {
				defer h.stop()
				if _, err := h.Handler.Flush(ctx); err == nil {
					now, cpu, mach := time.Now(), osfacts.SelfCPU(), machineBusy()
					h.s.mu.Lock()
					h.s.done, h.s.cpuDone, h.s.machDone = now, cpu, mach
					h.s.mu.Unlock()
				}
			}()
		})
	}
	return nil
}

// Release is the commit of the clean stop: with a lake, it seals the live
// file and commits it and any segment still queued; without, it is Flush.
func (h *stopHandler) Release(ctx context.Context, topic string, partitions []int32, commit bool) (ingest.Offsets, error) {
	off, err := h.Handler.Release(ctx, topic, partitions, commit)
	if err == nil && commit && h.s.delivered.Load() >= h.s.total {
		now, cpu, store, mach := time.Now(), osfacts.SelfCPU(), pidCPU(h.s.storePID), machineBusy()
		h.s.mu.Lock()
		if !h.s.done.IsZero() {
			h.s.end, h.s.cpuEnd, h.s.storeEnd, h.s.machEnd = now, cpu, store, mach
		}
		h.s.mu.Unlock()
	}
	return off, err
}

// lakeReport builds the suite's tables.
func lakeReport(cfg LakeConfig, pipe, lk report.Stat, pipeRuns, lakeRuns []lakeRun, warehouse string) *report.Report {
	const shape = "flat, 14 fields"
	r := &report.Report{Suite: "lake", Reps: cfg.Reps}
	store := cfg.Store
	if store == "" {
		store = "S3 at " + cfg.S3.Endpoint
	}
	t := &report.Table{
		Title: fmt.Sprintf("Kafka → Iceberg on S3: %s messages, %s, %d partitions, in-process broker, %s, rotating at %s",
			report.FmtRows(int64(cfg.Messages)), shape, cfg.Partitions, store, fmtMiB(cfg.RotateBytes)),
		Note: "pipeline is Kafka → DuckDB alone (no rotation), first delivery to the last DuckDB commit; lake is the same pipeline " +
			"in lake mode (the main rows streamed into Parquet files, the rest in a DuckDB file) committing each segment to Iceberg tables (SQLite catalog, warehouse " + warehouse + "), first delivery to the last Iceberg commit, " +
			"the final segment sealed, uploaded and committed at the clean stop included; cores is this process's CPU time (broker included, object store not) over the run's time.",
		Columns: []string{"run", "ms", "rows/s", "MB/s", "cores", "vs pipeline"},
	}
	for _, s := range []report.Stat{pipe, lk} {
		r.Add("lake", shape, s)
		t.Rows = append(t.Rows, []string{s.Name, report.FmtMS(s), report.FmtRate(s.RowsPerSec()), report.FmtMBps(s), fmtCores(s.Cores()), report.FmtX(s.RowsPerSec() / pipe.RowsPerSec())})
		t.Bars = append(t.Bars, report.Bar{Group: shape, Series: s.Name, Value: s.RowsPerSec(), Unit: "rows/s"})
	}
	m := summarizeLake(lakeRuns)
	storeCores := 0.0
	if cfg.StorePID != 0 && lk.Median() > 0 {
		storeCores = m.storeCPU.Seconds() / lk.Median().Seconds()
	}
	pipeIngest := medianDur(pipeRuns, func(r lakeRun) time.Duration { return r.ingest })
	t.Footer = lakeOverlap(m, lk.Median()) + "\n" + lakeBound(pipe, lk, pipeIngest, m, storeCores, runtime.NumCPU())
	if mc := cores(m.machineCPU, lk.Median()); mc > 0 {
		t.Footer += fmt.Sprintf("\nThe machine as a whole (other processes included) had %.2f of %d cores busy over the lake runs, %.2f over their tails.",
			mc, runtime.NumCPU(), cores(m.machineTailCPU, m.tail))
	}
	r.Tables = append(r.Tables, t)

	perHour := 0.0
	if s := lk.Median().Seconds(); s > 0 {
		perHour = float64(m.commits) / s * 3600
	}
	meanFile := 0.0
	if m.files > 0 {
		meanFile = float64(m.fileBytes) / float64(m.files) / 1e6
	}
	rotatedMean := "-"
	if m.rotatedFiles > 0 {
		rotatedMean = fmt.Sprintf("%.1f", float64(m.rotatedBytes)/float64(m.rotatedFiles)/1e6)
	}
	meanSeg := 0.0
	if m.segments > 0 {
		meanSeg = float64(m.segmentMB) / float64(m.segments)
	}
	out := &report.Table{
		Title: "What the lake run wrote (median of the runs)",
		Note: "Data files and commits of the main table (each commit is one Iceberg snapshot; the dead-letter table " +
			"gets an empty commit beside each, counted in all commits); commits/h is the commits per hour at the lake run's rate, " +
			"the final commit at the stop included; rotated files are those of every commit but the last, whose segment the clean stop sealed before it reached --rotate-mb: " +
			"their mean is the file size a sustained ingest writes; segments are the segments sealed and committed, sized as the streamed Parquet written so far plus the DuckDB file (rotation is decided between batches, so they can outgrow --rotate-mb).",
		Columns: []string{"data files", "mean file MB", "rotated files", "their mean MB", "commits", "commits/h", "all commits", "segments", "mean segment MiB", "store cores"},
		Rows: [][]string{{
			fmt.Sprint(m.files), fmt.Sprintf("%.1f", meanFile), fmt.Sprint(m.rotatedFiles), rotatedMean, fmt.Sprint(m.commits), fmt.Sprintf("%.0f", perHour),
			fmt.Sprint(m.tables), fmt.Sprint(m.segments), fmt.Sprintf("%.0f", meanSeg), fmtCores(storeCores),
		}},
	}
	r.Tables = append(r.Tables, out)
	return r
}

// summarizeLake takes the median of each figure over the lake runs.
func summarizeLake(runs []lakeRun) lakeRun {
	i64 := func(f func(lakeRun) int64) int64 {
		v := make([]int64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return report.Median(v)
	}
	d := func(f func(lakeRun) time.Duration) time.Duration { return medianDur(runs, f) }
	return lakeRun{
		ingest:         d(func(r lakeRun) time.Duration { return r.ingest }),
		tail:           d(func(r lakeRun) time.Duration { return r.tail }),
		tailCPU:        d(func(r lakeRun) time.Duration { return r.tailCPU }),
		storeCPU:       d(func(r lakeRun) time.Duration { return r.storeCPU }),
		machineCPU:     d(func(r lakeRun) time.Duration { return r.machineCPU }),
		machineTailCPU: d(func(r lakeRun) time.Duration { return r.machineTailCPU }),
		commits:        int(i64(func(r lakeRun) int64 { return int64(r.commits) })),
		commitsBefore:  int(i64(func(r lakeRun) int64 { return int64(r.commitsBefore) })),
		files:          i64(func(r lakeRun) int64 { return r.files }),
		fileBytes:      i64(func(r lakeRun) int64 { return r.fileBytes }),
		rotatedFiles:   i64(func(r lakeRun) int64 { return r.rotatedFiles }),
		rotatedBytes:   i64(func(r lakeRun) int64 { return r.rotatedBytes }),
		lakeRows:       i64(func(r lakeRun) int64 { return r.lakeRows }),
		segments:       int(i64(func(r lakeRun) int64 { return int64(r.segments) })),
		segmentMB:      i64(func(r lakeRun) int64 { return r.segmentMB }),
		tables:         int(i64(func(r lakeRun) int64 { return int64(r.tables) })),
	}
}

func medianDur(runs []lakeRun, f func(lakeRun) time.Duration) time.Duration {
	v := make([]int64, len(runs))
	for i, r := range runs {
		v[i] = int64(f(r))
	}
	return time.Duration(report.Median(v))
}

// lakeOverlap says whether the uploads and commits overlapped ingest:
// how many lake commits landed while rows still went into DuckDB, and how
// long the lake run went on after the last DuckDB commit.
func lakeOverlap(m lakeRun, total time.Duration) string {
	tail := fmt.Sprintf("from the last local commit to the last lake commit (the final segment sealed, uploaded and committed, after any segment still uploading) took %d ms of the lake run's %d ms, %s cores busy",
		m.tail.Milliseconds(), total.Milliseconds(), fmtCores(cores(m.tailCPU, m.tail)))
	if m.commitsBefore == 0 {
		return "Upload did not overlap ingest: every lake commit came after the last local commit (more --messages or a smaller --rotate-mb rotate segments out during ingest); " + tail + "."
	}
	return fmt.Sprintf("Upload overlapped ingest: %d of %d lake commits landed while batches were still being committed locally; %s.", m.commitsBefore, m.commits, tail)
}

func cores(cpu, wall time.Duration) float64 {
	if wall <= 0 || cpu <= 0 {
		return 0
	}
	return cpu.Seconds() / wall.Seconds()
}

// lakeBound says what bound the lake run: how much of the time it took
// beyond the pipeline alone went to a slower ingest (rotations, uploads
// and commits beside it) and how much to the tail after the last DuckDB
// commit, and whether the CPU was saturated.
func lakeBound(pipe, lk report.Stat, pipeIngest time.Duration, m lakeRun, storeCores float64, ncpu int) string {
	vs := lk.RowsPerSec() / pipe.RowsPerSec()
	extra := lk.Median() - pipe.Median()
	slower := m.ingest - pipeIngest
	busy := lk.Cores() + storeCores
	own := fmt.Sprintf("%.2f", busy)
	if storeCores > 0 {
		own = fmt.Sprintf("%.2f: quiver with the broker %.2f, the object store %.2f", busy, lk.Cores(), storeCores)
	}
	who := fmt.Sprintf("%.2f of %d cores busy", busy, ncpu)
	if storeCores > 0 {
		who = fmt.Sprintf("%.2f of %d cores busy (quiver with the broker %.2f, the object store %.2f)", busy, ncpu, lk.Cores(), storeCores)
	}
	if machine := cores(m.machineCPU, lk.Median()); machine > busy {
		// Other processes took cores too.
		busy = machine
		who = fmt.Sprintf("%.2f of %d cores busy on the machine, other processes included (the lake run's own %s)", machine, ncpu, own)
	}
	split := fmt.Sprintf("of the %d ms it took beyond the pipeline alone, %d ms were a slower ingest (%d ms until every batch was committed locally, against %d ms) and %d ms the tail after it",
		extra.Milliseconds(), slower.Milliseconds(), m.ingest.Milliseconds(), pipeIngest.Milliseconds(), m.tail.Milliseconds())
	if extra < 0 {
		split = fmt.Sprintf("it took %d ms less than the pipeline alone: %d ms until every batch was committed locally (the main rows streamed into Parquet, not stored in DuckDB), against %d ms, then %d ms of tail",
			-extra.Milliseconds(), m.ingest.Milliseconds(), pipeIngest.Milliseconds(), m.tail.Milliseconds())
	}
	tailCores, tailMachine := cores(m.tailCPU, m.tail), cores(m.machineTailCPU, m.tail)
	switch {
	case lk.Cores() == 0:
		return fmt.Sprintf("The lake run ran at %.2f× the pipeline's rate; its CPU time was not measured; %s.", vs, split)
	case vs > 1:
		return fmt.Sprintf("Faster than the pipeline alone: %.2f× its rate with %s; %s.", vs, who, split)
	case vs >= 0.95:
		return fmt.Sprintf("The lake cost little: %.2f× the pipeline's rate with %s; %s.", vs, who, split)
	case busy >= 0.9*float64(ncpu):
		return fmt.Sprintf("Bound by the CPU: %s at %.2f× the pipeline's rate; %s.", who, vs, split)
	case m.tail > slower && tailCores >= 0.8:
		return fmt.Sprintf("Bound by the final commit at the stop, serial work on about one core (%.2f cores busy in the tail): %.2f× the pipeline's rate with %s; %s.", tailCores, vs, who, split)
	case m.tail > slower && tailMachine >= 0.9*float64(ncpu):
		return fmt.Sprintf("Bound by the final commit at the stop, short of CPU (quiver %.2f cores in the tail, the machine %.2f of %d with other processes): %.2f× the pipeline's rate with %s; %s.", tailCores, tailMachine, ncpu, vs, who, split)
	case m.tail > slower:
		return fmt.Sprintf("Bound by the final commit at the stop, mostly waiting on the store and catalog (%.2f cores busy in the tail): %.2f× the pipeline's rate with %s; %s.", tailCores, vs, who, split)
	}
	return fmt.Sprintf("Bound by a slower ingest, neither CPU-bound nor by the final commit: %.2f× the pipeline's rate with %s; rotations (a checkpoint and seal between batches) and the uploads beside them held the stages up; %s.", vs, who, split)
}

func fmtMiB(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
