package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
)

// idleGrace is the least time IdleExit waits for the first message.
const idleGrace = 10 * time.Second

// errStopped is returned to a source that calls the pipeline after its
// Run returned.
var errStopped = errors.New("pipeline stopped")

// errIdle ends a run that saw no message for Config.IdleExit.
var errIdle = errors.New("no message for the idle-exit interval")

// Pipeline moves messages from a Source into DuckDB (see the package
// documentation). Build it with New and run it once with Run.
type Pipeline struct {
	cfg     Config
	log     *slog.Logger
	schemas schemas

	// Set up by Run.
	store      *store
	rotator    *rotator
	sink       *icebergSink // lake mode only
	servedLake *servedLake  // a lake fed from the served database (Config.DB with Config.Lake)
	seq        *sequencer
	budget     *budget // messages accepted, not yet decoded
	byteBudget *budget // their bytes
	in         chan inItem
	inMu       sync.RWMutex // held to send on in; closing takes it exclusively
	inClosed   bool
	stop       context.Context // done once a stage has failed
	fail       context.CancelCauseFunc
	start      time.Time
	lastMsg    atomic.Int64 // unix nanos of the last delivery
	delivering atomic.Int32 // Deliver calls under way (waiting for room included)
	handover   atomic.Int32 // Assigned and Release calls under way (the source's polls wait for them)
	firstMsg   atomic.Int64 // unix nanos of the first delivery
	lastCommit atomic.Int64 // unix nanos of the last commit
	paused     atomic.Bool
	resumed    chan struct{} // closed and replaced when a pause ends
	pauseMu    sync.Mutex
	clients    int
	records    atomic.Int64
	norm       atomic.Int64
	dead       atomic.Int64
	bytes      atomic.Int64
	runCalls   atomic.Int32

	// For Live: refs is set once Run has set up, diskFree is the last
	// measurement (-1: none), live the positions and the last error.
	refs     atomic.Pointer[liveRefs]
	diskFree atomic.Int64
	live     liveState
}

// New validates cfg and returns a pipeline. It compiles the decode plan
// once to check the message type and the normalizer spec.
func New(cfg Config) (*Pipeline, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sc, err := newSchemas(cfg.Message, cfg.Normalize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if sc.norm == nil {
		cfg.NormTable = ""
	}
	p := &Pipeline{cfg: cfg, schemas: sc}
	p.diskFree.Store(-1)
	if cfg.Lake != nil {
		p.live.topic = cfg.Lake.Topic
	}
	// Every part of the pipeline logs through cfg.Logger: the tap makes
	// the last error any of them logs the one Live shows.
	p.cfg.Logger = slog.New(errorTap{next: cfg.Logger.Handler(), note: p.noteError})
	p.log = p.cfg.Logger.With("component", "ingest")
	return p, nil
}

// Config returns the configuration with defaults filled in.
func (p *Pipeline) Config() Config { return p.cfg }

// Run opens the database, recovers from any earlier crash, and moves
// messages from src until ctx is done, the source fails, or the pipeline
// is idle for Config.IdleExit. It then drains: everything delivered is
// committed, and a running export gets Config.ShutdownTimeout to finish.
// It returns the final report, and the first error that stopped the run
// (nil when ctx ended it). Live may be called meanwhile.
func (p *Pipeline) Run(ctx context.Context, src Source) (rep Report, err error) {
	if p.runCalls.Add(1) > 1 {
		return Report{}, errors.New("run pipeline: Run may be called only once")
	}
	defer func() {
		if err != nil {
			p.noteError(err.Error(), time.Now())
		}
	}()
	p.start = time.Now()
	if cc, ok := src.(ClientCounter); ok {
		p.clients = cc.Clients()
	} else {
		p.clients = 1
	}
	if tn, ok := src.(TopicNamer); ok {
		p.live.mu.Lock()
		p.live.setTopic(tn.Topic())
		p.live.mu.Unlock()
	}
	if p.cfg.Lake != nil && p.cfg.DB == nil {
		// The live file of an earlier run held rows only in part (see
		// lakestream.go): its partitions resume from the lake.
		removed, err := removeLiveForLake(p.cfg.DBPath)
		if err != nil {
			return p.report(), err
		}
		if len(removed) > 0 {
			p.log.Info("removed the live file and streams of an earlier run; their partitions resume from the lake's offsets", "files", removed)
		}
	}
	st, err := openStore(ctx, &p.cfg, p.schemas)
	if err != nil {
		return p.report(), err
	}
	p.store = st
	defer func() {
		if err := st.close(); err != nil {
			p.log.Error("close database", "err", err)
		}
	}()
	err = p.setupRotation(ctx)
	if p.rotator != nil && p.rotator.exportDB != nil {
		defer p.rotator.exportDB.Close() // when Run returns, after the exports stopped
	}
	if st.stream != nil {
		defer st.stream.abort() // the live segment's rows are read again on the next start
	}
	if err != nil {
		return p.report(), err
	}

	p.seq = newSequencer()
	p.budget = newBudget(int64(p.cfg.QueueMessages), queuedMessages)
	p.byteBudget = newBudget(p.cfg.QueueBytes, queuedBytes)
	p.in = make(chan inItem, 64)
	p.resumed = make(chan struct{})
	p.lastMsg.Store(time.Now().UnixNano())
	stop, fail := context.WithCancelCause(context.Background())
	defer fail(nil)
	p.stop, p.fail = stop, fail
	p.rotator.fatal = func(err error) {
		p.seq.fail(err)
		fail(err)
	}
	refs := &liveRefs{store: st, rotator: p.rotator, sink: p.sink}
	if p.servedLake != nil {
		refs.sink = p.servedLake.sink
	}
	p.refs.Store(refs)

	// Stages: they stop when their input closes (a drain) or when stop is
	// done (a failure, or a drain that overran the shutdown timeout).
	jobs := make(chan *batchJob, p.cfg.Decoders)
	recs := make(chan *decoded, p.cfg.Decoders)
	work := make(chan *decoded, p.cfg.QueueBatches)
	var stages sync.WaitGroup
	goStage := func(name string, fn func() error) {
		stages.Add(1)
		go func() {
			defer stages.Done()
			if err := fn(); err != nil && stop.Err() == nil {
				p.log.Error("stage failed", "stage", name, "err", err)
				p.seq.fail(err)
				fail(fmt.Errorf("%s: %w", name, err))
			}
		}()
	}
	b := &batcher{size: p.cfg.BatchRows, maxBytes: maxBatchBytes, linger: p.cfg.FlushInterval, in: p.in, out: jobs}
	goStage("batcher", func() error { return b.run(stop) })
	var decoders sync.WaitGroup
	for range p.cfg.Decoders {
		decoders.Add(1)
		goStage("decoder", func() error {
			defer decoders.Done()
			return p.decodeLoop(stop, jobs, recs)
		})
	}
	go func() { decoders.Wait(); close(recs) }()
	goStage("sequencer", func() error { return p.feedLoop(stop, recs, work) })
	for range p.cfg.Inserters {
		goStage("inserter", func() error { return p.insertLoop(stop, work) })
	}

	// Helpers that only watch: they stop with aux.
	aux, stopAux := context.WithCancel(context.Background())
	var helpers sync.WaitGroup
	goHelper := func(fn func(context.Context)) {
		helpers.Add(1)
		go func() { defer helpers.Done(); fn(aux) }()
	}
	exportCtx, stopExports := context.WithCancel(context.Background())
	var exports sync.WaitGroup
	if p.rotator.exporter != nil {
		exports.Add(1)
		go func() { defer exports.Done(); p.rotator.runExports(exportCtx) }()
	}
	srcCtx, stopSrc := context.WithCancelCause(ctx)
	defer stopSrc(nil)
	go func() {
		select {
		case <-stop.Done():
			stopSrc(context.Cause(stop))
		case <-srcCtx.Done():
		}
	}()
	goHelper(p.reportLoop)
	p.checkDisk(p.diskGuard())
	goHelper(p.diskLoop)
	if p.cfg.IdleExit > 0 {
		goHelper(func(ctx context.Context) { p.idleLoop(ctx, stopSrc) })
	}
	if p.servedLake != nil {
		goHelper(p.servedLake.run)
	}
	if p.cfg.Lake != nil && p.cfg.Lake.Maintain.Interval > 0 {
		sink, owns0 := p.sink, func() bool { return p.sink.ownedSet()[0] }
		if p.servedLake != nil {
			sink, owns0 = p.servedLake.sink, func() bool { return p.servedLake.owned()[0] }
		}
		goHelper(func(ctx context.Context) { p.maintainLoop(ctx, func() []sinkTable { return sink.tables }, owns0) })
	}

	p.log.Info("ingest started", "table", p.cfg.Table, "batch_rows", p.cfg.BatchRows, "decoders", p.cfg.Decoders,
		"inserters", p.cfg.Inserters, "queue_messages", p.cfg.QueueMessages, "export_dir", p.cfg.ExportDir, "lake", p.cfg.Lake != nil)
	srcErr := src.Run(srcCtx, handler{p})

	// Drain what was delivered, within the shutdown timeout.
	p.inMu.Lock()
	p.inClosed = true
	close(p.in)
	p.inMu.Unlock()
	drained := make(chan struct{})
	go func() { stages.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(p.cfg.ShutdownTimeout):
		p.log.Warn("drain took longer than the shutdown timeout; abandoning uncommitted batches (they will be consumed again)")
		fail(errors.New("shutdown timeout"))
		<-drained
	}
	p.discard(jobs, recs, work)
	stopAux()
	helpers.Wait()
	if p.rotator.exporter != nil {
		wctx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownTimeout)
		if !p.rotator.waitIdle(wctx) {
			p.log.Warn("export still running at shutdown; it will be redone on the next start")
		}
		cancel()
	}
	stopExports()
	exports.Wait()
	if p.servedLake != nil && context.Cause(stop) == nil {
		// A clean stop commits what the served tables hold; what it
		// cannot is committed by the next run's first round.
		wctx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownTimeout)
		if err := p.servedLake.round(wctx, p.servedLake.owned()); err != nil {
			p.log.Warn("lake commit at stop failed; the next start commits these rows", "err", err)
		}
		cancel()
	}

	rep = p.report()
	if cause := context.Cause(stop); cause != nil && !errors.Is(cause, context.Canceled) {
		return rep, cause
	}
	if srcErr != nil && !errors.Is(srcErr, context.Canceled) && !errors.Is(srcErr, errIdle) &&
		!errors.Is(context.Cause(srcCtx), errIdle) && ctx.Err() == nil {
		return rep, fmt.Errorf("source: %w", srcErr)
	}
	return rep, nil
}

// setupRotation prepares the exporter, checks the partition keys, and
// queues sealed files left by an earlier run.
func (p *Pipeline) setupRotation(ctx context.Context) error {
	if p.cfg.Lake != nil && p.cfg.DB != nil {
		return p.setupServedLake(ctx)
	}
	if p.cfg.Lake != nil {
		return p.setupLake(ctx)
	}
	var ex *segment.Exporter
	if p.cfg.ExportDir != "" {
		tables := []segment.Table{{Name: p.cfg.Table, Partition: p.cfg.PartitionBy}}
		if p.cfg.NormTable != "" {
			tables = append(tables, segment.Table{Name: p.cfg.NormTable, Partition: p.cfg.NormPartitionBy})
		}
		tables = append(tables, segment.Table{Name: p.cfg.DeadLetterTable, Partition: mustPartition(deadLetterPartition)})
		var err error
		ex, err = segment.NewExporter(segment.ExportConfig{
			Dir: p.cfg.ExportDir, Tables: tables, RowGroupSize: p.cfg.RowGroupSize, ParquetVersion: p.cfg.ParquetVersion,
			Logger: p.cfg.Logger.With("component", "lake.exporter"),
		})
		if err != nil {
			return err
		}
		conn, err := p.store.conn(ctx)
		if err != nil {
			return err
		}
		err = ex.Validate(ctx, conn)
		conn.Release()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	p.rotator = newRotator(p.store, ex, p.cfg.Rotate, p.cfg.Logger)
	sealed, err := segment.Sealed(p.cfg.DBPath)
	if err != nil {
		return err
	}
	if ex == nil {
		if len(sealed) > 0 {
			p.log.Warn("sealed database files wait for export, but no export directory is set", "count", len(sealed))
		}
		return nil
	}
	if err := ex.Recover(sealed); err != nil {
		return err
	}
	if len(sealed) > 0 {
		p.log.Info("exporting sealed files left by an earlier run", "count", len(sealed))
	}
	p.rotator.enqueue(sealed...)
	return nil
}

// setupLake opens the Iceberg tables and queues the sealed files left by
// an earlier run. They wait for the first assignment: only then does the
// process know which partitions it may commit.
func (p *Pipeline) setupLake(ctx context.Context) error {
	sink, err := newIcebergSink(ctx, &p.cfg, p.store)
	if err != nil {
		return err
	}
	p.sink = sink
	p.rotator = newRotator(p.store, sink, p.cfg.Rotate, p.cfg.Logger)
	p.rotator.hold = true
	// Exports read sealed files through a database of their own, so the
	// live file rotates on while one uploads: with the live database's
	// connection, rotation waited for each export, and on two cores the
	// lake's commits all landed after ingest instead of beside it.
	// The main table's stream runs there too, and closes its row groups at
	// a size in bytes, which DuckDB does only without insertion order.
	if p.rotator.exportDB, err = engine.Open(ctx, engine.Options{
		Path: ":memory:", Threads: p.cfg.Threads, MemoryLimit: p.cfg.MemoryLimit,
		AllowedDirs: []string{segment.SealedDir(p.cfg.DBPath)}, MaxIdle: 2, Logger: p.cfg.Logger,
		Settings: []string{"preserve_insertion_order = false"},
	}); err != nil {
		return fmt.Errorf("open the export database: %w", err)
	}
	if err := p.setupStream(ctx); err != nil {
		return err
	}
	sealed, err := segment.Sealed(p.cfg.DBPath)
	if err != nil {
		return err
	}
	if len(sealed) > 0 {
		p.log.Info("sealed files left by an earlier run wait for the partition assignment", "count", len(sealed))
	}
	p.rotator.enqueue(sealed...)
	return nil
}

// setupStream streams the main table's rows into the lake's Parquet files
// instead of the live file, when DuckDB can write them as the lake's table
// takes them (see lakestream.go).
func (p *Pipeline) setupStream(ctx context.Context) error {
	conn, err := p.store.conn(ctx)
	if err != nil {
		return err
	}
	query, ok, err := p.sink.streamQuery(ctx, conn, p.schemas.main)
	conn.Release()
	if err != nil {
		return err
	}
	if !ok {
		p.log.Info("the main table's rows go through the live file: DuckDB cannot write a column or the codec as the lake's table takes it")
		return nil
	}
	p.store.stream = &mainStreamer{db: p.rotator.exportDB, dir: segment.SealedDir(p.cfg.DBPath), schema: p.schemas.main, query: query}
	if err := p.store.openStream(ctx); err != nil {
		p.store.stream = nil
		return err
	}
	p.log.Info("the main table's rows stream straight into the lake's Parquet files; the live file keeps the offsets, dead letters and normalized rows")
	return nil
}

// deadLetterPartition lays dead letters out by the day of their Kafka
// timestamp, like the default for the other tables.
const deadLetterPartition = `dt=strftime("timestamp", '%Y-%m-%d')`

func mustPartition(spec string) []segment.PartitionKey {
	k, err := segment.ParsePartitionSpec(spec)
	if err != nil {
		panic(err)
	}
	return k
}

// decodeLoop decodes batches until jobs closes.
func (p *Pipeline) decodeLoop(ctx context.Context, jobs <-chan *batchJob, out chan<- *decoded) error {
	bd, err := newBatchDecoder(p.cfg.Message, p.cfg.Normalize, p.cfg.Allocator)
	if err != nil {
		return err
	}
	defer bd.release()
	for job := range jobs {
		t := time.Now()
		d := bd.decode(job)
		decodeSeconds.Observe(time.Since(t).Seconds())
		p.budget.release(int64(job.msgs))
		p.byteBudget.release(job.bytes)
		select {
		case out <- d:
		case <-ctx.Done():
			d.release()
			return context.Cause(ctx)
		}
	}
	return nil
}

// feedLoop hands decoded batches to the inserters in batch order, and
// rotates the live file between batches when it is due.
func (p *Pipeline) feedLoop(ctx context.Context, in <-chan *decoded, out chan<- *decoded) error {
	defer close(out)
	next := uint64(1)
	pending := map[uint64]*decoded{}
	defer func() {
		for _, d := range pending {
			d.release()
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case d, ok := <-in:
			if !ok {
				return nil
			}
			pending[d.seq] = d
			for {
				d, ok := pending[next]
				if !ok {
					break
				}
				if err := p.maybeRotate(ctx, next-1); err != nil {
					return err
				}
				delete(pending, next)
				select {
				case out <- d:
				case <-ctx.Done():
					d.release()
					return context.Cause(ctx)
				}
				next++
			}
		case <-tick.C:
			if err := p.maybeRotate(ctx, next-1); err != nil {
				return err
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// maybeRotate rotates the live file when due, once every batch up to
// emitted has committed, so no inserter holds a connection.
func (p *Pipeline) maybeRotate(ctx context.Context, emitted uint64) error {
	if !p.rotator.due() {
		return nil
	}
	if err := p.seq.wait(ctx, emitted); err != nil {
		return err
	}
	return p.rotator.rotate(ctx)
}

// insertLoop commits batches until work closes.
func (p *Pipeline) insertLoop(ctx context.Context, work <-chan *decoded) error {
	for d := range work {
		t := time.Now()
		err := p.store.commit(ctx, d, func(ctx context.Context) error { return p.seq.wait(ctx, d.seq-1) })
		if err != nil {
			d.release()
			return err
		}
		commitSeconds.Observe(time.Since(t).Seconds())
		main, norm, dead := d.rows(d.main), d.rows(d.norm), d.rows(d.dead)
		d.release()
		p.records.Add(main)
		p.norm.Add(norm)
		p.dead.Add(dead)
		p.bytes.Add(d.bytes)
		recordsTotal.Add(float64(main))
		normRecordsTotal.Add(float64(norm))
		deadLettersTotal.Add(float64(dead))
		bytesTotal.Add(float64(d.bytes))
		batchesTotal.Inc()
		p.noteCommitted(d.offsets)
		p.lastCommit.Store(time.Now().UnixNano())
		p.seq.finish(d.seq)
	}
	return nil
}

// discard releases whatever a failed run left in the queues.
func (p *Pipeline) discard(jobs chan *batchJob, recs, work chan *decoded) {
	for range jobs {
	}
	for d := range recs {
		d.release()
	}
	for d := range work {
		d.release()
	}
}
