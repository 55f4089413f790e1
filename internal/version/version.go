// Package version says which quiver is running: its version, commit and
// build date, stamped at build time by the Makefile, and the versions of
// the DuckDB, arrow-go and Go it was built with.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	duckdb "github.com/duckdb/duckdb-go-bindings"
)

// Stamped by the build: go build -ldflags "-X
// github.com/quiverdata/quiver/internal/version.version=… -X …commit=…
// -X …date=…" (see the Makefile, which takes them from git describe).
// A build that does not stamp them reads the commit Go records from git,
// when there is one.
var (
	version string
	commit  string
	date    string
)

// Info is what a build says of itself.
type Info struct {
	// Version is quiver's version (git describe, such as v0.4.0 or
	// v0.4.0-12-gabc1234-dirty); "devel" for a build the Makefile did
	// not stamp.
	Version string `json:"version"`
	// Commit is the git commit built from; "unknown (built outside
	// git)" when neither the build nor Go's build info says.
	Commit string `json:"commit"`
	// Date is the build's date (UTC, RFC 3339); "unknown" when not
	// stamped.
	Date   string `json:"date"`
	DuckDB string `json:"duckdb"`
	Arrow  string `json:"arrow_go"`
	Go     string `json:"go"`
}

var (
	once sync.Once
	info Info
)

// outsideGit is the commit of a build that knows none.
const outsideGit = "unknown (built outside git)"

// Get returns this build's Info.
func Get() Info {
	once.Do(func() {
		info = Info{
			Version: orDefault(version, "devel"),
			Commit:  commit,
			Date:    orDefault(date, "unknown"),
			DuckDB:  duckdb.LibraryVersion(),
			Arrow:   "unknown",
			Go:      runtime.Version(),
		}
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			info.Commit = orDefault(info.Commit, outsideGit)
			return
		}
		for _, m := range bi.Deps {
			if strings.HasPrefix(m.Path, "github.com/apache/arrow-go/") {
				info.Arrow = m.Version
			}
		}
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if info.Commit == "" && rev != "" {
			info.Commit = rev
			if modified == "true" {
				info.Commit += "-dirty"
			}
		}
		info.Commit = orDefault(info.Commit, outsideGit)
	})
	return info
}

// String is the one-line form: "quiver v0.4.0 (commit abc1234, built
// 2026-12-07T10:00:00Z; DuckDB v1.5.6, arrow-go v18.8.0, go1.26.0)".
func (i Info) String() string {
	return fmt.Sprintf("quiver %s (commit %s, built %s; DuckDB %s, arrow-go %s, %s)",
		i.Version, short(i.Commit), i.Date, i.DuckDB, i.Arrow, i.Go)
}

// Short is the version and short commit, for handshakes and server
// names: "v0.4.0 (abc1234)".
func (i Info) Short() string {
	return i.Version + " (" + short(i.Commit) + ")"
}

// short is a commit cut to 12 hex digits, keeping a -dirty mark.
func short(c string) string {
	if c == outsideGit {
		return c
	}
	dirty := strings.HasSuffix(c, "-dirty")
	c = strings.TrimSuffix(c, "-dirty")
	if len(c) > 12 {
		c = c[:12]
	}
	if dirty {
		c += "-dirty"
	}
	return c
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
