package stages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/ingest/segment"
)

// produce writes the messages to the benchmark topic.
func (e *Bench) produce(ctx context.Context) error {
	if len(e.cfg.Brokers) > 0 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...))
		if err != nil {
			return err
		}
		_, err = kadm.NewClient(cl).CreateTopic(ctx, e.cfg.Partitions, -1, nil, e.topic)
		cl.Close()
		if err != nil {
			return fmt.Errorf("create topic %s: %w", e.topic, err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.DefaultProduceTopic(e.topic),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	defer cl.Close()
	var perr atomic.Pointer[error]
	t := time.Now()
	for _, v := range e.values {
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	if p := perr.Load(); p != nil {
		return fmt.Errorf("produce: %w", *p)
	}
	e.log.Info("bench topic filled", "topic", e.topic, "messages", len(e.values), "MB", e.bytes>>20, "took", time.Since(t).Round(time.Millisecond))
	return nil
}

// consume reads the whole topic with a plain consumer.
func (e *Bench) consume(ctx context.Context) (Result, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.ConsumeTopics(e.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	t := time.Now()
	st := Result{Name: Consume, start: t}
	for st.Rows < int64(len(e.values)) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return st, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			st.Rows++
			st.Bytes += int64(len(r.Value))
		})
	}
	st.Duration = time.Since(t)
	return st, nil
}

// decode turns the messages into Arrow batches with Decoders goroutines,
// each with its own ingest.Decoder, keeping the main records for the
// insert stage.
func (e *Bench) decode() (Result, error) {
	for _, r := range e.records {
		r.Release()
	}
	e.records = nil
	jobs := make(chan []ingest.Chunk)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	normalize := ""
	if e.cfg.Normalize {
		normalize = NormalizeSpec
	}
	t := time.Now()
	for range e.cfg.Decoders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec, err := ingest.NewDecoder(e.md, normalize, memory.NewGoAllocator())
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				for range jobs {
				}
				return
			}
			defer dec.Release()
			for chunks := range jobs {
				main, norm, dead := dec.Decode(chunks)
				if main != nil {
					mu.Lock()
					e.records = append(e.records, main)
					mu.Unlock()
				}
				for _, r := range []arrow.RecordBatch{norm, dead} {
					if r != nil {
						r.Release()
					}
				}
			}
		}()
	}
	for i := 0; i < len(e.values); i += e.cfg.BatchRows {
		end := min(i+e.cfg.BatchRows, len(e.values))
		msgs := make([]ingest.Message, end-i)
		for k := range msgs {
			msgs[k] = ingest.Message{Offset: int64(i + k), Timestamp: t, Value: e.values[i+k]}
		}
		jobs <- []ingest.Chunk{{Topic: e.topic, Messages: msgs}}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return Result{}, firstErr
	}
	return Result{Name: Decode, Rows: int64(len(e.values)), Bytes: e.bytes, Duration: time.Since(t), start: t}, nil
}

// openBenchDB opens a fresh database file in the bench directory.
func (e *Bench) openBenchDB(ctx context.Context, name string) (*engine.DB, error) {
	path := filepath.Join(e.dir, name)
	for _, p := range []string{path, path + ".wal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return engine.Open(ctx, engine.Options{Path: path, AllowedDirs: []string{e.dir}})
}

// insert inserts the decoded batches into a fresh table t with Inserters
// connections, one InsertArrow per batch, as the pipeline commits them.
// The database stays for native.
func (e *Bench) insert(ctx context.Context) (Result, error) {
	if len(e.records) == 0 {
		if _, err := e.decode(); err != nil {
			return Result{}, err
		}
	}
	db, err := e.openBenchDB(ctx, "insert.duckdb")
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return Result{}, err
	}
	ddl, err := ingest.CreateTableSQL("t", e.records[0].Schema())
	if err == nil {
		_, err = conn.Exec(ctx, ddl)
	}
	conn.Release()
	if err != nil {
		return Result{}, err
	}
	work := make(chan arrow.RecordBatch)
	errs := make(chan error, e.cfg.Inserters)
	var wg sync.WaitGroup
	t := time.Now()
	for range e.cfg.Inserters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			if err != nil {
				errs <- err
				for range work {
				}
				return
			}
			defer conn.Release()
			for rec := range work {
				if err := ingest.InsertRecord(ctx, conn, "t", rec); err != nil {
					errs <- err
					for range work {
					}
					return
				}
			}
		}()
	}
	for _, r := range e.records {
		work <- r
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return Result{}, err
	}
	return Result{Name: Insert, Rows: int64(len(e.values)), Bytes: e.bytes, Duration: time.Since(t), start: t}, nil
}

// parquet streams the decoded batches into one Parquet file with a single
// COPY over an Arrow scan, as the lake's stream writes them (Parquet V2,
// zstd level 1, no order kept): what writing the lake's files straight
// from the decoded batches costs, against insert, which stores them in
// DuckDB.
func (e *Bench) parquet(ctx context.Context) (Result, error) {
	if len(e.records) == 0 {
		if _, err := e.decode(); err != nil {
			return Result{}, err
		}
	}
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", AllowedDirs: []string{e.dir}})
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return Result{}, err
	}
	defer conn.Release()
	rdr, err := array.NewRecordReader(e.records[0].Schema(), e.records)
	if err != nil {
		return Result{}, err
	}
	defer rdr.Release()
	path := filepath.Join(e.dir, "bench.parquet")
	defer os.Remove(path)
	t := time.Now()
	n, err := conn.ExecArrow(ctx, rdr, func(view string) string {
		return "COPY (SELECT * FROM " + view + ") TO " + engine.QuoteString(path) +
			" (FORMAT parquet, PARQUET_VERSION " + segment.DefaultParquetVersion + ", COMPRESSION zstd, COMPRESSION_LEVEL 1, PRESERVE_ORDER false)"
	})
	if err != nil {
		return Result{}, err
	}
	if n != int64(len(e.values)) {
		return Result{}, fmt.Errorf("the Parquet file holds %d rows of %d", n, len(e.values))
	}
	return Result{Name: Parquet, Rows: n, Bytes: e.bytes, Duration: time.Since(t), start: t}, nil
}

// native times DuckDB copying the inserted table into another one.
func (e *Bench) native(ctx context.Context) (Result, error) {
	db, err := engine.Open(ctx, engine.Options{Path: filepath.Join(e.dir, "insert.duckdb"), AllowedDirs: []string{e.dir}})
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return Result{}, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS t2; CREATE TABLE t2 AS SELECT * FROM t LIMIT 0"); err != nil {
		return Result{}, err
	}
	t := time.Now()
	n, err := conn.Exec(ctx, "INSERT INTO t2 SELECT * FROM t")
	if err != nil {
		return Result{}, err
	}
	return Result{Name: Native, Rows: n, Bytes: e.bytes, Duration: time.Since(t), start: t}, nil
}

// pipeline runs the whole pipeline on the topic with a fresh group and
// times it from the first delivered message to the last commit.
func (e *Bench) pipeline(ctx context.Context) (Result, ingest.Report, error) {
	path := filepath.Join(e.dir, "pipeline.duckdb")
	for _, p := range []string{path, path + ".wal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return Result{}, ingest.Report{}, err
		}
	}
	cfg := ingest.Config{
		DBPath: path, Table: "bench", Message: e.md,
		BatchRows: e.cfg.BatchRows, Decoders: e.cfg.Decoders, Inserters: e.cfg.Inserters,
		// The default flush interval, so batches fill to row groups as
		// in production; flushAtEnd cuts the last partial batch.
		IdleExit: time.Second, ReportInterval: -1, Logger: e.log,
	}
	if e.cfg.Normalize {
		cfg.Normalize = NormalizeSpec
	}
	p, err := ingest.New(cfg)
	if err != nil {
		return Result{}, ingest.Report{}, err
	}
	src, err := e.cfg.NewSource(e.brokers, e.topic, fmt.Sprintf("%s-%d", e.topic, time.Now().UnixNano()))
	if err != nil {
		return Result{}, ingest.Report{}, err
	}
	rep, err := p.Run(ctx, flushAtEnd{Source: src, total: int64(len(e.values))})
	if err != nil {
		return Result{}, rep, err
	}
	if rep.Records != int64(len(e.values)) {
		return Result{}, rep, fmt.Errorf("pipeline committed %d of %d messages", rep.Records, len(e.values))
	}
	d := rep.LastCommit.Sub(rep.FirstDelivery)
	// Rates over the busy time, not the group join and idle exit.
	rep.Duration = d
	rep.RecordsPerSecond = float64(rep.Records) / d.Seconds()
	rep.TotalRowsPerSecond = float64(rep.Records+rep.NormRecords) / d.Seconds()
	rep.TransferRate = float64(rep.Bytes) / d.Seconds()
	return Result{Name: Pipeline, Rows: rep.Records, Bytes: rep.Bytes, Duration: d, start: rep.FirstDelivery}, rep, nil
}

// flushAtEnd asks for a flush once the whole topic is delivered, so the
// last partial batch is committed at once instead of after the flush
// interval, which would count as busy time. A short flush interval would
// cut every batch short of a row group instead, and DuckDB logs such
// batches to its write-ahead log and compresses them only at the
// checkpoint, outside the measured time.
type flushAtEnd struct {
	ingest.Source
	total int64
}

// Clients passes on the source's client count for the report.
func (f flushAtEnd) Clients() int {
	if cc, ok := f.Source.(ingest.ClientCounter); ok {
		return cc.Clients()
	}
	return 1
}

func (f flushAtEnd) Run(ctx context.Context, h ingest.Handler) error {
	return f.Source.Run(ctx, &countingHandler{Handler: h, total: f.total})
}

type countingHandler struct {
	ingest.Handler
	total   int64
	n       atomic.Int64
	flushed sync.Once
}

func (c *countingHandler) Deliver(ctx context.Context, chunks []ingest.Chunk) error {
	var n int64
	for _, ch := range chunks {
		n += int64(len(ch.Messages))
	}
	if err := c.Handler.Deliver(ctx, chunks); err != nil {
		return err
	}
	if c.n.Add(n) >= c.total {
		// A failed flush needs no handling here: the pipeline's Run
		// returns the error that failed it.
		c.flushed.Do(func() { go c.Handler.Flush(ctx) })
	}
	return nil
}
