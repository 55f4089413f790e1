package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once: every write arrives whole (run with
// -race, which make race does).
func TestBuffer_ConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Fatalf("%d lines, want 800", got)
	}
	if len(b.String()) != 800*len("line\n") {
		t.Fatalf("%d bytes: a write was torn", len(b.String()))
	}
}
