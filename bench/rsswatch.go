package bench

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/internal/serveproc"
)

// rssWatch samples resident memory while a fetch runs: the server
// process's and this process's own (the client's), every 20 ms.
type rssWatch struct {
	srv            *serveproc.Proc
	server, client int64 // peaks, bytes
	stop           chan struct{}
	wg             sync.WaitGroup
}

// watchRSS starts sampling. It first gives freed memory back to the
// system, so that the client's peak is this fetch's.
func watchRSS(srv *serveproc.Proc) *rssWatch {
	debug.FreeOSMemory()
	w := &rssWatch{srv: srv, stop: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				w.sample()
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *rssWatch) sample() {
	w.server = max(w.server, w.srv.RSS())
	if m, err := osfacts.ProcessMemory(os.Getpid()); err == nil {
		w.client = max(w.client, m.RSS)
	}
}

// Stop ends sampling and returns the peaks in bytes.
func (w *rssWatch) Stop() (server, client int64) {
	close(w.stop)
	w.wg.Wait()
	return w.server, w.client
}

// memAvailable is the system's MemAvailable in bytes, or 0 when unknown.
func memAvailable() int64 {
	n, _ := osfacts.MemAvailable()
	return n
}

// tableRowBytes is about what a row of a generated table takes in a
// DuckDB in-memory database: 20 BIGINTs, or 20 short (inlined) strings.
func tableRowBytes(table string) int64 {
	if strings.HasPrefix(table, "str") {
		return 20 * 16
	}
	return 20 * 8
}

// fmtGB is bytes in GB with one decimal.
func fmtGB(b int64) string { return fmt.Sprintf("%.1f GB", float64(b)/(1<<30)) }
