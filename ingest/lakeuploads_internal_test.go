package ingest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/google/uuid"

	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/lake"
)

// TestRemoveUncommitted checks what the redo of a crashed export deletes:
// every file of a write in the segment's uploads list that no snapshot
// references, however far the lake's offsets have moved since (another
// process may have taken the partition over and committed past it), and
// none of a write that landed.
func TestRemoveUncommitted(t *testing.T) {
	ctx := context.Background()
	const group, topic = "g", "t"
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rng := func(start, end int64, first bool) map[int32]lake.Range {
		return map[int32]lake.Range{0: {Start: start, End: end, First: first}}
	}
	for _, tc := range []struct {
		name string
		// other is a commit by another writer before the redo (nil: none);
		// landed commits the crashed write itself.
		other  map[int32]lake.Range
		landed bool
		keep   bool // the crashed write's files stay
	}{
		{name: "never landed, the lake where it was", keep: false},
		{name: "another owner committed part of its range", other: rng(0, 5, true), keep: false},
		{name: "another owner committed past its end", other: rng(0, 15, true), keep: false},
		{name: "landed", landed: true, keep: true},
		{name: "landed, then another owner went on", landed: true, other: rng(10, 15, false), keep: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := testmem.Checked(t)
			lk, err := lake.Open(ctx, lake.Config{Warehouse: "file://" + filepath.ToSlash(t.TempDir())})
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Close()
			tbl, err := lk.Table(ctx, "quiver", "events", schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			write := func(id uuid.UUID, lo, hi int64) *lake.Files {
				b := array.NewInt64Builder(mem)
				defer b.Release()
				for i := lo; i < hi; i++ {
					b.Append(i)
				}
				col := b.NewArray()
				defer col.Release()
				rec := array.NewRecordBatch(schema, []arrow.Array{col}, hi-lo)
				defer rec.Release()
				rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
				if err != nil {
					t.Fatal(err)
				}
				defer rdr.Release()
				files, err := tbl.WriteAs(ctx, id, rdr)
				if err != nil {
					t.Fatal(err)
				}
				return files
			}
			commit := func(files *lake.Files, r map[int32]lake.Range) {
				if _, err := tbl.CommitFiles(ctx, files, lake.Offsets{Group: group, Topic: topic, Ranges: r}); err != nil {
					t.Fatal(err)
				}
			}

			// The crashed export noted its write, uploaded it, and its
			// commit landed or not.
			dir := t.TempDir()
			uploads := filepath.Join(dir, "seg.duckdb.uploads")
			crashed := uuid.New()
			mine := rng(0, 10, true)
			if err := noteUploads(uploads, "events", crashed); err != nil {
				t.Fatal(err)
			}
			files := write(crashed, 0, 10)
			paths := files.Paths()
			if tc.landed {
				commit(files, mine)
			}
			var otherPaths []string
			if tc.other != nil {
				r := tc.other[0]
				f := write(uuid.New(), r.Start, r.End)
				otherPaths = f.Paths()
				commit(f, tc.other)
			}
			// A torn last line, as a crash while noting the next write
			// leaves it, is skipped.
			f, err := os.OpenFile(uploads, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"table":"events","wri`)
			f.Close()

			s := &icebergSink{cfg: LakeConfig{Group: group, Topic: topic}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				tables: []sinkTable{{local: "events", ice: tbl, isMain: true}}}
			if err := s.removeUncommitted(ctx, uploads); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(uploads); !os.IsNotExist(err) {
				t.Errorf("the uploads list is still there (%v)", err)
			}
			exists := func(p string) bool {
				_, err := os.Stat(strings.TrimPrefix(p, "file://"))
				return err == nil
			}
			for _, p := range paths {
				if exists(p) != tc.keep {
					t.Errorf("crashed write's file %s: exists %v, want %v", p, exists(p), tc.keep)
				}
			}
			for _, p := range otherPaths {
				if !exists(p) {
					t.Errorf("the other writer's committed file %s was deleted", p)
				}
			}
			o, err := tbl.Orphans(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Files) != 0 {
				t.Errorf("orphans left: %v", o.Files)
			}
			if len(paths) == 0 || (tc.other != nil && len(otherPaths) == 0) || slices.Equal(paths, otherPaths) {
				t.Fatalf("writes made files %v and %v: want some of each", paths, otherPaths)
			}
		})
	}
}
