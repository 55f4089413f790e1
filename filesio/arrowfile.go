package filesio

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrowFileMagic opens an Arrow IPC file; a stream has none.
var arrowFileMagic = []byte("ARROW1")

// arrowFile reads an Arrow IPC file or stream as batches of at most max
// rows: a writer's batch can be larger than a Flight message may be.
// It implements array.RecordReader.
type arrowFile struct {
	f      *os.File
	schema *arrow.Schema
	next   func() (arrow.RecordBatch, error) // a batch the caller releases; nil at the end
	close  func()
	max    int64

	pending arrow.RecordBatch // a batch bigger than max, being sliced
	off     int64
	cur     arrow.RecordBatch
	err     error
	refs    atomic.Int64
}

func openArrowFile(path string, max int64, mem memory.Allocator) (*arrowFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := &arrowFile{f: f, max: max}
	r.refs.Store(1)
	head := make([]byte, len(arrowFileMagic))
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	if n == len(head) && bytes.Equal(head, arrowFileMagic) {
		fr, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			f.Close()
			return nil, err
		}
		i := 0
		r.schema, r.close = fr.Schema(), func() { fr.Close() }
		r.next = func() (arrow.RecordBatch, error) {
			if i == fr.NumRecords() {
				return nil, nil
			}
			i++
			return fr.RecordBatchAt(i - 1)
		}
		return r, nil
	}
	sr, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<20), ipc.WithAllocator(mem))
	if err != nil {
		f.Close()
		return nil, err
	}
	r.schema, r.close = sr.Schema(), sr.Release
	r.next = func() (arrow.RecordBatch, error) {
		if !sr.Next() {
			return nil, sr.Err()
		}
		rec := sr.RecordBatch()
		rec.Retain()
		return rec, nil
	}
	return r, nil
}

func (r *arrowFile) Schema() *arrow.Schema { return r.schema }

func (r *arrowFile) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	if r.pending == nil {
		rec, err := r.next()
		if err != nil && err != io.EOF {
			r.err = err
		}
		if rec == nil || r.err != nil {
			if rec != nil {
				rec.Release()
			}
			return false
		}
		if rec.NumRows() <= r.max {
			r.cur = rec
			return true
		}
		r.pending, r.off = rec, 0
	}
	end := min(r.off+r.max, r.pending.NumRows())
	r.cur = r.pending.NewSlice(r.off, end)
	r.off = end
	if r.off == r.pending.NumRows() {
		r.pending.Release()
		r.pending = nil
	}
	return true
}

func (r *arrowFile) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (r *arrowFile) Record() arrow.RecordBatch { return r.cur }

func (r *arrowFile) Err() error { return r.err }

func (r *arrowFile) Retain() { r.refs.Add(1) }

// Release drops a reference; the last one releases the batches and closes
// the file.
func (r *arrowFile) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	for _, rec := range []arrow.RecordBatch{r.cur, r.pending} {
		if rec != nil {
			rec.Release()
		}
	}
	r.cur, r.pending = nil, nil
	r.close()
	r.f.Close()
}
