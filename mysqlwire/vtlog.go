package mysqlwire

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	vtlog "github.com/dolthub/vitess/go/vt/log"
)

// vitess logs through package-level functions that default to the standard
// library's logger. They are pointed, once per process, at the most recent
// Server's logger. Almost everything vitess logs is a client going away or
// sending garbage, so it goes out at debug level. vitess also recovers the
// panics of its own packet decoding (a zero-length packet is one), closing
// that connection; those are counted and logged as a warning, without the
// stack, since a client can trigger them at will.
var (
	vitessLogger   atomic.Pointer[slog.Logger]
	redirectVitess sync.Once
)

func redirectVitessLog(l *slog.Logger) {
	vitessLogger.Store(l.With("source", "vitess"))
	redirectVitess.Do(func() {
		logArgs := func(args ...any) { logVitess(fmt.Sprint(args...)) }
		logFormat := func(format string, args ...any) { logVitess(fmt.Sprintf(format, args...)) }
		vtlog.Info, vtlog.Warning, vtlog.Error = logArgs, logArgs, logArgs
		vtlog.Infof, vtlog.Warningf, vtlog.Errorf = logFormat, logFormat, logFormat
	})
}

func logVitess(msg string) {
	l := vitessLogger.Load()
	if l == nil {
		return
	}
	if strings.Contains(msg, "caught panic") {
		protocolPanics.Inc()
		first, _, _ := strings.Cut(strings.TrimPrefix(msg, "mysql_server caught panic:\n"), "\n")
		l.Warn("mysql connection closed on a malformed packet", "panic", first)
		return
	}
	l.Debug(msg)
}
