package ipcx

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
)

// TestHold_BodiesGivenBack checks that a message's held body goes back
// exactly once, whether gRPC frees every slice, some, or none (it drops a
// data frame unfreed when the stream was reset before the frame reached
// its writer).
func TestHold_BodiesGivenBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		freed int // slices gRPC frees; the rest it drops
	}{
		{"all freed", 3},
		{"some dropped", 1},
		{"all dropped", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var released atomic.Int32
			h := NewHold(func() { released.Add(1) })
			encodeAndLend(t, h, tc.freed)
			h.Done() // the sender's own reference
			deadline := time.Now().Add(5 * time.Second)
			for released.Load() == 0 && time.Now().Before(deadline) {
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
			}
			for range 3 { // a second release would show by now
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
			}
			if n := released.Load(); n != 1 {
				t.Fatalf("released %d times, want once", n)
			}
		})
	}
}

// encodeAndLend encodes a message with three large body slices and one
// small one and frees the first freed of the large ones, as gRPC would
// after writing them; the others become garbage.
func encodeAndLend(t *testing.T, h *Hold, freed int) {
	t.Helper()
	f := &RawFlightData{Header: []byte{1, 2, 3}, Hold: h}
	for range 3 {
		f.AddBody(make([]byte, 64<<10))
	}
	f.AddBody(make([]byte, 8)) // below gRPC's pooling threshold: copied
	out := f.encode()
	if got, want := out.Len(), f.BodyLen()+len(f.Header)+16; got < f.BodyLen() || got > want {
		t.Fatalf("encoded %d bytes for a %d-byte body", got, f.BodyLen())
	}
	large := 0
	for _, b := range out[1:] {
		if mem.IsBelowBufferPoolingThreshold(b.Len()) {
			continue
		}
		if large < freed {
			b.Free()
		}
		large++
	}
	if large != 3 {
		t.Fatalf("%d large slices, want 3", large)
	}
}
