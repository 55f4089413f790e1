package mempool

import (
	"testing"
	"unsafe"
)

func TestAllocator_Classes(t *testing.T) {
	p := New()
	for _, tt := range []struct{ n, cap int }{
		{minPooled, minPooled},
		{minPooled + 1, 2 * minPooled},
		{1 << 20, 1 << 20},
		{1<<20 + 1, 2 << 20},
		{3 << 20, 4 << 20},
	} {
		b := p.Allocate(tt.n)
		if len(b) != tt.n || cap(b) != tt.cap {
			t.Errorf("Allocate(%d): len %d cap %d, want len %d cap %d", tt.n, len(b), cap(b), tt.n, tt.cap)
		}
		if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64 != 0 {
			t.Errorf("Allocate(%d): not 64-byte aligned", tt.n)
		}
		p.Free(b)
	}
	// Below the pooled size the Go allocator serves (and aligns) it.
	if b := p.Allocate(100); len(b) != 100 {
		t.Errorf("Allocate(100): len %d", len(b))
	}
}

func TestAllocator_Recycles(t *testing.T) {
	p := New()
	// sync.Pool may drop what it is given (a collection, another P, or,
	// under the race detector, one Put in four on purpose), so free and
	// allocate several times: within one goroutine some freed buffer comes
	// back, with the length asked for.
	reused := false
	var last []byte
	for i := range 20 {
		n := 1<<20 - i
		b := p.Allocate(n)
		if len(b) != n {
			t.Fatalf("Allocate(%d): len %d", n, len(b))
		}
		if last != nil && unsafe.SliceData(b) == unsafe.SliceData(last) {
			reused = true
		}
		b[0], b[len(b)-1] = 1, 2
		p.Free(b)
		last = b
	}
	if !reused {
		t.Error("a freed buffer was never handed out again")
	}
}

func TestAllocator_Reallocate(t *testing.T) {
	p := New()
	b := p.Allocate(5000) // class 8192
	for i := range b {
		b[i] = byte(i)
	}
	same := p.Reallocate(8000, b)
	if unsafe.SliceData(same) != unsafe.SliceData(b) || len(same) != 8000 {
		t.Fatal("growing within the class moved the buffer")
	}
	grown := p.Reallocate(20000, same)
	if len(grown) != 20000 || cap(grown) != 32768 {
		t.Fatalf("grown: len %d cap %d", len(grown), cap(grown))
	}
	for i := range 5000 {
		if grown[i] != byte(i) {
			t.Fatalf("byte %d not copied", i)
		}
	}
	small := p.Reallocate(10, p.Allocate(50))
	if len(small) != 10 {
		t.Fatalf("small reallocate: len %d", len(small))
	}
}

func TestAllocator_FreeOfForeignBuffers(t *testing.T) {
	// A buffer whose capacity is not a class (not made here) is left to
	// the garbage collector, never handed out as a class buffer.
	p := New()
	odd := make([]byte, 5000)
	p.Free(odd)
	for range 4 {
		b := p.Allocate(4097)
		if cap(b) != 8192 {
			t.Fatalf("cap %d: a foreign buffer was pooled", cap(b))
		}
		p.Free(b)
	}
}

func TestGRPC_Pool(t *testing.T) {
	var p GRPC
	if b := p.Get(0); b == nil || len(*b) != 0 {
		t.Fatal("Get(0) must return an empty buffer")
	}
	b := p.Get(16 << 10)
	if len(*b) != 16<<10 || cap(*b) != 16<<10 {
		t.Fatalf("Get: len %d cap %d", len(*b), cap(*b))
	}
	(*b)[0] = 7
	p.Put(b)
	c := p.Get(10 << 10)
	if len(*c) != 10<<10 || cap(*c) != 16<<10 {
		t.Fatalf("Get after Put: len %d cap %d", len(*c), cap(*c))
	}
	odd := make([]byte, 100, 100)
	p.Put(&odd) // not a class: dropped
	if d := p.Get(64); cap(*d) != 64 {
		t.Fatalf("Get(64): cap %d", cap(*d))
	}
}
