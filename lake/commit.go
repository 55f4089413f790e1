package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Snapshot summary keys owned by this package.
const (
	// OffsetsKeyPrefix starts the key OffsetsKeyPrefix+group+"."+topic.
	// Its value is a JSON object from Kafka partition to the end offset
	// (exclusive: the next offset to consume) committed for it, covering
	// every partition ever committed for that group and topic, so the
	// newest snapshot carrying the key alone gives the whole position.
	OffsetsKeyPrefix = "quiver.kafka.offsets."
	// CommitKey holds JSON describing the one commit that made a
	// snapshot: group, topic and the [start, end) range per partition.
	CommitKey = "quiver.kafka.commit"
	// CommitIDKey holds a unique id per commit, with which a retry after
	// an error of unknown outcome finds out whether the commit landed.
	CommitIDKey = "quiver.commit-id"
)

// ErrFenced is returned when a commit's offsets do not continue the offsets
// the table has already committed: another writer got there first, or the
// caller is replaying records. Nothing is committed.
var ErrFenced = errors.New("iceberg: commit fenced by the table's committed offsets")

// ErrTooManyConflicts is returned when other writers kept committing
// first and the retries ran out. Nothing is committed.
var ErrTooManyConflicts = errors.New("iceberg: commit kept conflicting with other writers")

// Range is a half-open range [Start, End) of Kafka offsets of one partition.
type Range struct {
	// Start is the first offset covered.
	Start int64
	// End is one past the last offset covered: the next offset to consume.
	End int64
	// First says that the caller believes nothing was committed for this
	// partition before. It lets the commit through when the table has no
	// offset for the partition; without it such a commit is fenced, so a
	// writer that lost its position cannot restart a partition at an
	// arbitrary offset. When the table does have an offset, First changes
	// nothing: Start must equal it.
	First bool
}

// Offsets is the Kafka position a commit moves the table to, for one
// consumer group and topic.
type Offsets struct {
	// Group is the Kafka consumer group.
	Group string
	// Topic is the Kafka topic.
	Topic string
	// Ranges maps each partition the commit covers to the offsets it
	// covers. Partitions not named keep their committed offsets. An
	// empty range (Start == End) moves nothing but still checks the fence.
	Ranges map[int32]Range
}

// OffsetsKey returns the snapshot summary key of group and topic.
func OffsetsKey(group, topic string) string {
	return OffsetsKeyPrefix + group + "." + topic
}

func (o Offsets) validate() error {
	if o.Group == "" || o.Topic == "" {
		return errors.New("iceberg: offsets need a group and a topic")
	}
	for p, r := range o.Ranges {
		if p < 0 || r.Start < 0 || r.End < r.Start {
			return fmt.Errorf("iceberg: invalid range [%d, %d) for partition %d of %s", r.Start, r.End, p, o.Topic)
		}
	}
	return nil
}

// CommitResult describes a successful commit.
type CommitResult struct {
	// SnapshotID is the snapshot the commit created.
	SnapshotID int64
	// Files is how many data files it added.
	Files int
	// Rows is how many rows it added.
	Rows int64
	// Attempts is how many times the commit was sent to the catalog.
	Attempts int
}

// Files are data files written to a table's data location but not yet
// committed. Commit them with [Table.CommitFiles] or delete them with
// [Files.Discard].
type Files struct {
	t     *Table
	files []iceberg.DataFile
}

// Len returns the number of data files.
func (f *Files) Len() int { return len(f.files) }

// Rows returns the number of rows in the files.
func (f *Files) Rows() int64 {
	var n int64
	for _, df := range f.files {
		n += df.Count()
	}
	return n
}

// Paths returns the locations of the files.
func (f *Files) Paths() []string {
	out := make([]string, len(f.files))
	for i, df := range f.files {
		out[i] = df.FilePath()
	}
	return out
}

// Discard deletes the files, best effort: what cannot be deleted is left
// for [Table.Orphans] to find. It returns the first error.
func (f *Files) Discard(ctx context.Context) error {
	if len(f.files) == 0 {
		return nil
	}
	fsys, err := f.t.current().FS(ctx)
	if err != nil {
		return err
	}
	var first error
	for _, df := range f.files {
		if err := fsys.Remove(df.FilePath()); err != nil && first == nil {
			first = err
		}
	}
	f.files = nil
	return first
}

// Write writes the records of rdr as Parquet data files under the table's
// data location, through iceberg-go's writer: zstd compression (the
// table's write.parquet.compression-codec), column statistics in the files
// and in the manifests, one or more files per partition. The table's schema
// is first evolved to rdr's schema by the rules of [Lake.Table] (new
// columns are added, incompatible changes refused); columns rdr lacks are
// null. rdr is read to its end; releasing it stays with the caller.
//
// On error the files already written are deleted, best effort.
func (t *Table) Write(ctx context.Context, rdr array.RecordReader) (*Files, error) {
	return t.WriteAs(ctx, uuid.New(), rdr)
}

// WriteAs is Write with the write id that every file's name carries, so
// that a caller who noted it before writing can find the files of a write
// that a crash interrupted (see [Table.RemoveWrites]).
func (t *Table) WriteAs(ctx context.Context, id uuid.UUID, rdr array.RecordReader) (*Files, error) {
	if _, err := t.refresh(ctx); err != nil {
		return nil, err
	}
	out := &Files{t: t}
	if rdr == nil {
		return out, nil
	}
	if err := t.evolve(ctx, rdr.Schema()); err != nil {
		return nil, err
	}
	tbl := t.current()
	records := func(yield func(arrow.RecordBatch, error) bool) {
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain() // WriteRecords releases each batch it consumes
			if !yield(rec, nil) {
				return
			}
		}
		if err := rdr.Err(); err != nil {
			yield(nil, err)
		}
	}
	for df, err := range table.WriteRecords(ctx, tbl, rdr.Schema(), records, table.WithWriteUUID(id)) {
		if err != nil {
			_ = out.Discard(ctx)
			return nil, fmt.Errorf("iceberg: table %s: write data files: %w", strings.Join(t.ident, "."), err)
		}
		out.files = append(out.files, df)
	}
	return out, nil
}

// Commit writes the records of rdr (see [Table.Write]) and commits them
// with offsets in one snapshot (see [Table.CommitFiles]). rdr may be nil to
// commit offsets alone, for instance for records that were all filtered
// out. If the commit fails the written files are deleted, best effort.
func (t *Table) Commit(ctx context.Context, rdr array.RecordReader, offsets Offsets) (CommitResult, error) {
	if err := offsets.validate(); err != nil {
		return CommitResult{}, err
	}
	files, err := t.Write(ctx, rdr)
	if err != nil {
		return CommitResult{}, err
	}
	return t.CommitFiles(ctx, files, offsets)
}

// maxCommitAttempts bounds how often a commit is rebuilt after conflicts.
const maxCommitAttempts = 12

// CommitFiles adds files to the table and records offsets in the same
// snapshot, exactly once:
//
//   - Fence: before each attempt the table is reloaded and, for every
//     partition p in offsets.Ranges, the end offset the table has committed
//     for p must equal the range's Start (or, when the table has none, the
//     range must be marked First). Otherwise nothing is committed and the
//     error is ErrFenced.
//   - The snapshot summary gets the cumulative end offsets under
//     [OffsetsKey] (all partitions, the committed ones carried over),
//     [CommitKey] and a unique [CommitIDKey]. Offset keys of other groups
//     and topics are carried over too.
//   - The catalog commit is a compare-and-swap on the table's main branch.
//     When another writer commits first, the commit is rebuilt on the new
//     metadata, fenced again and retried, with backoff, up to 12 attempts
//     (then ErrTooManyConflicts).
//   - When the catalog answers with an error that leaves the outcome
//     unknown, the table is reloaded and the commit id looked up: a commit
//     that did land is reported as a success.
//
// files may be nil or empty to commit offsets alone. Invalid offsets (no
// group or topic, End before Start) are refused before anything else and
// leave files alone. When the commit fails for sure (fence, conflicts) the
// files are deleted, best effort; when its outcome is unknown they are
// kept, and [Table.Orphans] finds them later if the commit did not land.
func (t *Table) CommitFiles(ctx context.Context, files *Files, offsets Offsets) (res CommitResult, err error) {
	if err := offsets.validate(); err != nil {
		return CommitResult{}, err
	}
	if files == nil {
		files = &Files{t: t}
	}
	keep := false
	defer func() {
		if err != nil && !keep {
			_ = files.Discard(context.WithoutCancel(ctx))
		}
	}()

	commitID := uuid.NewString()
	desc, err := json.Marshal(commitDescription(offsets))
	if err != nil {
		return CommitResult{}, err
	}
	res = CommitResult{Files: len(files.files), Rows: files.Rows()}

	for attempt := 0; attempt < maxCommitAttempts; attempt++ {
		if attempt > 0 {
			if err := sleepBackoff(ctx, attempt-1); err != nil {
				return CommitResult{}, err
			}
		}
		tbl, err := t.refresh(ctx)
		if err != nil {
			return CommitResult{}, err
		}
		if attempt > 0 {
			// A failure taken for a conflict that in fact landed must be
			// a success, not a fence against its own offsets.
			if s := findCommit(tbl, commitID); s != nil {
				res.SnapshotID = s.SnapshotID
				return res, nil
			}
		}

		props, err := fence(tbl, offsets)
		if err != nil {
			return CommitResult{}, err
		}
		props[CommitKey] = string(desc)
		props[CommitIDKey] = commitID

		txn := tbl.NewTransaction()
		// Pin the main branch: if anyone commits after the reload above,
		// the catalog refuses this commit instead of iceberg-go replaying
		// it on top, which would skip the fence.
		if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
			return CommitResult{}, fmt.Errorf("iceberg: table %s: %w", strings.Join(t.ident, "."), err)
		}
		if len(files.files) > 0 {
			err = txn.AddDataFiles(ctx, files.files, props, table.WithoutDuplicateCheck())
		} else {
			// An empty append still makes a snapshot to carry the offsets.
			err = txn.AddFiles(ctx, nil, props, true)
		}
		if err != nil {
			return CommitResult{}, fmt.Errorf("iceberg: table %s: stage the commit: %w", strings.Join(t.ident, "."), err)
		}

		res.Attempts = attempt + 1
		next, err := txn.Commit(ctx)
		if err == nil {
			t.setCurrent(next)
			if s := next.CurrentSnapshot(); s != nil {
				res.SnapshotID = s.SnapshotID
			}
			return res, nil
		}
		if isConflict(err) {
			continue
		}

		// Unknown outcome: look for the commit id before giving up.
		commitErr := err
		if tbl, rerr := t.refresh(context.WithoutCancel(ctx)); rerr == nil {
			if s := findCommit(tbl, commitID); s != nil {
				res.SnapshotID = s.SnapshotID
				return res, nil
			}
		}
		keep = true
		return CommitResult{}, fmt.Errorf("iceberg: table %s: commit: %w", strings.Join(t.ident, "."), commitErr)
	}
	return CommitResult{}, fmt.Errorf("%w: table %s, %d attempts", ErrTooManyConflicts, strings.Join(t.ident, "."), maxCommitAttempts)
}

type commitDesc struct {
	Group  string              `json:"group"`
	Topic  string              `json:"topic"`
	Ranges map[string][2]int64 `json:"ranges"`
}

func commitDescription(o Offsets) commitDesc {
	d := commitDesc{Group: o.Group, Topic: o.Topic, Ranges: make(map[string][2]int64, len(o.Ranges))}
	for p, r := range o.Ranges {
		d.Ranges[strconv.Itoa(int(p))] = [2]int64{r.Start, r.End}
	}
	return d
}

// fence checks offsets against what tbl has committed and returns the
// snapshot properties of a commit that moves the table to offsets.
func fence(tbl *table.Table, offsets Offsets) (iceberg.Properties, error) {
	carried, err := latestOffsets(tbl)
	if err != nil {
		return nil, err
	}
	key := OffsetsKey(offsets.Group, offsets.Topic)
	committed, err := decodeOffsets(key, carried[key])
	if err != nil {
		return nil, err
	}
	for _, p := range slices.Sorted(maps.Keys(offsets.Ranges)) {
		r := offsets.Ranges[p]
		end, ok := committed[p]
		switch {
		case ok && end != r.Start:
			return nil, fmt.Errorf("%w: table %s, %s partition %d: the commit starts at offset %d but the table has committed up to %d",
				ErrFenced, strings.Join(tbl.Identifier(), "."), offsets.Topic, p, r.Start, end)
		case !ok && !r.First:
			return nil, fmt.Errorf("%w: table %s, %s partition %d: the table has no committed offset for this partition and the range is not marked First",
				ErrFenced, strings.Join(tbl.Identifier(), "."), offsets.Topic, p)
		}
		committed[p] = r.End
	}
	enc, err := json.Marshal(committed)
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{}
	for k, v := range carried {
		props[k] = v
	}
	props[key] = string(enc)
	return props, nil
}

// latestOffsets returns, for every offsets key, its value in the newest
// snapshot of the main branch's history that has it. Snapshots made by
// other tools (compaction, maintenance) do not carry the keys, so the walk
// goes back past them.
func latestOffsets(tbl *table.Table) (map[string]string, error) {
	meta := tbl.Metadata()
	out := map[string]string{}
	seen := map[int64]bool{}
	for s := meta.CurrentSnapshot(); s != nil; {
		if seen[s.SnapshotID] {
			break
		}
		seen[s.SnapshotID] = true
		if s.Summary != nil {
			for k, v := range s.Summary.Properties {
				if strings.HasPrefix(k, OffsetsKeyPrefix) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return out, nil
}

func decodeOffsets(key, value string) (map[int32]int64, error) {
	out := map[int32]int64{}
	if value == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(value), &out); err != nil {
		return nil, fmt.Errorf("iceberg: snapshot property %s is not valid offsets JSON: %w", key, err)
	}
	return out, nil
}

// findCommit returns the snapshot of the main branch's history whose
// summary has commit id id, or nil.
func findCommit(tbl *table.Table, id string) *table.Snapshot {
	meta := tbl.Metadata()
	seen := map[int64]bool{}
	for s := meta.CurrentSnapshot(); s != nil && !seen[s.SnapshotID]; {
		seen[s.SnapshotID] = true
		if s.Summary != nil && s.Summary.Properties[CommitIDKey] == id {
			return s
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return nil
}

// CommittedOffsets returns the end offset (the next offset to consume) per
// partition committed for group and topic, read from the table's current
// snapshot after reloading it (going back past snapshots made by other
// tools). Partitions never committed are absent; an empty map means
// nothing was committed.
func (t *Table) CommittedOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	tbl, err := t.refresh(ctx)
	if err != nil {
		return nil, err
	}
	carried, err := latestOffsets(tbl)
	if err != nil {
		return nil, err
	}
	key := OffsetsKey(group, topic)
	return decodeOffsets(key, carried[key])
}
