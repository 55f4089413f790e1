// Package testmem checks, in tests, that Arrow memory handed out is all
// given back. It depends on nothing of quiver's, so that every package's
// tests, internal or external, can use it.
package testmem

import (
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Checked returns an allocator that counts what it hands out, and checks
// when the test ends, after every cleanup registered later has run, that
// all of it came back. It checks at once, without collecting garbage:
// for code that must release what it holds itself.
func Checked(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// CheckedWait is Checked for memory that a server or stream gives back
// after the test's own calls return: its check waits as WaitFreed does.
// Cleanups registered later (servers, clients, databases opened with it)
// run before the wait begins.
func CheckedWait(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { WaitFreed(t, mem) })
	return mem
}

// WaitFreed waits up to 10 s for mem to drop to zero (a server releases a
// stream's buffers after its handler returns, and takes back what gRPC
// dropped unfreed at the next garbage collection), then checks it. When memory
// is still held it logs every goroutine's stack, so that a failure under
// load says where the holder was stuck.
func WaitFreed(t testing.TB, mem *memory.CheckedAllocator) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for mem.CurrentAlloc() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if mem.CurrentAlloc() != 0 {
		var b strings.Builder
		pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Logf("%d bytes still allocated after 10 s; goroutines:\n%s", mem.CurrentAlloc(), b.String())
	}
	mem.AssertSize(t, 0)
}
