package segment

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// resumeFraction is how far usage must fall below the ceiling (and free
// space rise above the floor) before a paused pipeline resumes, so it does
// not flap at the limit.
const resumeFraction = 0.9

// DiskGuard decides when the pipeline must pause so as not to fill the
// disk. A zero Ceiling or MinFree disables that check.
type DiskGuard struct {
	// Ceiling is the most bytes Paths may take together.
	Ceiling int64
	// MinFree is the least free space the file system holding FreeOn
	// must keep.
	MinFree int64
	// Paths are files or directory trees whose sizes add up to the usage.
	Paths []string
	// FreeOn is a path on the file system whose free space is watched.
	FreeOn string
}

// DiskStatus is one measurement.
type DiskStatus struct {
	// Used is the bytes under Paths; Free is the free bytes on FreeOn's
	// file system, or -1 when unknown.
	Used, Free int64
	// Over means the pipeline should be (or stay) paused; Reason says why.
	Over   bool
	Reason string
}

// Enabled reports whether the guard ever pauses.
func (g DiskGuard) Enabled() bool { return g.Ceiling > 0 || g.MinFree > 0 }

// Check measures usage. paused says whether the pipeline is paused now:
// a paused pipeline stays paused until usage is well below the limits.
func (g DiskGuard) Check(paused bool) DiskStatus {
	st := DiskStatus{Free: -1}
	for _, p := range g.Paths {
		st.Used += treeSize(p)
	}
	diskUsed.Set(float64(st.Used))
	if g.FreeOn != "" {
		st.Free = freeBytes(g.FreeOn)
		if st.Free >= 0 {
			diskFree.Set(float64(st.Free))
		}
	}
	ceiling, minFree := float64(g.Ceiling), float64(g.MinFree)
	if paused {
		ceiling *= resumeFraction
		minFree /= resumeFraction
	}
	switch {
	case g.Ceiling > 0 && float64(st.Used) >= ceiling:
		st.Over = true
		st.Reason = fmt.Sprintf("files take %d MB, ceiling %d MB", st.Used>>20, g.Ceiling>>20)
	case g.MinFree > 0 && st.Free >= 0 && float64(st.Free) < minFree:
		st.Over = true
		st.Reason = fmt.Sprintf("%d MB free on disk, floor %d MB", st.Free>>20, g.MinFree>>20)
	}
	return st
}

// treeSize is the size of a file, or of every file under a directory; a
// missing path is 0.
func treeSize(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed meanwhile, or unreadable: not counted
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// FileSize is the size of a database file and its write-ahead log.
func FileSize(dbPath string) int64 {
	var n int64
	for _, p := range []string{dbPath, walPath(dbPath)} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}
