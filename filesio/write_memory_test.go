package filesio_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/filesio"
	"github.com/quiverdata/quiver/internal/testmem"
)

// wideReader streams rows of cols string columns, width bytes each, made
// a batch at a time as they are read, as a server's result arrives.
type wideReader struct {
	mem               memory.Allocator
	schema            *arrow.Schema
	rows, batch, next int
	width             int
	refs              atomic.Int64
	cur               arrow.RecordBatch
}

func newWideReader(mem memory.Allocator, rows, batch, cols, width int) *wideReader {
	fields := make([]arrow.Field, cols)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("w%d", i), Type: arrow.BinaryTypes.String}
	}
	r := &wideReader{mem: mem, schema: arrow.NewSchema(fields, nil), rows: rows, batch: batch, width: width}
	r.refs.Store(1)
	return r
}

func (r *wideReader) Schema() *arrow.Schema { return r.schema }
func (r *wideReader) Err() error            { return nil }
func (r *wideReader) Retain()               { r.refs.Add(1) }
func (r *wideReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
func (r *wideReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *wideReader) Record() arrow.RecordBatch      { return r.cur }

func (r *wideReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.next >= r.rows {
		return false
	}
	n := min(r.batch, r.rows-r.next)
	b := array.NewRecordBuilder(r.mem, r.schema)
	defer b.Release()
	pad := strings.Repeat("x", r.width)
	for c := range r.schema.NumFields() {
		sb := b.Field(c).(*array.StringBuilder)
		sb.ReserveData(n * (r.width + 12))
		for i := range n {
			v := fmt.Sprintf("%d.%d.", r.next+i, c)
			sb.Append(v + pad[len(v):])
		}
	}
	r.next += n
	r.cur = b.NewRecordBatch()
	return true
}

// TestWriteFile_MemoryLimit writes 150,000 rows of ten 200-byte strings
// (a Parquet row group of 122,880 of them is 246 MB) under a memory limit.
// Under 400MB DuckDB spills to a private directory among the temporary
// files, never to .tmp in the current directory, and the directory is gone
// once the file is written; under 64MB the write fails as ErrMemory and
// leaves nothing behind.
func TestWriteFile_MemoryLimit(t *testing.T) {
	const rows = 150_000
	for _, tt := range []struct {
		limit string
		fails bool
	}{
		{"400MB", false},
		{"64MB", true},
	} {
		t.Run(tt.limit, func(t *testing.T) {
			tmp, cwd, dir := t.TempDir(), t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Chdir(cwd)
			spilled := watchFiles(t, tmp)
			mem := testmem.Checked(t)
			r := newWideReader(mem, rows, 10_000, 10, 200)
			defer r.Release()
			path := filepath.Join(dir, "out.parquet")
			err := filesio.WriteFile(context.Background(), r, path, "parquet", filesio.WithMemoryLimit(tt.limit))
			largest := spilled()
			if tt.fails {
				if !errors.Is(err, filesio.ErrMemory) || !strings.Contains(err.Error(), "limit "+tt.limit) {
					t.Fatalf("got %v, want ErrMemory naming the limit", err)
				}
				if names := listDir(t, dir); len(names) != 0 {
					t.Errorf("files left after a failed write: %v", names)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				got, err := readAll(t, []string{path}, filesio.ReadOptions{}, 1)
				if err != nil {
					t.Fatalf("read back: %v", err)
				}
				if got.rows != rows {
					t.Errorf("rows read back: got %d, want %d", got.rows, rows)
				}
				if largest == 0 {
					t.Error("nothing spilled: the test no longer writes more than the limit")
				}
			}
			if names := listDir(t, cwd); len(names) != 0 {
				t.Errorf("the current directory has %v, want nothing", names)
			}
			if names := listDir(t, tmp); len(names) != 0 {
				t.Errorf("temporary files left: %v", names)
			}
		})
	}
}

// watchFiles polls dir's tree until the returned function is called,
// which stops it and returns the largest file it saw.
func watchFiles(t *testing.T, dir string) func() int64 {
	var largest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() && fi.Size() > largest.Load() {
					largest.Store(fi.Size())
				}
				return nil
			})
		}
	})
	var once sync.Once
	done := func() int64 {
		once.Do(func() { close(stop); wg.Wait() })
		return largest.Load()
	}
	t.Cleanup(func() { done() })
	return done
}
