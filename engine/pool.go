package engine

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// minPooled is the smallest allocation the pool recycles; smaller ones go
// to the Go allocator.
const minPooled = 4 << 10

// PoolAllocator is an Arrow allocator that recycles buffers in power-of-two
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
type PoolAllocator struct {
	classes [48]sync.Pool
	small   memory.Allocator
}

// NewPoolAllocator returns an empty PoolAllocator.
func NewPoolAllocator() *PoolAllocator {
	return &PoolAllocator{small: memory.NewGoAllocator()}
}

func class(n int) int { return bits.Len(uint(n - 1)) }

// Allocate returns a buffer of n bytes, recycled when one is free.
func (p *PoolAllocator) Allocate(n int) []byte {
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
func (p *PoolAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) && cap(b) >= minPooled && isClass(cap(b)) {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free returns b to its pool.
func (p *PoolAllocator) Free(b []byte) {
	c := cap(b)
	if c < minPooled || !isClass(c) {
		p.small.Free(b)
		return
	}
	b = b[:c]
	p.classes[class(c)].Put(&b)
}

func isClass(n int) bool { return n&(n-1) == 0 }
