package ingest

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// CrashEnv names an environment variable for crash tests: POINT:N makes
// the process kill itself with SIGKILL the Nth time it reaches POINT (1
// when N is left out), as a kill -9 landing exactly there would. The
// points are the steps of a lake commit: lake-after-upload (data files
// written, not committed), lake-after-commit (the first table committed,
// the main one not yet), lake-before-delete (all committed, the local
// file not yet deleted), and lake-during-assign (held rows committed on an
// assignment, the new positions not yet set); and the steps of a
// compaction: compact-after-write (its files written, their replace
// snapshot not committed) and compact-after-commit (committed, snapshots
// not yet expired nor orphans deleted).
const CrashEnv = "QUIVER_CRASH_AT"

var crash = struct {
	once  sync.Once
	point string
	nth   int
	mu    sync.Mutex
	seen  int
}{}

// crashPoint kills the process if CrashEnv names this point and this is
// the chosen time it is reached.
func crashPoint(point string) {
	crash.once.Do(func() {
		v := os.Getenv(CrashEnv)
		if v == "" {
			return
		}
		name, n, _ := strings.Cut(v, ":")
		crash.point, crash.nth = name, 1
		if k, err := strconv.Atoi(n); err == nil && k > 0 {
			crash.nth = k
		}
	})
	if crash.point != point {
		return
	}
	crash.mu.Lock()
	crash.seen++
	hit := crash.seen == crash.nth
	crash.mu.Unlock()
	if hit {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // wait for the signal
	}
}
