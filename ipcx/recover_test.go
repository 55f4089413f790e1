package ipcx

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/internal/panics"
)

// TestRunTasks_Panic: a task that panics, on the caller's goroutine or on
// one runTasks started, fails the run with a *panics.Error.
func TestRunTasks_Panic(t *testing.T) {
	for _, n := range []int{1, 64} {
		err := runTasks(n, func(i int) error {
			if i == n-1 {
				panic("injected panic")
			}
			return nil
		})
		pe := panics.As(err)
		if pe == nil || pe.Value != "injected panic" {
			t.Errorf("%d tasks: got %v, want the task's panic", n, err)
		}
	}
}

type discardSender struct{}

func (discardSender) SendMsg(any) error { return nil }

// TestCompressedWriter_SenderPanics: a panic on the sender goroutine of a
// compressed stream (here in the Observe callback it runs) fails the
// stream with a *panics.Error, where it would end the process.
func TestCompressedWriter_SenderPanics(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(make([]int64, 100_000), nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()

	comp := Compression{Codec: CodecLZ4, Observe: func(BatchStat) { panic("injected panic") }}
	w := NewCompressedWriter(discardSender{}, comp, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	err := w.Write(rec)
	err = errors.Join(err, w.Write(rec), w.Close())
	if pe := panics.As(err); pe == nil || pe.Value != "injected panic" {
		t.Fatalf("got %v, want the sender's panic", err)
	}
}
