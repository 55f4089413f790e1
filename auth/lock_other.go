//go:build !unix

package auth

import "sync"

// fileLocks serializes edits within the process where the platform has
// no flock; quiver user and a running server may then race.
var fileLocks sync.Mutex

// lockFile takes the process-wide lock and returns its release.
func lockFile(string) (unlock func(), err error) {
	fileLocks.Lock()
	return fileLocks.Unlock, nil
}
