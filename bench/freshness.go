package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/quiverdata/quiver/bench/report"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/quiverdata/quiver/bench/stages"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/kafka"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

// Freshness modes: where the rows go, and who reads them.
const (
	// FreshServe ingests inside quiver serve (serve --ingest) and reads
	// over Flight.
	FreshServe = "serve"
	// FreshLake ingests with a lake pipeline (quiver ingest --lake, with
	// its commit interval and compactor) and reads through quiver serve
	// --lake over Flight, and pyiceberg when a Python has it.
	FreshLake = "lake"
)

// FreshnessConfig configures the freshness suite.
type FreshnessConfig struct {
	// Mode is FreshServe or FreshLake.
	Mode string
	// Duration is how long messages are produced.
	Duration time.Duration
	// Rate is the messages produced per second, the flat benchmark
	// message of quiver bench kafka.
	Rate int
	// Partitions of the topic.
	Partitions int32
	// Brokers of a running Kafka; empty starts an in-process one.
	Brokers []string
	// Poll is how often each reader looks (100 ms over Flight for serve,
	// 1 s for the lake).
	Poll time.Duration
	// Every is the sampling: one message in Every is timed.
	Every int
	// FlushInterval cuts the pipeline's batches (serve: 250 ms).
	FlushInterval time.Duration
	// CommitInterval, CompactInterval and TargetFileBytes are the lake
	// pipeline's.
	CommitInterval, CompactInterval time.Duration
	TargetFileBytes                 int64
	// S3, when set, puts the lake on this store instead of a local
	// directory.
	S3     *lake.S3Config
	Bucket string
	// QueryClients run queries on the server meanwhile (serve): three in
	// four point queries, one in four a 1M-row fetch.
	QueryClients int
	// Python, when set, is a Python with pyiceberg that reads the lake
	// too.
	Python string
	// Progress, when set, receives a line every 10 s.
	Progress io.Writer
	Logger   *slog.Logger
}

func (c FreshnessConfig) withDefaults() FreshnessConfig {
	if c.Mode == "" {
		c.Mode = FreshServe
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Minute
	}
	if c.Rate <= 0 {
		c.Rate = 100_000
	}
	if c.Partitions <= 0 {
		c.Partitions = 4
	}
	if c.Poll <= 0 {
		c.Poll = 100 * time.Millisecond
		if c.Mode == FreshLake {
			c.Poll = time.Second
		}
	}
	if c.Every <= 0 {
		c.Every = 100
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = 250 * time.Millisecond
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = ingest.DefaultCommitInterval
	}
	if c.CompactInterval <= 0 {
		c.CompactInterval = ingest.DefaultCompactInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// sample is a timed message: where Kafka put it and when it was handed to
// the producer.
type sample struct {
	offset int64
	at     time.Time
}

// samples are the timed messages of each partition, in offset order.
type samples struct {
	mu   sync.Mutex
	byP  map[int32][]sample
	sent atomic.Int64 // messages acknowledged by Kafka
}

func (s *samples) add(p int32, off int64, at time.Time) {
	s.mu.Lock()
	s.byP[p] = append(s.byP[p], sample{off, at})
	s.mu.Unlock()
}

// reader is one polling reader of the ingested rows: it returns, per
// partition, the next offset past the rows it sees.
type reader struct {
	name string
	poll func(ctx context.Context, from int64) (map[int32]int64, error)
	// Measured.
	lat    []time.Duration
	next   map[int32]int // per partition, the first sample not seen yet
	errs   int
	lastEr error
}

// see records the samples that became visible at t.
func (r *reader) see(s *samples, vis map[int32]int64, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, end := range vis {
		list := s.byP[p]
		i := r.next[p]
		for i < len(list) && list[i].offset < end {
			r.lat = append(r.lat, t.Sub(list[i].at))
			i++
		}
		r.next[p] = i
	}
}

// low is the smallest offset not yet seen over the partitions, which the
// next poll reads from.
func (r *reader) low(s *samples) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	low := int64(-1)
	for p, list := range s.byP {
		i := r.next[p]
		var o int64
		if i > 0 {
			o = list[i-1].offset
		}
		if low < 0 || o < low {
			low = o
		}
	}
	return max(low, 0)
}

// lakePoint is the lake table's data files at a moment.
type lakePoint struct {
	at           time.Duration
	files, bytes int64
}

// Freshness runs the freshness suite: it produces the flat benchmark
// message at a sustained rate, ingests it (inside quiver serve, or with a
// lake pipeline), and times each sampled message from its production to
// the first poll of each reader that sees it.
func Freshness(ctx context.Context, cfg FreshnessConfig) (*report.Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Mode != FreshServe && cfg.Mode != FreshLake {
		return nil, fmt.Errorf("freshness: unknown mode %q: use serve or lake", cfg.Mode)
	}
	tmp, err := os.MkdirTemp("", "quiver-fresh-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	md, pool, err := stages.FlatPool(ctx, tmp, 4096)
	if err != nil {
		return nil, err
	}
	topic := fmt.Sprintf("quiver-fresh-%d", time.Now().UnixNano())
	brokers := cfg.Brokers
	if len(brokers) == 0 {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(cfg.Partitions, topic))
		if err != nil {
			return nil, fmt.Errorf("start in-process kafka: %w", err)
		}
		defer c.Close()
		brokers = c.ListenAddrs()
	}
	src, err := kafka.New(kafka.Brokers(brokers...), kafka.Topic(topic), kafka.Group("fresh"), kafka.Logger(cfg.Logger),
		kafka.InstanceID(""))
	if err != nil {
		return nil, err
	}
	pcfg := ingest.Config{Table: "events", Message: md, FlushInterval: cfg.FlushInterval, ReportInterval: -1, Logger: cfg.Logger}

	run := &freshRun{cfg: cfg, s: &samples{byP: map[int32][]sample{}}, start: time.Now()}
	var srv *server.Server
	var lk *lake.Lake
	var ice *lake.Table
	stopIngest := func() {}
	switch cfg.Mode {
	case FreshServe:
		srv, err = server.Start(ctx, server.Config{DB: filepath.Join(tmp, "served.duckdb"), FlightAddr: "127.0.0.1:0",
			Logger: cfg.Logger, Announce: func(string, string) {}, Ingest: []server.IngestPipeline{{Name: "fresh", Config: pcfg, Source: src}}})
		if err != nil {
			return nil, err
		}
		defer srv.Shutdown(context.WithoutCancel(ctx))
	case FreshLake:
		lcfg := lake.Config{Warehouse: "file://" + filepath.Join(tmp, "lake")}
		if cfg.S3 != nil {
			lcfg = lake.Config{Warehouse: "s3://" + cfg.Bucket + "/fresh-" + randomHex(6), CatalogURI: "sqlite:///" + filepath.Join(tmp, "catalog.db"), S3: *cfg.S3}
		}
		if lk, err = lake.Open(ctx, lcfg); err != nil {
			return nil, err
		}
		defer lk.Close()
		pcfg.DBPath = filepath.Join(tmp, "live.duckdb")
		pcfg.CommitInterval = cfg.CommitInterval
		pcfg.Lake = &ingest.LakeConfig{Lake: lk, Namespace: "quiver", Group: "fresh", Topic: topic,
			Maintain: ingest.Maintenance{Interval: cfg.CompactInterval, TargetFileBytes: cfg.TargetFileBytes}}
		p, err := ingest.New(pcfg)
		if err != nil {
			return nil, err
		}
		ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan error, 1)
		go func() { _, err := p.Run(ictx, src); done <- err }()
		stopIngest = func() {
			cancel()
			if err := <-done; err != nil {
				run.note("ingest: %v", err)
			}
		}
		defer stopIngest()
		// The pipeline makes the table; the server lists it when a query
		// names it.
		for ice == nil {
			if ice, err = lk.Table(ctx, "quiver", "events", nil, nil); err != nil {
				ice = nil
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		srv, err = server.Start(ctx, server.Config{DB: ":memory:", FlightAddr: "127.0.0.1:0", Logger: cfg.Logger,
			Announce: func(string, string) {}, Lake: &server.LakeConfig{Iceberg: lcfg, CacheDir: filepath.Join(tmp, "cache")}})
		if err != nil {
			return nil, err
		}
		defer srv.Shutdown(context.WithoutCancel(ctx))
	}
	cl, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	table, pcol := "events", ingest.ColPartition
	if cfg.Mode == FreshLake {
		table, pcol = "lake.quiver.events", ingest.LakeColPartition
	}
	run.readers = append(run.readers, &reader{name: "quiver over Flight", next: map[int32]int{},
		poll: func(ctx context.Context, from int64) (map[int32]int64, error) {
			return maxOffsets(ctx, cl, fmt.Sprintf("SELECT %s::INTEGER, max(%s) + 1 FROM %s WHERE %s >= %d GROUP BY 1", pcol, ingest.ColOffset, table, ingest.ColOffset, from))
		}})
	if cfg.Mode == FreshLake && cfg.Python != "" {
		r, stop, err := pyicebergReader(ctx, cfg, lk, tmp)
		if err != nil {
			return nil, err
		}
		defer stop()
		run.readers = append(run.readers, r)
	}

	wctx, stopWork := context.WithCancel(ctx)
	var work sync.WaitGroup
	for _, r := range run.readers {
		work.Add(1)
		go func() { defer work.Done(); run.pollLoop(wctx, r) }()
	}
	if cfg.QueryClients > 0 {
		if err := run.startQueries(wctx, &work, srv.FlightAddr); err != nil {
			stopWork()
			return nil, err
		}
	}
	if ice != nil {
		work.Add(1)
		go func() { defer work.Done(); run.watchLake(wctx, ice) }()
	}
	produced, err := run.produce(ctx, brokers, topic, pool)
	// Let the readers catch up with the last messages: the lake's last
	// commit and a reader's last poll. The wait ends once every timed
	// message is seen, so it can be long: a loaded machine showed
	// messages 4 s late at the end of a run, and a shorter wait counted
	// them as unseen, as if lost.
	settle := 3*cfg.Poll + 30*time.Second
	if cfg.Mode == FreshLake {
		settle = cfg.CommitInterval + 5*cfg.Poll + 30*time.Second
	}
	run.waitSeen(ctx, settle)
	stopWork()
	work.Wait()
	if err != nil {
		return nil, err
	}
	return run.report(produced), nil
}

// freshRun is one run's state.
type freshRun struct {
	cfg     FreshnessConfig
	s       *samples
	start   time.Time
	readers []*reader

	mu     sync.Mutex
	lake   []lakePoint
	small  []time.Duration
	bulk   int
	notes  []string
	ingest time.Time // when the last produced message was acknowledged
}

func (r *freshRun) note(format string, args ...any) {
	r.mu.Lock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// produce sends Rate messages a second for Duration, in 10 ms ticks, and
// times one in Every. It returns the messages Kafka acknowledged.
func (r *freshRun) produce(ctx context.Context, brokers []string, topic string, pool [][]byte) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2*time.Millisecond),
		kgo.MaxBufferedRecords(max(10_000, r.cfg.Rate)))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	const tick = 10 * time.Millisecond
	per := float64(r.cfg.Rate) * tick.Seconds()
	var failed atomic.Value
	t := time.NewTicker(tick)
	defer t.Stop()
	end := time.Now().Add(r.cfg.Duration)
	lastReport := time.Now()
	var n int64
	due := 0.0
	for time.Now().Before(end) {
		select {
		case <-t.C:
		case <-ctx.Done():
			return r.s.sent.Load(), ctx.Err()
		}
		due += per
		now := time.Now()
		for ; due >= 1; due-- {
			rec := &kgo.Record{Value: pool[n%int64(len(pool))], Timestamp: now}
			timed := n%int64(r.cfg.Every) == 0
			n++
			cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				r.s.sent.Add(1)
				if timed {
					r.s.add(rec.Partition, rec.Offset, rec.Timestamp)
				}
			})
		}
		if time.Since(lastReport) >= 10*time.Second {
			lastReport = time.Now()
			fmt.Fprintf(r.cfg.Progress, "freshness: %s: %s messages produced%s\n", time.Since(r.start).Round(time.Second), report.FmtRows(r.s.sent.Load()), r.progress())
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return r.s.sent.Load(), err
	}
	r.mu.Lock()
	r.ingest = time.Now()
	r.mu.Unlock()
	if err, _ := failed.Load().(error); err != nil {
		return r.s.sent.Load(), fmt.Errorf("produce: %w", err)
	}
	return r.s.sent.Load(), nil
}

// progress is the readers' p99 so far, for the progress line.
func (r *freshRun) progress() string {
	var b strings.Builder
	for _, rd := range r.readers {
		r.s.mu.Lock()
		lat := slices.Clone(rd.lat)
		r.s.mu.Unlock()
		if len(lat) > 0 {
			slices.Sort(lat)
			fmt.Fprintf(&b, "; %s p99 %s", rd.name, pct(lat, 0.99).Round(time.Millisecond))
		}
	}
	return b.String()
}

// pollLoop polls one reader until ctx is done.
func (r *freshRun) pollLoop(ctx context.Context, rd *reader) {
	t := time.NewTicker(r.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		vis, err := rd.poll(ctx, rd.low(r.s))
		if err != nil {
			if ctx.Err() == nil {
				r.s.mu.Lock()
				rd.errs++
				rd.lastEr = err
				r.s.mu.Unlock()
			}
			continue
		}
		rd.see(r.s, vis, time.Now())
	}
}

// waitSeen waits, up to limit, until every reader has seen every sample.
func (r *freshRun) waitSeen(ctx context.Context, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		all := true
		r.s.mu.Lock()
		for _, rd := range r.readers {
			for p, list := range r.s.byP {
				if rd.next[p] < len(list) {
					all = false
				}
			}
		}
		r.s.mu.Unlock()
		if all {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchLake records the lake table's data files every 10 s (and once at
// the start).
func (r *freshRun) watchLake(ctx context.Context, t *lake.Table) {
	every := 10 * time.Second
	if r.cfg.Duration < time.Minute {
		every = time.Second
	}
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		if tbl, err := t.Iceberg(ctx); err == nil && tbl.CurrentSnapshot() != nil && tbl.CurrentSnapshot().Summary != nil {
			props := tbl.CurrentSnapshot().Summary.Properties
			files, _ := strconv.ParseInt(props["total-data-files"], 10, 64)
			bytes, _ := strconv.ParseInt(props["total-files-size"], 10, 64)
			r.mu.Lock()
			r.lake = append(r.lake, lakePoint{at: time.Since(r.start), files: files, bytes: bytes})
			r.mu.Unlock()
		}
		select {
		case <-tk.C:
		case <-ctx.Done():
			return
		}
	}
}

// startQueries starts the query clients: three in four run point queries
// on a 1M-row table, one in four fetches it whole.
func (r *freshRun) startQueries(ctx context.Context, wg *sync.WaitGroup, addr string) error {
	setup, err := client.Dial(ctx, client.Config{Addr: addr})
	if err != nil {
		return err
	}
	_, err = setup.Exec(ctx, "CREATE TABLE fresh_points AS SELECT range AS k, range * 2 AS v, 'name-' || range AS name FROM range(1000000)")
	setup.Close()
	if err != nil {
		return fmt.Errorf("create the query clients' table: %w", err)
	}
	for i := range r.cfg.QueryClients {
		c, err := client.Dial(ctx, client.Config{Addr: addr})
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for ctx.Err() == nil {
				if i%4 == 3 {
					if _, err := countRows(ctx, c, "SELECT * FROM fresh_points"); err == nil {
						r.mu.Lock()
						r.bulk++
						r.mu.Unlock()
					}
					continue
				}
				t := time.Now()
				if _, err := countRows(ctx, c, fmt.Sprintf("SELECT * FROM fresh_points WHERE k = %d", rng.IntN(1_000_000))); err == nil {
					r.mu.Lock()
					r.small = append(r.small, time.Since(t))
					r.mu.Unlock()
				}
			}
		}()
	}
	return nil
}

func countRows(ctx context.Context, c *client.Client, sql string) (int64, error) {
	rd, err := c.Query(ctx, sql)
	if err != nil {
		return 0, err
	}
	defer rd.Release()
	var n int64
	for rd.Next() {
		n += rd.RecordBatch().NumRows()
	}
	return n, rd.Err()
}

// maxOffsets runs a query of (partition, next offset) rows.
func maxOffsets(ctx context.Context, c *client.Client, sql string) (map[int32]int64, error) {
	rd, err := c.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	out := map[int32]int64{}
	for rd.Next() {
		rec := rd.RecordBatch()
		ps, os := rec.Column(0).(*array.Int32), rec.Column(1).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			if !os.IsNull(i) {
				out[ps.Value(i)] = os.Value(i)
			}
		}
	}
	return out, rd.Err()
}

// pyicebergScript polls the lake table with pyiceberg: every interval it
// loads the table afresh, scans the offsets at or past the given one, and
// prints one JSON line of next offsets per partition.
const pyicebergScript = `
import json, sys, time
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import GreaterThanOrEqual
cfg = json.loads(sys.argv[1])
cat = SqlCatalog("quiver", **cfg["props"])
low = 0
while True:
    try:
        t = cat.load_table("quiver.events")
        tb = t.scan(row_filter=GreaterThanOrEqual("_offset", low), selected_fields=("_kafka_partition", "_offset")).to_arrow()
        out = {}
        for p, o in zip(tb.column(0).to_pylist(), tb.column(1).to_pylist()):
            if p is not None and o is not None and o + 1 > out.get(p, -1):
                out[p] = o + 1
        if out:
            low = max(0, min(out.values()) - 1)
        print(json.dumps({str(k): v for k, v in out.items()}), flush=True)
    except Exception as e:
        print(json.dumps({"error": str(e)}), flush=True)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        break
`

// pyicebergReader starts a pyiceberg process that answers a poll per line
// it reads.
func pyicebergReader(ctx context.Context, cfg FreshnessConfig, lk *lake.Lake, tmp string) (*reader, func(), error) {
	if cfg.S3 != nil {
		return nil, nil, errors.New("freshness: the pyiceberg reader reads a file:// lake only")
	}
	props := map[string]string{"uri": "sqlite:///" + filepath.Join(tmp, "lake", "catalog.db"), "warehouse": "file://" + filepath.Join(tmp, "lake")}
	arg, err := json.Marshal(map[string]any{"props": props})
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, cfg.Python, "-c", pyicebergScript, string(arg))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start pyiceberg: %w", err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var mu sync.Mutex
	first := true
	r := &reader{name: "pyiceberg", next: map[int32]int{}, poll: func(ctx context.Context, _ int64) (map[int32]int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if !first {
			if _, err := io.WriteString(in, "\n"); err != nil {
				return nil, err
			}
		}
		first = false
		if !sc.Scan() {
			return nil, fmt.Errorf("pyiceberg ended: %v", sc.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, err
		}
		if e, ok := m["error"]; ok {
			return nil, fmt.Errorf("pyiceberg: %v", e)
		}
		vis := map[int32]int64{}
		for k, v := range m {
			p, _ := strconv.Atoi(k)
			if f, ok := v.(float64); ok {
				vis[int32(p)] = int64(f)
			}
		}
		return vis, nil
	}}
	return r, func() { in.Close(); _ = cmd.Wait() }, nil
}

// pct is the q quantile of sorted durations.
func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// report builds the suite's tables.
func (r *freshRun) report(produced int64) *report.Report {
	cfg := r.cfg
	rep := &report.Report{Suite: "freshness", Reps: 1}
	where := "inside quiver serve (serve --ingest), read over Flight"
	if cfg.Mode == FreshLake {
		where = fmt.Sprintf("a lake pipeline (commit every %s, compaction every %s), read through quiver serve --lake", cfg.CommitInterval, cfg.CompactInterval)
	}
	vis := &report.Table{
		Title: fmt.Sprintf("Freshness: produce → visible, %s msgs/s for %s, %d partitions, %s", report.FmtRate(float64(cfg.Rate)), cfg.Duration, cfg.Partitions, where),
		Note: fmt.Sprintf("One message in %d is timed from the moment it is handed to the producer to the end of the first poll (every %s) that sees it; "+
			"a reader sees a partition up to the largest offset its query returns.", cfg.Every, cfg.Poll),
		Columns: []string{"reader", "timed", "p50", "p99", "max", "unseen", "poll errors"},
	}
	elapsed := r.ingest.Sub(r.start)
	if elapsed <= 0 {
		elapsed = time.Since(r.start)
	}
	r.s.mu.Lock()
	total := 0
	for _, l := range r.s.byP {
		total += len(l)
	}
	for _, rd := range r.readers {
		lat := slices.Clone(rd.lat)
		slices.Sort(lat)
		p50, p99, mx := pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1)
		errs := strconv.Itoa(rd.errs)
		if rd.lastEr != nil {
			errs += " (" + rd.lastEr.Error() + ")"
		}
		vis.Rows = append(vis.Rows, []string{rd.name, strconv.Itoa(len(lat)), fmtDur(p50), fmtDur(p99), fmtDur(mx), strconv.Itoa(total - len(lat)), errs})
		for _, q := range []struct {
			s string
			d time.Duration
		}{{"p50", p50}, {"p99", p99}, {"max", mx}} {
			vis.Bars = append(vis.Bars, report.Bar{Group: rd.name, Series: q.s, Value: q.d.Seconds(), Unit: "s"})
		}
		rep.Results = append(rep.Results, report.Result{Table: "freshness", Case: cfg.Mode, Contender: rd.name,
			MedianMS: report.Millis(p50), MinMS: report.Millis(pct(lat, 0)), MaxMS: report.Millis(mx), Rows: int64(len(lat))})
	}
	r.s.mu.Unlock()
	vis.Footer = fmt.Sprintf("throughput: %s messages acknowledged by Kafka in %s, %s msgs/s (target %s)", report.FmtRows(produced),
		elapsed.Round(time.Millisecond), report.FmtRate(float64(produced)/elapsed.Seconds()), report.FmtRate(float64(cfg.Rate)))
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.notes) > 0 {
		vis.Footer += "\n" + strings.Join(r.notes, "\n")
	}
	rep.Tables = append(rep.Tables, vis)
	if len(r.small) > 0 {
		small := slices.Clone(r.small)
		slices.Sort(small)
		rep.Tables = append(rep.Tables, &report.Table{
			Title:   fmt.Sprintf("Queries meanwhile: %d clients", cfg.QueryClients),
			Columns: []string{"queries", "count", "p50", "p99"},
			Rows: [][]string{{"point (one row of 1M)", strconv.Itoa(len(small)), fmtDur(pct(small, 0.5)), fmtDur(pct(small, 0.99))},
				{"fetch (1M rows)", strconv.Itoa(r.bulk), "", ""}},
		})
	}
	if len(r.lake) > 0 {
		lt := &report.Table{Title: "Lake table over time: data files and their mean size", Columns: []string{"at", "files", "mean MiB", "total MiB"}}
		files := report.Line{Name: "data files", Unit: "files"}
		mean := report.Line{Name: "mean file MiB", Unit: "MiB"}
		step := max(1, len(r.lake)/20)
		for i, p := range r.lake {
			m := 0.0
			if p.files > 0 {
				m = float64(p.bytes) / float64(p.files) / (1 << 20)
			}
			files.X, files.Y = append(files.X, p.at.Seconds()), append(files.Y, float64(p.files))
			mean.X, mean.Y = append(mean.X, p.at.Seconds()), append(mean.Y, m)
			if i%step == 0 || i == len(r.lake)-1 {
				lt.Rows = append(lt.Rows, []string{p.at.Round(time.Second).String(), strconv.FormatInt(p.files, 10), fmt.Sprintf("%.1f", m), fmt.Sprintf("%.1f", float64(p.bytes)/(1<<20))})
			}
		}
		lt.Lines = []report.Line{files, mean}
		rep.Tables = append(rep.Tables, lt)
	}
	return rep
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
