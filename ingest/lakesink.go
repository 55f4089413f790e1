package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/google/uuid"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/ingest/segment"
	"github.com/quiverdata/quiver/lake"
)

// LakeConfig sends rotated segments to Apache Iceberg tables instead of
// local Parquet files (see the package documentation, "The lake").
type LakeConfig struct {
	// Lake is the open catalog and warehouse. Required.
	Lake *lake.Lake
	// Namespace holds the tables (<Namespace>.<Config.Table>, and the
	// normalized and dead-letter tables beside it). Required.
	Namespace string
	// Group and Topic name the Kafka offsets each commit records. Required.
	Group, Topic string
	// PartitionBy is the main table's Iceberg partitioning; nil means
	// day(_timestamp). The normalized table gets the same when it has the
	// columns, and dead letters are partitioned by day(timestamp).
	PartitionBy []lake.PartitionField
	// Maintain runs a compactor over the tables beside the commits.
	Maintain Maintenance
}

// LakeColPartition is the Kafka partition column's name in the lake's
// main and normalized tables. Iceberg reserves _partition for a metadata
// column, and Spark refuses to read a table that has a column of that name.
const LakeColPartition = "_kafka_partition"

// errZombie fails a pipeline that found a partition it owns already
// committed past its own rows by another writer: the group gave the
// partition away without this process noticing (a missed session, a
// paused process). A restart resumes it from the lake.
var errZombie = errors.New("another writer committed a partition this process holds")

// lakeCommitAttempts bounds how often one segment's commit to one table is
// recomputed after the lake's offsets moved under it.
const lakeCommitAttempts = 5

// icebergSink commits sealed segments to Iceberg. Only partitions the
// process owns are committed; the rows of the others are dropped, because
// their owner consumes them again from the lake's offsets.
type icebergSink struct {
	cfg            LakeConfig
	parquetVersion string // V1 or V2, for DuckDB's PARQUET_VERSION
	rowGroupSize   int    // rows per row group; 0 keeps DuckDB's
	// noCopy sends every row through iceberg-go's writer: the served
	// database may not write files (see servedlake.go).
	noCopy bool
	tables []sinkTable
	log    *slog.Logger

	mu    sync.Mutex
	owned map[int32]bool
	ended map[int32]int64 // the main table's end offsets, as last seen

	commits atomic.Int64 // segments committed, for Live
}

// sinkTable is one local table and the Iceberg table it goes to.
type sinkTable struct {
	local     string // table in the segment file
	partCol   string // its Kafka partition column
	offCol    string // and offset column
	columns   string // the select list that reads it for the lake
	ice       *lake.Table
	isMain    bool
	partition []lake.PartitionField
}

// newIcebergSink loads or creates the Iceberg tables for the pipeline's
// local tables, evolving them to the schemas DuckDB gives their rows (in
// which every column may be null).
func newIcebergSink(ctx context.Context, cfg *Config, st *store) (*icebergSink, error) {
	lc := *cfg.Lake
	if lc.PartitionBy == nil {
		lc.PartitionBy = []lake.PartitionField{{Column: ColTimestamp, Transform: lake.Day}}
	}
	s := &icebergSink{cfg: lc, parquetVersion: cfg.ParquetVersion, rowGroupSize: cfg.RowGroupSize, log: cfg.Logger.With("component", "ingest.lake"), owned: map[int32]bool{}, ended: map[int32]int64{}}
	renamed := "* RENAME (" + engine.QuoteIdent(ColPartition) + " AS " + engine.QuoteIdent(LakeColPartition) + ")"
	// The main table goes last: its end offsets are where a partition
	// resumes, so every other table is at or past them even after a crash
	// between two tables' commits.
	tables := []sinkTable{{local: cfg.DeadLetterTable, partCol: "partition", offCol: "offset", columns: "*",
		partition: []lake.PartitionField{{Column: "timestamp", Transform: lake.Day}}}}
	if cfg.NormTable != "" {
		tables = append(tables, sinkTable{local: cfg.NormTable, partCol: ColPartition, offCol: ColOffset, columns: renamed,
			partition: []lake.PartitionField{{Column: ColTimestamp, Transform: lake.Day}}})
	}
	tables = append(tables, sinkTable{local: cfg.Table, partCol: ColPartition, offCol: ColOffset, columns: renamed, isMain: true, partition: lc.PartitionBy})
	conn, err := st.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	for i := range tables {
		t := &tables[i]
		rows, err := conn.Query(ctx, "SELECT "+t.columns+" FROM "+engine.QuoteIdent(t.local)+" LIMIT 0")
		if err != nil {
			return nil, fmt.Errorf("read the schema of %s: %w", t.local, err)
		}
		schema := rows.Schema()
		rows.Close()
		ice, err := lc.Lake.Table(ctx, lc.Namespace, t.local, schema, t.partition)
		if err != nil {
			return nil, fmt.Errorf("%w: lake table %s.%s: %w", ErrConfig, lc.Namespace, t.local, err)
		}
		t.ice = ice
	}
	s.tables = tables
	return s, nil
}

// ends returns the end offsets the main table has committed.
func (s *icebergSink) ends(ctx context.Context) (map[int32]int64, error) {
	ends, err := s.tables[len(s.tables)-1].ice.CommittedOffsets(ctx, s.cfg.Group, s.cfg.Topic)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	for p, n := range ends {
		s.ended[p] = n
	}
	s.mu.Unlock()
	return ends, nil
}

// committed returns the main table's end offsets as last seen, without
// asking the catalog.
func (s *icebergSink) committed() Offsets {
	out := Offsets{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, n := range s.ended {
		out.Set(s.cfg.Topic, p, n)
	}
	return out
}

// setOwned replaces the owned partition set.
func (s *icebergSink) setOwned(parts map[int32]bool) {
	s.mu.Lock()
	s.owned = parts
	s.mu.Unlock()
}

// ownedSet returns a copy of the owned partition set.
func (s *icebergSink) ownedSet() map[int32]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int32]bool, len(s.owned))
	for p := range s.owned {
		out[p] = true
	}
	return out
}

// partRange is the offsets a segment holds of one partition: [start, end).
type partRange struct{ start, end int64 }

// Export commits seg's rows of the owned partitions to the lake and
// deletes seg; the background exporter calls it.
func (s *icebergSink) Export(ctx context.Context, conn *engine.Conn, seg segment.Segment) (segment.ExportStats, error) {
	return s.export(ctx, conn, seg, s.ownedSet(), nil)
}

// exportFor returns an export of the partitions in owned. A partition in
// tolerant whose start the lake has already passed (another owner
// committed past it) is dropped; any other such partition fails the
// export with errZombie.
func (s *icebergSink) exportFor(owned, tolerant map[int32]bool) exportFunc {
	return func(ctx context.Context, conn *engine.Conn, seg segment.Segment) (segment.ExportStats, error) {
		return s.export(ctx, conn, seg, owned, tolerant)
	}
}

func (s *icebergSink) export(ctx context.Context, conn *engine.Conn, seg segment.Segment, owned, tolerant map[int32]bool) (segment.ExportStats, error) {
	start := time.Now()
	st := segment.ExportStats{Rows: map[string]int64{}}
	if _, err := os.Stat(seg.Path); errors.Is(err, fs.ErrNotExist) {
		return st, nil // committed and removed by an earlier call
	}
	alias := "quiver_lake_" + strings.ReplaceAll(seg.ID, "-", "_")
	if _, err := conn.Exec(ctx, "ATTACH "+engine.QuoteString(seg.Path)+" AS "+engine.QuoteIdent(alias)+" (READ_ONLY)"); err != nil {
		return st, fmt.Errorf("commit segment %s: attach: %w", seg.ID, err)
	}
	uploads := seg.Path + ".uploads"
	src, err := readSegmentSource(ctx, conn, seg, alias)
	if err == nil {
		err = s.removeUncommitted(ctx, uploads)
	}
	if err == nil {
		err = s.commitSegment(ctx, conn, src, uploads, owned, tolerant, &st)
	}
	if _, derr := conn.Exec(context.WithoutCancel(ctx), "DETACH "+engine.QuoteIdent(alias)); derr != nil && err == nil {
		err = fmt.Errorf("detach: %w", derr)
	}
	if err != nil {
		return st, fmt.Errorf("commit segment %s: %w", seg.ID, err)
	}
	st.Bytes = seg.Size()
	crashPoint("lake-before-delete")
	if err := seg.Remove(); err != nil {
		return st, fmt.Errorf("commit segment %s: remove: %w", seg.ID, err)
	}
	if err := removeSidecars(seg); err != nil {
		s.log.Warn("remove the Parquet files of a committed segment", "segment", seg.ID, "err", err)
	}
	if err := os.Remove(uploads); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("remove the uploads list of a committed segment", "path", uploads, "err", err)
	}
	if err := os.RemoveAll(uploads + ".tmp"); err != nil {
		s.log.Warn("remove the Parquet files of a committed segment", "path", uploads+".tmp", "err", err)
	}
	st.Duration = time.Since(start)
	lakeCommits.Inc()
	s.commits.Add(1)
	lakeCommitSeconds.Observe(st.Duration.Seconds())
	return st, nil
}

// commitSegment commits each table of the attached segment.
func (s *icebergSink) commitSegment(ctx context.Context, conn *engine.Conn, src segmentSource, uploads string, owned, tolerant map[int32]bool, st *segment.ExportStats) error {
	ranges, err := s.segmentRanges(ctx, conn, src)
	if err != nil {
		return err
	}
	for i, t := range s.tables {
		n, files, err := s.commitTable(ctx, conn, src, uploads, t, ranges, owned, tolerant)
		if err != nil {
			return fmt.Errorf("to %s: %w", strings.Join(t.ice.Identifier(), "."), err)
		}
		st.Rows[t.local] = n
		st.Files += files
		if i == 0 {
			crashPoint("lake-after-commit")
		}
	}
	return nil
}

// segmentRanges reads the offsets range of every partition of the topic
// in the segment: from the position it started at to the one it reached.
// The start is the smallest next_offset of the offsets log, which holds
// the position the file started from (carried from the file before it, or
// the lake's when the partition was assigned); for a partition the lake
// has never seen there is no such row, and the start is its first row's
// offset.
func (s *icebergSink) segmentRanges(ctx context.Context, conn *engine.Conn, src segmentSource) (map[int32]partRange, error) {
	db := engine.QuoteIdent(src.alias) + ".main."
	firsts := make([]string, 0, len(s.tables))
	for _, t := range s.tables {
		firsts = append(firsts, fmt.Sprintf("SELECT %s AS p, min(%s) AS lo, NULL::BIGINT AS hi FROM %s GROUP BY 1",
			engine.QuoteIdent(t.partCol), engine.QuoteIdent(t.offCol), src.relation(t)))
	}
	sql := `SELECT p, min(lo), max(hi) FROM (SELECT "partition" AS p, min(next_offset) AS lo, max(next_offset) AS hi FROM ` +
		db + OffsetsTable + " WHERE topic = " + engine.QuoteString(s.cfg.Topic) + " GROUP BY 1 UNION ALL " +
		strings.Join(firsts, " UNION ALL ") + ") GROUP BY p HAVING max(hi) IS NOT NULL"
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("read offsets: %w", err)
	}
	defer rows.Close()
	out := map[int32]partRange{}
	for rows.Next() {
		rec := rows.RecordBatch()
		parts, lo, hi := rec.Column(0).(*array.Int32), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			out[parts.Value(i)] = partRange{lo.Value(i), hi.Value(i)}
		}
	}
	return out, rows.Err()
}

// commitTable commits one table's rows of the owned partitions, fenced on
// the table's own offsets, and returns the rows and files committed.
func (s *icebergSink) commitTable(ctx context.Context, conn *engine.Conn, src segmentSource, uploads string, t sinkTable, ranges map[int32]partRange, owned, tolerant map[int32]bool) (int64, int, error) {
	for attempt := 1; ; attempt++ {
		ends, err := t.ice.CommittedOffsets(ctx, s.cfg.Group, s.cfg.Topic)
		if err != nil {
			return 0, 0, err
		}
		off := lake.Offsets{Group: s.cfg.Group, Topic: s.cfg.Topic, Ranges: map[int32]lake.Range{}}
		var where []string
		for p, r := range ranges {
			if !owned[p] || r.end <= r.start {
				continue
			}
			end, ok := ends[p]
			switch {
			case !ok:
				off.Ranges[p] = lake.Range{Start: r.start, End: r.end, First: true}
				where = append(where, fmt.Sprintf("%s = %d", engine.QuoteIdent(t.partCol), p))
			case end >= r.end:
				// The table has these rows already: committed before a crash
				// that kept the file, or, for a table committed before the
				// main one, before a crash between the two.
				if end > r.end && !tolerant[p] {
					s.log.Warn("the lake is ahead of this process's rows of a partition it owns",
						"table", t.local, "partition", p, "rows_to", r.end, "lake_end", end)
				}
			case end >= r.start:
				// The rows from end on are new to the table.
				off.Ranges[p] = lake.Range{Start: end, End: r.end}
				where = append(where, fmt.Sprintf("(%s = %d AND %s >= %d)", engine.QuoteIdent(t.partCol), p, engine.QuoteIdent(t.offCol), end))
			case tolerant[p]:
				s.log.Warn("dropping rows of an earlier ownership that the lake has moved past",
					"table", t.local, "partition", p, "from", r.start, "to", r.end, "lake_end", end)
				lakeDroppedRanges.Inc()
			default:
				return 0, 0, fmt.Errorf("%w: partition %d is at offset %d in %s, but these rows start at %d",
					errZombie, p, end, t.local, r.start)
			}
		}
		if len(off.Ranges) == 0 {
			return 0, 0, nil
		}
		sort.Strings(where)
		id := uuid.New()
		if err := noteUploads(uploads, t.local, id); err != nil {
			return 0, 0, err
		}
		files, err := s.writeFiles(ctx, conn, src, uploads+".tmp", t, strings.Join(where, " OR "), id)
		if err != nil {
			return 0, 0, err
		}
		crashPoint("lake-after-upload")
		res, err := t.ice.CommitFiles(ctx, files, off)
		if errors.Is(err, lake.ErrFenced) && attempt < lakeCommitAttempts {
			continue // the lake moved: decide again on fresh offsets
		}
		if err != nil {
			return 0, 0, err
		}
		if t.isMain {
			s.mu.Lock()
			for p, r := range off.Ranges {
				s.ended[p] = r.End
			}
			s.mu.Unlock()
		}
		return res.Rows, res.Files, nil
	}
}

// upload is a line of a segment's uploads list: the table and the id of
// a write, which every data file it uploads carries in its name. The list
// lets the redo of a segment after a crash delete the files of a commit
// that never landed, even of a write the crash cut short. (Lists written
// before also hold the offsets the commit was to record; they are not
// needed.)
type upload struct {
	Table string    `json:"table"`
	Write uuid.UUID `json:"write"`
}

// noteUploads appends a write to the uploads list, durably, before it
// uploads anything.
func noteUploads(path, table string, id uuid.UUID) error {
	line, err := json.Marshal(upload{Table: table, Write: id})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("note uploads: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("note uploads: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("note uploads: %w", err)
	}
	return f.Close()
}

// removeUncommitted reads a segment's uploads list, left by an export
// that crashed or failed, and deletes the files of each write in it that
// no snapshot of its table references (Table.RemoveWrites): a write whose
// commit never landed. The files of one that landed are the table's and
// stay. The table's offsets cannot tell the two apart once the lake has
// moved: after a crash another process may take the partitions over and
// commit past the write's ranges with files of its own, which left the
// crashed write's files behind as orphans. Only this process could commit
// the write, and it is redoing the segment, so nothing can still land it.
func (s *icebergSink) removeUncommitted(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read uploads list: %w", err)
	}
	writes := map[string][]uuid.UUID{} // by local table
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var u upload
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			continue // a line torn by the crash: noted before any upload, so none of its files exist
		}
		writes[u.Table] = append(writes[u.Table], u.Write)
	}
	for _, t := range s.tables {
		ids := writes[t.local]
		if len(ids) == 0 {
			continue
		}
		n, err := t.ice.RemoveWrites(ctx, ids...)
		if err != nil {
			return fmt.Errorf("delete files of a commit that did not land: %w", err)
		}
		lakeRemovedUploads.Add(float64(n))
		if n > 0 {
			s.log.Info("deleted the files of commits that did not land", "table", t.local, "writes", len(ids), "files", n)
		}
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove uploads list: %w", err)
	}
	return nil
}

// writeFiles writes the rows of the attached segment's table t that match
// where as data files of t's Iceberg table, uncommitted. DuckDB writes
// them as Parquet (see copyParquet) when it can write every column type
// of the table as Iceberg reads it; otherwise, or when that fails, the
// rows are read out of DuckDB and iceberg-go writes them.
func (s *icebergSink) writeFiles(ctx context.Context, conn *engine.Conn, seg segmentSource, tmp string, t sinkTable, where string, id uuid.UUID) (*lake.Files, error) {
	if t.isMain && len(seg.sidecars) > 0 {
		files, err := s.uploadSidecars(ctx, conn, seg, t, where, id)
		if files != nil || err != nil {
			return files, err
		}
	}
	src := "SELECT " + t.columns + " FROM " + seg.relation(t)
	var files *lake.Files
	var err error
	if !s.noCopy {
		files, err = s.copyParquet(ctx, conn, tmp, t, src, where, id)
	}
	switch {
	case files != nil:
		return files, nil
	case err != nil:
		// Only a file DuckDB could not write, or wrote in a way the table
		// cannot take, sends the rows the other way; a failure to reach
		// the lake fails the export, which is retried.
		if ctx.Err() != nil || !(errors.Is(err, errCopyParquet) || errors.Is(err, lake.ErrUnfitParquet)) {
			return nil, err
		}
		s.log.Warn("DuckDB's Parquet files could not go to the lake; writing the rows through iceberg-go",
			"table", t.local, "error", err)
	}
	n, err := conn.QueryInt64(ctx, "SELECT count(*) FROM ("+src+" WHERE "+where+")")
	if err != nil {
		return nil, fmt.Errorf("count rows: %w", err)
	}
	rows, err := conn.Query(ctx, src+" WHERE "+where)
	if err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	defer rows.Close()
	files, err = t.ice.WriteAs(ctx, id, rows)
	if err != nil {
		return nil, err
	}
	// A long-test run once committed offsets for all of a segment's rows
	// with files holding only the first third of them, without an error
	// from the reader or the writer. Never commit what is not all there.
	if files.Rows() != n {
		_ = files.Discard(ctx)
		return nil, fmt.Errorf("the files written hold %d rows of %d: not committing them", files.Rows(), n)
	}
	return files, nil
}

// errCopyParquet wraps the errors of DuckDB's side of copyParquet.
var errCopyParquet = errors.New("DuckDB's COPY to Parquet")

// copyParquet has DuckDB write the rows of src matching where as Parquet
// files compressed with the table's codec under tmp, one per partition of the table's spec (or one
// for an unpartitioned table), every column labelled with its Iceberg
// field id, and uploads them to the table. It returns nil files and no
// error when the table has a column type this path does not handle.
//
// DuckDB's Parquet writer encodes straight from its own storage: on the
// ingest benchmark's rows it took about 0.4 CPU-s per million rows, where
// reading them out as Arrow (0.1) and encoding them with iceberg-go (about
// 1) took 1.0 to 1.3. iceberg-go then checks each
// file against the table's schema, reads its statistics from the footer
// and infers its partition from its bounds (a file spanning partitions is
// refused), exactly as its own add-files does.
func (s *icebergSink) copyParquet(ctx context.Context, conn *engine.Conn, tmp string, t sinkTable, src, where string, id uuid.UUID) (*lake.Files, error) {
	rows, err := conn.Query(ctx, src+" LIMIT 0")
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	schema := rows.Schema()
	rows.Close()
	cols, ok := parquetColumns(schema)
	if !ok {
		return nil, nil
	}
	opts, ok, err := s.parquetOptions(ctx, t, schema)
	if err != nil || !ok {
		return nil, err
	}
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	rowsSQL := "(" + src + " WHERE " + where + ")"
	target := filepath.Join(tmp, "data.parquet")
	if len(t.partition) > 0 {
		var keys []string
		for _, pf := range t.partition {
			expr, ok := lake.DuckDBPartitionKey(pf, engine.QuoteIdent(pf.Column))
			if !ok {
				return nil, nil
			}
			keys = append(keys, expr)
		}
		// A segment's rows are mostly of one partition (a day, or an
		// hour): then one COPY without PARTITION_BY writes the file, which
		// is cheaper than DuckDB's partitioned write.
		parts, err := conn.QueryInt64(ctx, "SELECT count(*) FROM (SELECT DISTINCT "+strings.Join(keys, ", ")+" FROM "+rowsSQL+")")
		if err != nil {
			return nil, fmt.Errorf("%w: count partitions: %w", errCopyParquet, err)
		}
		if parts == 0 {
			return t.ice.UploadParquet(ctx, id, nil)
		}
		if parts > 1 {
			var names []string
			for i, k := range keys {
				name := engine.QuoteIdent(fmt.Sprintf("__quiver_lake_part_%d", i))
				cols = append(cols, k+" AS "+name)
				names = append(names, name)
			}
			opts = append(opts, "PARTITION_BY ("+strings.Join(names, ", ")+")", "OVERWRITE_OR_IGNORE")
			target = tmp
		}
	}
	sel := "SELECT " + strings.Join(cols, ", ") + " FROM " + rowsSQL
	n, err := conn.Exec(ctx, "COPY ("+sel+") TO "+engine.QuoteString(target)+" ("+strings.Join(opts, ", ")+")")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCopyParquet, err)
	}
	if n == 0 {
		return t.ice.UploadParquet(ctx, id, nil)
	}
	var paths []string
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	files, err := t.ice.UploadParquet(ctx, id, paths)
	if err != nil {
		return nil, err
	}
	if files.Rows() != n {
		_ = files.Discard(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%w: it wrote %d rows but its files hold %d", errCopyParquet, n, files.Rows())
	}
	return files, nil
}

// parquetColumns is the select list that gives DuckDB's Parquet writer
// the columns of schema as the lake's table has them: unsigned columns are
// cast to the signed type iceberg-go gives them in the table (int for
// uint8 to uint32, long for uint64; a value that does not fit fails the
// COPY). ok is false when a column has a type this path does not handle.
func parquetColumns(schema *arrow.Schema) (cols []string, ok bool) {
	cols = make([]string, 0, schema.NumFields())
	for _, f := range schema.Fields() {
		col := engine.QuoteIdent(f.Name)
		switch f.Type.ID() {
		case arrow.UINT8, arrow.UINT16, arrow.UINT32:
			col = "CAST(" + col + " AS INTEGER) AS " + col
		case arrow.UINT64:
			col = "CAST(" + col + " AS BIGINT) AS " + col
		default:
			if !parquetCopyable(f.Type) {
				return nil, false
			}
		}
		cols = append(cols, col)
	}
	return cols, true
}

// parquetOptions are the COPY options that write rows of schema (as the
// lake names the columns) as data files of t: every column labelled with
// its Iceberg field id, in the table's codec (write.parquet.compression-codec,
// zstd when unset). ok is false for a codec DuckDB does not write; the rows
// then go through iceberg-go. zstd runs at level 1 unless the table sets
// another: in DuckDB it took 10 to 35% less CPU than its default level 3,
// for files no larger on the ingest benchmark's rows.
func (s *icebergSink) parquetOptions(ctx context.Context, t sinkTable, schema *arrow.Schema) (opts []string, ok bool, err error) {
	ids, err := t.ice.PrepareParquet(ctx, schema)
	if err != nil {
		return nil, false, err
	}
	codec, ok := t.ice.CompressionCodec()
	if !ok {
		return nil, false, nil
	}
	opts = []string{"FORMAT parquet", "PARQUET_VERSION " + s.parquetVersion, "COMPRESSION " + codec, "FIELD_IDS " + lake.DuckDBFieldIDs(ids)}
	if codec == "zstd" {
		level, ok := t.ice.CompressionLevel()
		if !ok {
			level = 1
		}
		opts = append(opts, fmt.Sprintf("COMPRESSION_LEVEL %d", level))
	}
	if s.rowGroupSize > 0 {
		opts = append(opts, fmt.Sprintf("ROW_GROUP_SIZE %d", s.rowGroupSize))
	}
	return opts, true, nil
}

// parquetCopyable reports whether DuckDB writes a column of type dt to
// Parquet as iceberg-go reads the table's column: the types the lake
// tests check, and structs, lists and maps of them.
func parquetCopyable(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.BooleanType, *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Float32Type, *arrow.Float64Type, *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType,
		*arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.Date32Type:
		return true
	case *arrow.TimestampType:
		return t.Unit == arrow.Microsecond && (t.TimeZone == "" || t.TimeZone == "UTC")
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !parquetCopyable(f.Type) {
				return false
			}
		}
		return true
	case *arrow.ListType:
		return parquetCopyable(t.Elem())
	case *arrow.LargeListType:
		return parquetCopyable(t.Elem())
	case *arrow.MapType:
		return parquetCopyable(t.KeyType()) && parquetCopyable(t.ItemType())
	}
	return false
}
