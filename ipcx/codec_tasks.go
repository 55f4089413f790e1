package ipcx

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/quiverdata/quiver/internal/panics"
)

// pieceSize is the work in one parallel task: about this many bytes of
// uncompressed data. Big enough that a task's setup is noise, small
// enough that a 64K-row batch spreads over the cores.
const pieceSize = 1 << 20

// runTasks runs fn(0), …, fn(n-1) on up to GOMAXPROCS goroutines, the
// caller being one of them, and returns the first error. After an error,
// tasks not yet started are skipped. Every goroutine it starts has ended
// when it returns. A task that panics fails with a *panics.Error: on a
// goroutine of runTasks' own, nothing else could recover it.
func runTasks(n int, fn func(i int) error) error {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := 0; i < n; i++ {
			if err := runTask(fn, i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next    atomic.Int64
		failed  atomic.Bool
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	work := func() {
		for !failed.Load() {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			if err := runTask(fn, i); err != nil {
				errOnce.Do(func() { first = err })
				failed.Store(true)
			}
		}
	}
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	return first
}

// runTask is fn(i), with a panic returned as a *panics.Error.
func runTask(fn func(i int) error, i int) (err error) {
	defer panics.Recover(&err)
	return fn(i)
}
