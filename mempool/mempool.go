// Package mempool recycles the large buffers that Arrow batches and gRPC
// messages are made of. Fresh Go memory must be zeroed and faulted in,
// which at gigabytes per second costs more than the copies themselves.
package mempool

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/mem"
)

// minPooled is the smallest allocation the pool recycles; smaller ones go
// to the Go allocator.
const minPooled = 4 << 10

// Allocator is an Arrow allocator that recycles buffers in power-of-two
// size classes. Result batches are the same few sizes over and over, and
// fresh Go memory must be zeroed and faulted in: recycling it more than
// doubles the engine's export rate. Pooled buffers are not zeroed; Arrow
// allocators owe no zeroed memory, and quiver's writers fill every byte
// they hand out. The pools empty at each garbage collection, so the
// allocator holds no memory a running program does not use.
//
// A buffer must not be used after it is freed: anything that hands Arrow
// memory to another owner (such as gRPC's send queue) must hold a
// reference until that owner is done.
type Allocator struct {
	classes [48]sync.Pool
	small   memory.Allocator
}

// New returns an empty Allocator.
func New() *Allocator {
	return &Allocator{small: memory.NewGoAllocator()}
}

func class(n int) int { return bits.Len(uint(n - 1)) }

// Allocate returns a buffer of n bytes, recycled when one is free.
func (p *Allocator) Allocate(n int) []byte {
	if n < minPooled {
		return p.small.Allocate(n)
	}
	c := class(n)
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	// Go aligns allocations of a power-of-two size of 4 KB and more to at
	// least 4 KB, more than Arrow's 64-byte alignment.
	return make([]byte, n, 1<<c)
}

// Reallocate resizes b, in place when its class has room.
func (p *Allocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) && cap(b) >= minPooled && isClass(cap(b)) {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free returns b to its pool.
func (p *Allocator) Free(b []byte) {
	c := cap(b)
	if c < minPooled || !isClass(c) {
		p.small.Free(b)
		return
	}
	b = b[:c]
	p.classes[class(c)].Put(&b)
}

func isClass(n int) bool { return n&(n-1) == 0 }

// GRPC is a gRPC buffer pool (experimental.WithBufferPool,
// experimental.BufferPool) over the same size classes. gRPC's default
// pool clears every buffer it hands out; this one does not, because gRPC
// reads a full frame into every buffer it takes. That clearing was 6% of
// a Flight client's CPU time on a bulk DoGet.
type GRPC struct {
	classes [48]sync.Pool
}

var _ mem.BufferPool = (*GRPC)(nil)

// Get returns a buffer of length n.
func (p *GRPC) Get(n int) *[]byte {
	if n == 0 {
		b := []byte{}
		return &b
	}
	c := class(n)
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<c)
	return &b
}

// Put returns b to its pool.
func (p *GRPC) Put(b *[]byte) {
	c := cap(*b)
	if c == 0 || !isClass(c) {
		return
	}
	p.classes[class(c)].Put(b)
}
