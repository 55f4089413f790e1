package testutil

import (
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

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
