package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/google/uuid"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/internal/durable"
	"github.com/quiverdata/quiver/lake"
)

// In lake mode the main table's rows do not go into the live DuckDB
// file: each committed batch is handed, in batch order, to one COPY per
// segment that writes them straight into a Parquet file in the lake's
// format (the main table's columns as the lake names them, Iceberg field
// ids, the table's codec). When the segment rotates, the COPY finishes
// and its file is placed beside the sealed DuckDB file, which keeps the
// offsets log, the dead letters and the normalized rows; the commit then
// uploads the file as it is. Storing the rows in DuckDB first cost about
// twice the CPU of writing the Parquet file from the decoded batches
// (bench kafka's insert and parquet stages), and then the file still had
// to be written.
//
// The live file is then only durable in part: a crash loses the stream's
// rows while the offsets log says they were stored. So in lake mode the
// live file never outlives the process (removeLiveForLake): a restart
// begins from a fresh one, and every partition resumes from the lake's
// offsets when it is assigned, re-reading from Kafka what the lost
// segment held. Sealed segments are complete and are committed as before.

// sidecarSuffix ends the names of a sealed segment's main-table Parquet
// files: <segment id>.main.<n>.parquet. A segment has several when a
// rotation was skipped after its stream had finished.
const sidecarSuffix = ".parquet"

// sidecarName is the name of part n of segment id's main-table rows.
func sidecarName(id string, n int) string { return fmt.Sprintf("%s.main.%d%s", id, n, sidecarSuffix) }

// sidecars lists the main-table Parquet files of segment seg, sorted.
func sidecars(seg segment.Segment) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(filepath.Dir(seg.Path), seg.ID+".main.*"+sidecarSuffix))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}

// removeSidecars deletes the main-table Parquet files of segment seg.
func removeSidecars(seg segment.Segment) error {
	paths, err := sidecars(seg)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	return nil
}

// removeLiveForLake deletes, before the store opens in lake mode, the live
// file of an earlier run with its write-ahead log, streams it left
// unfinished, and Parquet files of segments that were never sealed. See
// above: what they held is read again from Kafka.
func removeLiveForLake(dbPath string) (removed []string, err error) {
	for _, p := range []string{dbPath, dbPath + ".wal"} {
		if err := os.Remove(p); err == nil {
			removed = append(removed, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("remove the live file of an earlier run: %w", err)
		}
	}
	dir := segment.SealedDir(dbPath)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return removed, nil
	}
	if err != nil {
		return removed, err
	}
	sealed := map[string]bool{}
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".duckdb"); ok {
			sealed[id] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		id, _, isSidecar := strings.Cut(name, ".main.")
		if !(strings.HasSuffix(name, ".stream") || (isSidecar && strings.HasSuffix(name, sidecarSuffix) && !sealed[id])) {
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("remove a stream of an earlier run: %w", err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// mainStream is one running COPY of pushed batches into a Parquet file.
type mainStream struct {
	path   string // being written; renamed when finished
	schema *arrow.Schema
	ch     chan arrow.RecordBatch
	done   chan struct{}
	rows   int64 // COPY's row count, once done
	err    error // COPY's error, once done

	closeOnce sync.Once
}

// streamReader is the array.RecordReader DuckDB's Arrow scan pulls the
// pushed batches from; it ends when the channel closes. DuckDB forms the
// row groups itself: the COPY does not preserve order, so each of its
// threads gathers rows up to the row group size before it writes one.
type streamReader struct {
	schema *arrow.Schema
	ch     <-chan arrow.RecordBatch
	cur    arrow.RecordBatch
	refs   atomic.Int64
}

func (r *streamReader) Retain()                        { r.refs.Add(1) }
func (r *streamReader) Schema() *arrow.Schema          { return r.schema }
func (r *streamReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *streamReader) Record() arrow.RecordBatch      { return r.cur }
func (r *streamReader) Err() error                     { return nil }

func (r *streamReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *streamReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	rec, ok := <-r.ch
	if !ok {
		return false
	}
	r.cur = rec
	return true
}

// startStream starts a COPY on conn (which it releases when the COPY
// ends) of the batches pushed to the returned stream, as selected by
// query(view), into path.
func startStream(conn *engine.Conn, path string, schema *arrow.Schema, query func(view, path string) string) *mainStream {
	s := &mainStream{path: path, schema: schema, ch: make(chan arrow.RecordBatch), done: make(chan struct{})}
	rdr := &streamReader{schema: schema, ch: s.ch}
	rdr.refs.Store(1)
	go func() {
		defer close(s.done)
		defer conn.Release()
		defer rdr.Release()
		s.rows, s.err = conn.ExecArrow(context.Background(), rdr, func(view string) string { return query(view, path) })
		if s.err != nil {
			// DuckDB stopped pulling: drain, so no pusher waits forever.
			for rec := range s.ch {
				rec.Release()
			}
		}
	}()
	return s
}

// push hands rec to the COPY; it returns once DuckDB has taken it.
func (s *mainStream) push(ctx context.Context, rec arrow.RecordBatch) error {
	rec.Retain()
	select {
	case s.ch <- rec:
		return nil
	case <-s.done:
		rec.Release()
		return fmt.Errorf("the segment's Parquet stream ended: %w", s.err)
	case <-ctx.Done():
		rec.Release()
		return context.Cause(ctx)
	}
}

// finish ends the stream, waits for the COPY, and makes the file durable.
// It fails when the COPY failed; the caller checks its rows.
func (s *mainStream) finish() error {
	s.closeOnce.Do(func() { close(s.ch) })
	<-s.done
	if s.err != nil {
		return fmt.Errorf("write the segment's Parquet stream: %w", s.err)
	}
	return durable.SyncFile(s.path)
}

// abort ends the stream and removes its file.
func (s *mainStream) abort() {
	s.closeOnce.Do(func() { close(s.ch) })
	<-s.done
	_ = os.Remove(s.path)
}

// size is the bytes the stream has written so far.
func (s *mainStream) size() int64 {
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// mainStreamer keeps one stream per live segment (see above).
type mainStreamer struct {
	db     *engine.DB // where the COPY runs: the export database
	dir    string     // the sealed directory, where streams and sidecars live
	schema *arrow.Schema
	query  func(view, path string) string

	mu        sync.Mutex
	cur       *mainStream
	segID     string
	part      int
	committed int64 // rows of cur whose batches committed
}

// open starts the stream of live segment id.
func (m *mainStreamer) open(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur != nil {
		return errors.New("a Parquet stream is already open")
	}
	if id != m.segID {
		m.segID, m.part = id, 0
	}
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open the segment's Parquet stream: %w", err)
	}
	path := filepath.Join(m.dir, sidecarName(id, m.part)+".stream")
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		conn.Release()
		return err
	}
	m.cur, m.committed = startStream(conn, path, m.schema, m.query), 0
	return nil
}

// push hands a batch's main rows to the stream; committed records that
// its transaction committed.
func (m *mainStreamer) push(ctx context.Context, rec arrow.RecordBatch) error {
	m.mu.Lock()
	cur := m.cur
	m.mu.Unlock()
	if cur == nil {
		return errors.New("no Parquet stream is open")
	}
	return cur.push(ctx, rec)
}

// committed counts rows pushed whose batch then committed.
func (m *mainStreamer) commit(n int64) {
	m.mu.Lock()
	m.committed += n
	m.mu.Unlock()
}

// seal finishes the stream and gives its file the sidecar name of the
// live segment, durably, and returns its part number and rows. It fails
// when the stream holds rows of a batch that did not commit: those must
// not reach the lake.
func (m *mainStreamer) seal() (part int, rows int64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.cur
	if cur == nil {
		return 0, 0, errors.New("no Parquet stream is open")
	}
	m.cur = nil
	if err := cur.finish(); err != nil {
		_ = os.Remove(cur.path)
		return 0, 0, err
	}
	if cur.rows != m.committed {
		_ = os.Remove(cur.path)
		return 0, 0, fmt.Errorf("the segment's Parquet stream holds %d rows, but only %d were committed", cur.rows, m.committed)
	}
	final := filepath.Join(m.dir, sidecarName(m.segID, m.part))
	if err := os.Rename(cur.path, final); err != nil {
		return 0, 0, fmt.Errorf("seal the segment's Parquet stream: %w", err)
	}
	if err := durable.SyncDir(m.dir); err != nil {
		return 0, 0, fmt.Errorf("seal the segment's Parquet stream: %w", err)
	}
	part = m.part
	m.part++
	lakeStreamedRows.Add(float64(cur.rows))
	return part, cur.rows, nil
}

// abort drops the open stream, if any.
func (m *mainStreamer) abort() {
	m.mu.Lock()
	cur := m.cur
	m.cur = nil
	m.mu.Unlock()
	if cur != nil {
		cur.abort()
	}
}

// size is what the open stream has written.
func (m *mainStreamer) size() int64 {
	m.mu.Lock()
	cur := m.cur
	m.mu.Unlock()
	if cur == nil {
		return 0
	}
	return cur.size()
}

// segmentSource is where an attached segment's rows are read from.
type segmentSource struct {
	alias    string   // the attached DuckDB file
	sidecars []string // the main table's Parquet files; nil: in the DuckDB file
	// bounds, when set, keeps the rows of each partition within its
	// range: the served database holds every row, not one segment's.
	bounds map[int32]partRange
}

// relation is SQL for the rows of t in the segment, with t's own column
// names.
func (src segmentSource) relation(t sinkTable) string {
	if t.isMain && len(src.sidecars) > 0 {
		return "(SELECT * RENAME (" + engine.QuoteIdent(LakeColPartition) + " AS " + engine.QuoteIdent(ColPartition) +
			") FROM read_parquet(" + quoteList(src.sidecars) + "))"
	}
	rel := engine.QuoteIdent(src.alias) + ".main." + engine.QuoteIdent(t.local)
	if src.bounds == nil {
		return rel
	}
	ps := make([]int32, 0, len(src.bounds))
	for q := range src.bounds {
		ps = append(ps, q)
	}
	slices.Sort(ps)
	var in []string
	for _, q := range ps {
		r := src.bounds[q]
		in = append(in, fmt.Sprintf("(%s = %d AND %s >= %d AND %s < %d)", engine.QuoteIdent(t.partCol), q,
			engine.QuoteIdent(t.offCol), r.start, engine.QuoteIdent(t.offCol), r.end))
	}
	if len(in) == 0 {
		in = []string{"false"}
	}
	return "(SELECT * FROM " + rel + " WHERE " + strings.Join(in, " OR ") + ")"
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = engine.QuoteString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// segmentSource finds the Parquet files of an attached segment's main
// rows, and checks that every part its stream table lists is there with
// the rows it lists. A segment without the table keeps its main rows in
// the DuckDB file.
func readSegmentSource(ctx context.Context, conn *engine.Conn, seg segment.Segment, alias string) (segmentSource, error) {
	src := segmentSource{alias: alias}
	n, err := conn.QueryInt64(ctx, "SELECT count(*) FROM duckdb_tables() WHERE database_name = "+engine.QuoteString(alias)+
		" AND table_name = "+engine.QuoteString(StreamTable))
	if err != nil || n == 0 {
		return src, err
	}
	rows, err := conn.Query(ctx, "SELECT part, rows FROM "+engine.QuoteIdent(alias)+".main."+StreamTable+" ORDER BY part")
	if err != nil {
		return src, fmt.Errorf("read the segment's stream table: %w", err)
	}
	want := map[string]int64{}
	for rows.Next() {
		rec := rows.RecordBatch()
		parts, counts := rec.Column(0).(*array.Int32), rec.Column(1).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			want[filepath.Join(filepath.Dir(seg.Path), sidecarName(seg.ID, int(parts.Value(i))))] = counts.Value(i)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return src, err
	}
	paths, err := sidecars(seg)
	if err != nil {
		return src, err
	}
	for _, p := range paths {
		if _, ok := want[p]; !ok {
			return src, fmt.Errorf("Parquet file %s is not in the segment's stream table", filepath.Base(p))
		}
	}
	for p, rows := range want {
		got, err := conn.QueryInt64(ctx, "SELECT count(*) FROM read_parquet("+engine.QuoteString(p)+")")
		if err != nil {
			return src, fmt.Errorf("the segment's main rows are missing or unreadable (%s): %w", filepath.Base(p), err)
		}
		if got != rows {
			return src, fmt.Errorf("%s holds %d rows, the segment's stream table says %d", filepath.Base(p), got, rows)
		}
	}
	src.sidecars = paths
	return src, nil
}

// uploadSidecars uploads the segment's main-table Parquet files as they
// are when the commit takes all their rows and they fall in one partition
// of the table, which is the usual case. Otherwise it returns nil files
// and no error, and the rows are written again through a COPY.
func (s *icebergSink) uploadSidecars(ctx context.Context, conn *engine.Conn, seg segmentSource, t sinkTable, where string, id uuid.UUID) (*lake.Files, error) {
	rel := seg.relation(t)
	keys := make([]string, 0, len(t.partition))
	for _, pf := range t.partition {
		expr, ok := lake.DuckDBPartitionKey(pf, engine.QuoteIdent(pf.Column))
		if !ok {
			return nil, nil
		}
		keys = append(keys, expr)
	}
	distinct := "1::BIGINT"
	if len(keys) > 0 {
		distinct = "count(DISTINCT (" + strings.Join(keys, ", ") + "))"
	}
	// The partition keys name the table's columns as the lake does; the
	// filter names them as the segment does.
	rows, err := conn.Query(ctx, "SELECT count(*), count(*) FILTER (WHERE __quiver_take), "+distinct+
		" FROM (SELECT "+t.columns+", ("+where+") AS __quiver_take FROM "+rel+")")
	if err != nil {
		return nil, fmt.Errorf("read the segment's Parquet files: %w", err)
	}
	var total, taken, parts int64
	if rows.Next() {
		rec := rows.RecordBatch()
		total = rec.Column(0).(*array.Int64).Value(0)
		taken = rec.Column(1).(*array.Int64).Value(0)
		parts = rec.Column(2).(*array.Int64).Value(0)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if total == 0 || taken != total || parts > 1 {
		return nil, nil
	}
	files, err := t.ice.UploadParquet(ctx, id, seg.sidecars)
	if err != nil {
		return nil, err
	}
	if files.Rows() != total {
		_ = files.Discard(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("the uploaded files hold %d rows of %d", files.Rows(), total)
	}
	lakeUploadedAsIs.Add(float64(len(seg.sidecars)))
	return files, nil
}

// streamQuery returns the COPY that streams the main table's batches into
// a Parquet file the lake's table takes as it is, or ok false when a
// column type or the table's codec keeps the rows on the DuckDB path.
func (s *icebergSink) streamQuery(ctx context.Context, conn *engine.Conn, record *arrow.Schema) (query func(view, path string) string, ok bool, err error) {
	t := s.tables[len(s.tables)-1]
	rows, err := conn.Query(ctx, "SELECT "+t.columns+" FROM "+engine.QuoteIdent(t.local)+" LIMIT 0")
	if err != nil {
		return nil, false, fmt.Errorf("read the schema of %s: %w", t.local, err)
	}
	schema := rows.Schema()
	rows.Close()
	if _, ok := parquetColumns(schema); !ok {
		return nil, false, nil
	}
	opts, ok, err := s.parquetOptions(ctx, t, schema)
	if err != nil || !ok {
		return nil, false, err
	}
	// The batches' columns, named and typed as the table's.
	fields := make([]arrow.Field, record.NumFields())
	for i, f := range record.Fields() {
		if f.Name == ColPartition {
			f.Name = LakeColPartition
		}
		fields[i] = f
	}
	cols, ok := parquetColumns(arrow.NewSchema(fields, nil))
	if !ok {
		return nil, false, nil
	}
	sel := "SELECT " + strings.Join(cols, ", ") + " FROM (SELECT " + t.columns + " FROM "
	// Without order, each DuckDB thread gathers its own row groups: batches
	// cut small by the flush interval still make full row groups, and the
	// rows reach the file as they come instead of waiting for their turn.
	// A row group also closes at 16 MiB: what DuckDB holds back from the
	// file stays small, so the segment's size on disk, which rotation
	// reads, lags little behind its rows (at DuckDB's default, 120 MiB per
	// thread of 1 KB rows made a segment due at 128 MiB 305 MiB).
	with := " (" + strings.Join(append(opts, "PRESERVE_ORDER false", "ROW_GROUP_SIZE_BYTES '16MiB'"), ", ") + ")"
	return func(view, path string) string {
		return "COPY (" + sel + view + ")) TO " + engine.QuoteString(path) + with
	}, true, nil
}
