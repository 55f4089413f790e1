//go:build unix

package server

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkDir refuses a directory of the export root, or above it (ancestor),
// that a user other than quiver's own or root could change: one they own,
// or one writable by group or others. Above the root a sticky directory
// (/tmp) is fine, as others cannot rename what is in it; in the root
// they could still add a symbolic link under a name an export is about
// to write.
func checkDir(path string, fi fs.FileInfo, ancestor bool) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return fmt.Errorf("%s belongs to another user (uid %d), who could swap what is in it for a symbolic link; exports need directories of quiver's own user", path, st.Uid)
	}
	mode := fi.Mode()
	if mode.Perm()&0o022 != 0 && !(ancestor && mode&fs.ModeSticky != 0) {
		return fmt.Errorf("%s is writable by other users (mode %s), who could swap what is in it for a symbolic link; chmod go-w %s", path, mode.Perm(), path)
	}
	return nil
}
