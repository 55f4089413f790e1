package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
)

// DefaultCommitInterval is how often a lake pipeline commits what it has
// by default. A commit costs a catalog round trip and a snapshot, and
// leaves one small data file per table and partition for the compactor;
// at 10 s a day makes 8,640 snapshots, which snapshot expiry keeps to the
// retention, and a row reaches the lake's readers within about 10 s plus
// the upload.
const DefaultCommitInterval = 10 * time.Second

// servedLake is a pipeline inside the server that also feeds a lake
// (Config.DB with Config.Lake): every Config.CommitInterval it commits,
// straight from the served tables, the rows past the lake's end offsets,
// and then deletes the local rows the lake holds once they are older than
// Config.Retention. See the package documentation, "Inside the server".
type servedLake struct {
	p       *Pipeline
	sink    *icebergSink
	uploads string // the uploads list of the round under way

	mu       sync.Mutex      // one round at a time
	firsts   map[int32]int64 // first local offset of partitions no lake table has
	retained time.Time       // when the retention last ran

	endMu sync.Mutex
	ends  map[int32]int64 // the lowest end offset of the lake's tables, as last read
}

// lakeEnds reads the lowest end offset of every partition over the
// lake's tables, and keeps it for end. A partition one of the tables does
// not have yet has no end: the tables commit one after another, so a kill
// between two leaves the partition in the first alone, and the lake holds
// none of its rows until every table does.
func (l *servedLake) lakeEnds(ctx context.Context) (map[int32]int64, error) {
	s := l.sink
	lows := map[int32]int64{}
	in := map[int32]int{} // how many tables have the partition
	for _, t := range s.tables {
		ends, err := t.ice.CommittedOffsets(ctx, s.cfg.Group, s.cfg.Topic)
		if err != nil {
			return nil, err
		}
		for q, n := range ends {
			in[q]++
			if cur, ok := lows[q]; !ok || n < cur {
				lows[q] = n
			}
		}
	}
	for q, n := range in {
		if n < len(s.tables) {
			delete(lows, q)
		}
	}
	l.endMu.Lock()
	l.ends = lows
	l.endMu.Unlock()
	return lows, nil
}

// end is partition q's lake end offset as last read.
func (l *servedLake) end(q int32) (int64, bool) {
	l.endMu.Lock()
	defer l.endMu.Unlock()
	n, ok := l.ends[q]
	return n, ok
}

// setupServedLake opens the lake's tables for a pipeline inside the
// server. The rows are written to the lake by iceberg-go: DuckDB's own
// Parquet writer would need the served database to write files, which it
// keeps from its users.
func (p *Pipeline) setupServedLake(ctx context.Context) error {
	sink, err := newIcebergSink(ctx, &p.cfg, p.store)
	if err != nil {
		return err
	}
	sink.noCopy = true
	p.servedLake = &servedLake{p: p, sink: sink, uploads: p.cfg.DBPath + "." + p.cfg.Table + ".lake-uploads", firsts: map[int32]int64{}}
	p.rotator = newRotator(p.store, nil, segment.Policy{}, p.cfg.Logger)
	return nil
}

// run commits every interval until ctx is done. A failed round is logged
// and tried again at the next tick: the rows stay in the served tables,
// and the lake's offsets say where to start.
func (l *servedLake) run(ctx context.Context) {
	t := time.NewTicker(l.p.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := l.round(ctx, l.owned()); err != nil && ctx.Err() == nil {
				lakeCommitErrors.Inc()
				l.p.log.Error("lake commit failed; the rows stay in the served database and go at the next interval", "err", err)
			}
		case <-ctx.Done():
			return
		}
	}
}

// owned is the partitions the process consumes: those assigned, or, for a
// source that does not report assignments, every one it stored.
func (l *servedLake) owned() map[int32]bool {
	topic := l.sink.cfg.Topic
	out := map[int32]bool{}
	ls := &l.p.live
	ls.mu.Lock()
	uses := ls.usesAssign
	for q := range ls.assigned[topic] {
		out[q] = true
	}
	ls.mu.Unlock()
	if !uses {
		for q := range l.p.store.committedOffsets()[topic] {
			out[q] = true
		}
	}
	return out
}

// round commits the committed rows of the owned partitions that the lake
// does not hold yet, table by table (the main table last), each fenced on
// its own offsets, then applies the retention. The rows of a partition
// are [start, position): position is the stored offset, read before the
// rows, so every row below it has committed and none above it is read;
// start is where the lake's tables end (the lowest of them), or the first
// local row for a partition the lake has never seen.
func (l *servedLake) round(ctx context.Context, owned map[int32]bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sink
	if err := s.removeUncommitted(ctx, l.uploads); err != nil {
		return err
	}
	conn, err := l.p.store.conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	pos := l.p.store.committedOffsets()[s.cfg.Topic]
	lows, err := l.lakeEnds(ctx)
	if err != nil {
		return err
	}
	ranges := map[int32]partRange{}
	for q, hi := range pos {
		if !owned[q] {
			continue
		}
		lo, ok := lows[q]
		if !ok {
			if lo, ok = l.firsts[q]; !ok {
				if lo, ok, err = l.firstOffset(ctx, conn, q); err != nil {
					return err
				}
				if !ok {
					continue // no row of the partition: nothing to commit yet
				}
				l.firsts[q] = lo
			}
		}
		if hi > lo {
			ranges[q] = partRange{lo, hi}
		}
		// A lake ahead of the stored position (another writer had the
		// partition) has these rows: nothing to commit.
	}
	if len(ranges) > 0 {
		src := segmentSource{alias: l.p.store.db.DefaultCatalog(), bounds: ranges}
		var st segment.ExportStats
		st.Rows = map[string]int64{}
		start := time.Now()
		for i, t := range s.tables {
			n, _, err := s.commitTable(ctx, conn, src, l.uploads, t, ranges, owned, nil)
			if err != nil {
				return fmt.Errorf("commit to %s: %w", strings.Join(t.ice.Identifier(), "."), err)
			}
			st.Rows[t.local] = n
			if i == 0 {
				crashPoint("lake-after-commit")
			}
		}
		if err := os.Remove(l.uploads); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.p.log.Warn("remove the uploads list of a lake commit", "path", l.uploads, "err", err)
		}
		lakeCommits.Inc()
		s.commits.Add(1)
		lakeCommitSeconds.Observe(time.Since(start).Seconds())
		l.p.log.Debug("committed to the lake", "rows", st.Rows, "partitions", len(ranges), "took", time.Since(start).Round(time.Millisecond))
	}
	return l.retain(ctx, conn)
}

// firstOffset is the smallest offset of partition q in the main and
// dead-letter tables; ok is false when neither holds a row of it.
func (l *servedLake) firstOffset(ctx context.Context, conn *engine.Conn, q int32) (int64, bool, error) {
	var parts []string
	for _, t := range l.sink.tables {
		parts = append(parts, fmt.Sprintf("SELECT min(%s) AS o FROM %s WHERE %s = %d",
			engine.QuoteIdent(t.offCol), engine.QuoteIdent(t.local), engine.QuoteIdent(t.partCol), q))
	}
	rows, err := conn.Query(ctx, "SELECT min(o) FROM ("+strings.Join(parts, " UNION ALL ")+")")
	if err != nil {
		return 0, false, fmt.Errorf("read the first offset of partition %d: %w", q, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, false, rows.Err()
	}
	col := rows.RecordBatch().Column(0).(*array.Int64)
	if col.Len() == 0 || col.IsNull(0) {
		return 0, false, nil
	}
	return col.Value(0), true, nil
}

// retain deletes, from every table, the rows the lake's table holds
// (below its end offset for their partition) that are older than
// Config.Retention by their Kafka timestamp. Rows the lake does not hold
// yet stay, however old.
func (l *servedLake) retain(ctx context.Context, conn *engine.Conn) error {
	keep := l.p.cfg.Retention
	// A delete scans the tables: once a minute is enough for retentions
	// of hours, and a short one is checked as often as it asks.
	if keep <= 0 || time.Since(l.retained) < min(keep, time.Minute) {
		return nil
	}
	l.retained = time.Now()
	s := l.sink
	for _, t := range s.tables {
		ends, err := t.ice.CommittedOffsets(ctx, s.cfg.Group, s.cfg.Topic)
		if err != nil || len(ends) == 0 {
			return err
		}
		var held []string
		for q, end := range ends {
			held = append(held, fmt.Sprintf("(%s = %d AND %s < %d)", engine.QuoteIdent(t.partCol), q, engine.QuoteIdent(t.offCol), end))
		}
		ts := ColTimestamp
		if t.partCol == "partition" {
			ts = "timestamp" // the dead letters' column
		}
		n, err := conn.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s < now() - INTERVAL (%d) MICROSECONDS AND (%s)",
			engine.QuoteIdent(t.local), engine.QuoteIdent(ts), keep.Microseconds(), strings.Join(held, " OR ")))
		if err != nil {
			return fmt.Errorf("retention: delete from %s: %w", t.local, err)
		}
		if n > 0 {
			retainedDeletes.Add(float64(n))
			l.p.log.Debug("retention deleted rows the lake holds", "table", t.local, "rows", n)
		}
	}
	return nil
}
