package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
)

// errRotationSkipped wraps a rotation that failed but left the live file
// open and in use: ingest goes on and rotation is tried again later.
var errRotationSkipped = errors.New("rotation skipped")

// compactEvery is how many batches pass between compactions of the
// offsets log.
const compactEvery = 512

// servedInit is held while a pipeline prepares a served database.
var servedInit sync.Mutex

// store owns the live DuckDB database: its tables, the per-batch
// transaction, and rotation. The database changes only during rotate,
// which runs while no inserter or exporter holds a connection.
type store struct {
	cfg     *Config
	log     *slog.Logger
	schemas schemas

	mu     sync.Mutex
	db     *engine.DB
	segID  string
	opened time.Time
	rows   atomic.Int64 // rows in the live file's tables, as far as known
	// stream, in lake mode, takes the main table's rows instead of the
	// live file (see lakestream.go); nil otherwise.
	stream *mainStreamer

	offMu     sync.Mutex
	committed Offsets
}

// openStore opens the live database and prepares it (see init).
func openStore(ctx context.Context, cfg *Config, sc schemas) (*store, error) {
	s := &store{cfg: cfg, log: cfg.Logger.With("component", "ingest.store"), schemas: sc}
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// served reports whether the pipeline writes into a database it was
// given (Config.DB) rather than one it owns.
func (s *store) served() bool { return s.cfg.DB != nil }

// open opens the database file, or takes the served one, and runs init.
func (s *store) open(ctx context.Context) error {
	if s.served() {
		s.mu.Lock()
		s.db = s.cfg.DB
		s.mu.Unlock()
		// Pipelines of one served database share its offsets table:
		// two creating it at once would conflict in DuckDB's catalog.
		servedInit.Lock()
		defer servedInit.Unlock()
		return s.init(ctx)
	}
	allowed := []string{filepath.Dir(s.cfg.DBPath), segment.SealedDir(s.cfg.DBPath)}
	if s.cfg.ExportDir != "" {
		allowed = append(allowed, s.cfg.ExportDir)
	}
	db, err := engine.Open(ctx, engine.Options{
		Path:        s.cfg.DBPath,
		Threads:     s.cfg.Threads,
		MemoryLimit: s.cfg.MemoryLimit,
		AllowedDirs: allowed,
		MaxIdle:     s.cfg.Inserters + 2,
		Logger:      s.cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	s.mu.Lock()
	s.db = db
	s.mu.Unlock()
	if err := s.init(ctx); err != nil {
		db.Close()
		return err
	}
	return nil
}

// conn takes a connection to the live database.
func (s *store) conn(ctx context.Context) (*engine.Conn, error) {
	s.mu.Lock()
	db := s.db
	s.mu.Unlock()
	return db.Conn(ctx)
}

// init creates what is missing in one transaction: the tables, the segment
// row, and the offsets carried forward from sealed files. Carrying forward
// makes the live file the single truth even when it was just created after
// a rotation or a crash.
func (s *store) init(ctx context.Context) error {
	conn, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("init database: %w", err)
	}
	defer conn.Release()

	carried, err := s.sealedOffsets(ctx, conn)
	if err != nil {
		return err
	}
	stmts := []string{"BEGIN TRANSACTION"}
	for _, t := range []struct {
		name string
		sc   *arrow.Schema
	}{{s.cfg.Table, s.schemas.main}, {s.cfg.NormTable, s.schemas.norm}, {s.cfg.DeadLetterTable, s.schemas.dead}} {
		if t.sc == nil {
			continue
		}
		ddl, err := CreateTableSQL(t.name, t.sc)
		if err != nil {
			return fmt.Errorf("init table %s: %w", t.name, err)
		}
		stmts = append(stmts, ddl)
	}
	stmts = append(stmts,
		"CREATE TABLE IF NOT EXISTS "+OffsetsTable+` (topic VARCHAR NOT NULL, "partition" INTEGER NOT NULL, next_offset BIGINT NOT NULL, committed_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
		"CREATE TABLE IF NOT EXISTS "+SegmentTable+" (segment_id VARCHAR NOT NULL, opened_at TIMESTAMPTZ NOT NULL)",
	)
	if _, err := conn.Exec(ctx, strings.Join(stmts, ";\n")); err != nil {
		return fmt.Errorf("init database: %w", err)
	}
	if err := s.addMissingColumns(ctx, conn); err != nil {
		return err
	}
	id := segment.NewSegmentID(time.Now())
	if _, err := conn.Exec(ctx, "INSERT INTO "+SegmentTable+" SELECT ?, now() WHERE NOT EXISTS (SELECT 1 FROM "+SegmentTable+")", id); err != nil {
		return fmt.Errorf("init segment: %w", err)
	}
	live, err := readOffsets(ctx, conn, "")
	if err != nil {
		return fmt.Errorf("init offsets: %w", err)
	}
	var raise Offsets = Offsets{}
	for t, ps := range carried {
		for p, n := range ps {
			if cur, ok := live.Get(t, p); !ok || n > cur {
				raise.Set(t, p, n)
			}
		}
	}
	if sql := offsetsInsertSQL(raise); sql != "" {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("carry offsets forward: %w", err)
		}
	}
	if _, err := conn.Exec(ctx, compactSQL); err != nil {
		return fmt.Errorf("compact offsets: %w", err)
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("init database: %w", err)
	}
	live.Merge(raise)
	s.offMu.Lock()
	if s.committed == nil {
		s.committed = Offsets{}
	}
	s.committed.Merge(live)
	s.offMu.Unlock()

	if err := s.loadSegment(ctx, conn); err != nil {
		return err
	}
	n, err := s.countRows(ctx, conn)
	if err != nil {
		return err
	}
	s.rows.Store(n)
	s.log.Info("database ready", "path", s.cfg.DBPath, "segment", s.segID, "rows", n,
		"partitions", countPartitions(live), "carried_from_sealed", countPartitions(raise))
	return nil
}

// sealedOffsets reads the largest offsets recorded in every sealed file.
// The served database never rotates, so it has none.
func (s *store) sealedOffsets(ctx context.Context, conn *engine.Conn) (Offsets, error) {
	if s.served() {
		return Offsets{}, nil
	}
	segs, err := segment.Sealed(s.cfg.DBPath)
	if err != nil {
		return nil, err
	}
	all := Offsets{}
	for _, seg := range segs {
		alias := "quiver_carry_" + strings.ReplaceAll(seg.ID, "-", "_")
		if _, err := conn.Exec(ctx, "ATTACH "+engine.QuoteString(seg.Path)+" AS "+engine.QuoteIdent(alias)+" (READ_ONLY)"); err != nil {
			return nil, fmt.Errorf("read offsets of sealed segment %s: %w", seg.ID, err)
		}
		o, err := readOffsets(ctx, conn, alias)
		if _, derr := conn.Exec(ctx, "DETACH "+engine.QuoteIdent(alias)); derr != nil && err == nil {
			err = derr
		}
		if err != nil {
			return nil, fmt.Errorf("read offsets of sealed segment %s: %w", seg.ID, err)
		}
		all.Merge(o)
	}
	return all, nil
}

// addMissingColumns adds columns the message gained since the tables were
// created, so a newer .proto keeps ingesting into the same tables.
func (s *store) addMissingColumns(ctx context.Context, conn *engine.Conn) error {
	for _, t := range []struct {
		name string
		sc   *arrow.Schema
	}{{s.cfg.Table, s.schemas.main}, {s.cfg.NormTable, s.schemas.norm}} {
		if t.sc == nil {
			continue
		}
		have, err := queryStrings(ctx, conn, "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = "+engine.QuoteString(t.name))
		if err != nil {
			return fmt.Errorf("read columns of %s: %w", t.name, err)
		}
		set := map[string]bool{}
		for _, c := range have {
			set[c] = true
		}
		for _, f := range t.sc.Fields() {
			if set[f.Name] {
				continue
			}
			typ, err := sqlType(f.Type)
			if err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, "ALTER TABLE "+engine.QuoteIdent(t.name)+" ADD COLUMN "+engine.QuoteIdent(f.Name)+" "+typ); err != nil {
				return fmt.Errorf("add column %s to %s: %w", f.Name, t.name, err)
			}
			s.log.Info("added column for a new message field", "table", t.name, "column", f.Name, "type", typ)
		}
	}
	return nil
}

// loadSegment reads the live file's segment id and opening time.
func (s *store) loadSegment(ctx context.Context, conn *engine.Conn) error {
	rows, err := conn.Query(ctx, "SELECT segment_id, epoch_ms(opened_at) FROM "+SegmentTable+" LIMIT 1")
	if err != nil {
		return fmt.Errorf("read segment: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return fmt.Errorf("read segment: no row: %v", rows.Err())
	}
	rec := rows.RecordBatch()
	id := strings.Clone(rec.Column(0).(*array.String).Value(0))
	ms := rec.Column(1).(*array.Int64).Value(0)
	if !segment.ValidSegmentID(id) {
		return fmt.Errorf("read segment: bad id %q in %s", id, SegmentTable)
	}
	s.segID, s.opened = id, time.UnixMilli(ms)
	return nil
}

// countRows counts the rows of the live file's data tables.
func (s *store) countRows(ctx context.Context, conn *engine.Conn) (int64, error) {
	var total int64
	for _, t := range []string{s.cfg.Table, s.cfg.NormTable, s.cfg.DeadLetterTable} {
		if t == "" {
			continue
		}
		n, err := conn.QueryInt64(ctx, "SELECT count(*) FROM "+engine.QuoteIdent(t))
		if err != nil {
			return 0, fmt.Errorf("count rows of %s: %w", t, err)
		}
		total += n
	}
	return total, nil
}

// commit writes one batch in one transaction: its rows, its dead letters
// and its offsets. turn blocks until the previous batch has committed.
func (s *store) commit(ctx context.Context, d *decoded, turn func(context.Context) error) error {
	conn, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("commit batch %d: %w", d.seq, err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("commit batch %d: %w", d.seq, err)
	}
	streamed := s.stream != nil && d.main != nil
	for _, t := range []struct {
		name string
		rec  arrow.RecordBatch
	}{{s.cfg.Table, d.main}, {s.cfg.NormTable, d.norm}, {s.cfg.DeadLetterTable, d.dead}} {
		if t.rec == nil || (streamed && t.name == s.cfg.Table) {
			continue
		}
		if err := InsertRecord(ctx, conn, t.name, t.rec); err != nil {
			return fmt.Errorf("commit batch %d: insert into %s: %w", d.seq, t.name, err)
		}
	}
	if sql := offsetsInsertSQL(d.offsets); sql != "" {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("commit batch %d: record offsets: %w", d.seq, err)
		}
	}
	if err := turn(ctx); err != nil {
		return err
	}
	if streamed {
		// In batch order, after the batches before it committed. The
		// stream counts these rows only once the transaction commits.
		if err := s.stream.push(ctx, d.main); err != nil {
			return fmt.Errorf("commit batch %d: %w", d.seq, err)
		}
	}
	if d.seq%compactEvery == 0 {
		// Only this transaction deletes, and it deletes rows no open
		// transaction touches, so it cannot conflict.
		if _, err := conn.Exec(ctx, compactSQL); err != nil {
			return fmt.Errorf("commit batch %d: compact offsets: %w", d.seq, err)
		}
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit batch %d: %w", d.seq, err)
	}
	if streamed {
		s.stream.commit(d.main.NumRows())
	}
	s.rows.Add(d.rows(d.main) + d.rows(d.norm) + d.rows(d.dead))
	s.offMu.Lock()
	s.committed.Merge(d.offsets)
	s.offMu.Unlock()
	return nil
}

// InsertRecord inserts rec into table by column name, through DuckDB's Arrow
// scan, as the pipeline inserts a batch. The caller keeps rec.
func InsertRecord(ctx context.Context, conn *engine.Conn, table string, rec arrow.RecordBatch) error {
	sc := rec.Schema()
	cols := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		cols[i] = f.Name
	}
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		return err
	}
	defer rdr.Release()
	_, err = conn.InsertArrow(ctx, engine.QuoteIdent(table), cols, rdr)
	return err
}

// stored returns the committed next offset of a partition.
func (s *store) stored(topic string, partition int32) (int64, bool) {
	s.offMu.Lock()
	defer s.offMu.Unlock()
	return s.committed.Get(topic, partition)
}

// committedOffsets returns a copy of the committed offsets.
func (s *store) committedOffsets() Offsets {
	s.offMu.Lock()
	defer s.offMu.Unlock()
	return s.committed.Clone()
}

// size is the live file's size with its write-ahead log, and what the
// main table's stream has written.
func (s *store) size() int64 {
	n := segment.FileSize(s.cfg.DBPath)
	if s.stream != nil {
		n += s.stream.size()
	}
	return n
}

// sealStream finishes the main table's stream and records its file in
// the live file's stream table, so the sealed segment lists it.
func (s *store) sealStream(ctx context.Context) error {
	part, rows, err := s.stream.seal()
	if err != nil {
		return err
	}
	conn, err := s.conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+StreamTable+" (part INTEGER NOT NULL, rows BIGINT NOT NULL); "+
		fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", StreamTable, part, rows)); err != nil {
		return fmt.Errorf("record the segment's Parquet stream: %w", err)
	}
	return nil
}

// openStream starts the main table's stream for the live segment.
func (s *store) openStream(ctx context.Context) error {
	s.mu.Lock()
	id := s.segID
	s.mu.Unlock()
	return s.stream.open(ctx, id)
}

// age is how long ago the live file was opened.
func (s *store) age() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.opened)
}

// rotate checkpoints and closes the live file, seals it, and opens a new
// live file that carries the offsets forward. The caller guarantees that
// no connection is in use. It returns the sealed segment and how long the
// file was live.
func (s *store) rotate(ctx context.Context) (segment.Segment, time.Duration, error) {
	conn, err := s.conn(ctx)
	if err != nil {
		return segment.Segment{}, 0, fmt.Errorf("rotate: %w", err)
	}
	_, err = conn.Exec(ctx, "FORCE CHECKPOINT")
	conn.Release()
	if err != nil {
		return segment.Segment{}, 0, fmt.Errorf("rotate: checkpoint: %w", err)
	}
	s.mu.Lock()
	db, id, lived := s.db, s.segID, time.Since(s.opened)
	s.mu.Unlock()
	if err := db.Close(); err != nil {
		return segment.Segment{}, 0, fmt.Errorf("rotate: close: %w", err)
	}
	seg, sealErr := segment.Seal(s.cfg.DBPath, id)
	if err := s.open(ctx); err != nil {
		return segment.Segment{}, 0, fmt.Errorf("rotate: %w", err)
	}
	if sealErr != nil && seg.Path == "" {
		return segment.Segment{}, 0, fmt.Errorf("%w: %w", errRotationSkipped, sealErr)
	}
	if sealErr != nil {
		s.log.Warn("sealed file may not be durable yet", "segment", seg.ID, "err", sealErr)
	}
	return seg, lived, nil
}

// close closes the live database; the served one stays open for its
// owner.
func (s *store) close() error {
	s.mu.Lock()
	db := s.db
	s.mu.Unlock()
	if db == nil || s.served() {
		return nil
	}
	return db.Close()
}

// compactSQL deletes the rows of the offsets log between the smallest and
// the largest next_offset of each partition: the largest is the position,
// and the smallest is where the file's rows of the partition start, which
// a lake commit fences on.
const compactSQL = "DELETE FROM " + OffsetsTable + " o WHERE next_offset < (SELECT max(i.next_offset) FROM " +
	OffsetsTable + ` i WHERE i.topic = o.topic AND i."partition" = o."partition") AND next_offset > (SELECT min(i.next_offset) FROM ` +
	OffsetsTable + ` i WHERE i.topic = o.topic AND i."partition" = o."partition")`

// resetPartitions makes the lake's end offsets the position of parts: the
// offsets log forgets them and starts again at ends (a partition absent
// from ends has no position). The live file must hold no rows of parts.
func (s *store) resetPartitions(ctx context.Context, topic string, parts []int32, ends map[int32]int64) error {
	if len(parts) == 0 {
		return nil
	}
	conn, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("reset offsets: %w", err)
	}
	defer conn.Release()
	list := make([]string, len(parts))
	set := Offsets{}
	for i, p := range parts {
		list[i] = fmt.Sprint(p)
		if n, ok := ends[p]; ok {
			set.Set(topic, p, n)
		}
	}
	stmts := []string{"BEGIN TRANSACTION",
		"DELETE FROM " + OffsetsTable + " WHERE topic = " + engine.QuoteString(topic) + ` AND "partition" IN (` + strings.Join(list, ", ") + ")"}
	if sql := offsetsInsertSQL(set); sql != "" {
		stmts = append(stmts, sql)
	}
	stmts = append(stmts, "COMMIT")
	if _, err := conn.Exec(ctx, strings.Join(stmts, ";\n")); err != nil {
		return fmt.Errorf("reset offsets: %w", err) // Release rolls the transaction back
	}
	s.offMu.Lock()
	for _, p := range parts {
		if n, ok := ends[p]; ok {
			s.committed.Set(topic, p, n)
		} else if ps := s.committed[topic]; ps != nil {
			delete(ps, p)
		}
	}
	s.offMu.Unlock()
	return nil
}

// offsetsInsertSQL appends o to the offsets log, or returns "" when o is
// empty.
func offsetsInsertSQL(o Offsets) string {
	var b strings.Builder
	for t, ps := range o {
		for p, n := range ps {
			if b.Len() == 0 {
				b.WriteString("INSERT INTO " + OffsetsTable + ` (topic, "partition", next_offset) VALUES `)
			} else {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "(%s, %d, %d)", engine.QuoteString(t), p, n)
		}
	}
	return b.String()
}

// readOffsets reads the positions in the offsets log of database db (the
// live one when db is "").
func readOffsets(ctx context.Context, conn *engine.Conn, db string) (Offsets, error) {
	table := OffsetsTable
	if db != "" {
		table = engine.QuoteIdent(db) + ".main." + OffsetsTable
	}
	rows, err := conn.Query(ctx, `SELECT topic, "partition", max(next_offset) FROM `+table+` GROUP BY ALL`)
	if err != nil {
		if engine.KindOf(err) == engine.KindNotFound && db != "" {
			return Offsets{}, nil // a sealed file from before it had the table
		}
		return nil, err
	}
	defer rows.Close()
	o := Offsets{}
	for rows.Next() {
		rec := rows.RecordBatch()
		topics := rec.Column(0).(*array.String)
		parts := rec.Column(1).(*array.Int32)
		nexts := rec.Column(2).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			// Result buffers are recycled once the rows close: copy.
			o.Set(strings.Clone(topics.Value(i)), parts.Value(i), nexts.Value(i))
		}
	}
	return o, rows.Err()
}

// queryStrings runs a query returning one VARCHAR column.
func queryStrings(ctx context.Context, conn *engine.Conn, sql string) ([]string, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		col, ok := rows.RecordBatch().Column(0).(*array.String)
		if !ok {
			return nil, fmt.Errorf("want VARCHAR, got %s", rows.RecordBatch().Column(0).DataType())
		}
		for i := 0; i < col.Len(); i++ {
			out = append(out, strings.Clone(col.Value(i)))
		}
	}
	return out, rows.Err()
}

func countPartitions(o Offsets) int {
	n := 0
	for _, ps := range o {
		n += len(ps)
	}
	return n
}
