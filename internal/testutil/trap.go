package testutil

import (
	"bytes"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TrapAllocator is an Arrow allocator that panics once when a test asks:
// after Arm(where), the first allocation made by a goroutine whose stack
// mentions where (a function name, "flightsql.drain") panics. A server
// given it as its allocator (server.Config.Allocator, engine.Options)
// lets a test inject a panic into a chosen part of the server's code,
// without a hook in that code.
type TrapAllocator struct {
	memory.Allocator
	armed atomic.Pointer[string]
}

// NewTrapAllocator is a TrapAllocator over Go's allocator.
func NewTrapAllocator() *TrapAllocator {
	return &TrapAllocator{Allocator: memory.NewGoAllocator()}
}

// Arm sets the trap for the next allocation under where.
func (a *TrapAllocator) Arm(where string) { a.armed.Store(&where) }

// Disarm takes the trap away if it has not fired.
func (a *TrapAllocator) Disarm() { a.armed.Store(nil) }

// Fired reports whether the last trap set has gone off.
func (a *TrapAllocator) Fired() bool { return a.armed.Load() == nil }

// Allocate is the underlying allocator's, unless the trap fires.
func (a *TrapAllocator) Allocate(n int) []byte {
	a.spring()
	return a.Allocator.Allocate(n)
}

// Reallocate is the underlying allocator's, unless the trap fires.
func (a *TrapAllocator) Reallocate(n int, b []byte) []byte {
	a.spring()
	return a.Allocator.Reallocate(n, b)
}

func (a *TrapAllocator) spring() {
	where := a.armed.Load()
	if where == nil {
		return
	}
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	if bytes.Contains(buf, []byte(*where)) && a.armed.CompareAndSwap(where, nil) {
		panic(fmt.Sprintf("injected panic: an allocation in %s", *where))
	}
}
