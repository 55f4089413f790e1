package filesio

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// PendingFile is a file written under a temporary name in its
// destination's directory and renamed to the destination by Commit:
// until then, and after Abort, nothing changes at the destination. The
// rename is atomic on one file system, so a reader of the destination
// sees the old file or the whole new one.
type PendingFile struct {
	// File is open for writing on the temporary file.
	*os.File
	path string
	done bool
}

// CreatePending creates a temporary file for path beside it: hidden,
// named after it, with the permissions os.Create would give path.
func CreatePending(path string) (*PendingFile, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		tmp := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64()>>40, 36))
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		var pe *os.PathError
		if errors.As(err, &pe) { // name the destination, not the temporary file
			err = pe.Err
		}
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
		return &PendingFile{File: f, path: path}, nil
	}
	return nil, fmt.Errorf("create %s: no free temporary name beside it", path)
}

// Commit closes the file and renames it to its destination; on failure it
// removes it.
func (p *PendingFile) Commit() error {
	if p.done {
		return errors.New("commit " + p.path + ": already done")
	}
	p.done = true
	err := p.File.Close()
	if err != nil && !errors.Is(err, os.ErrClosed) {
		os.Remove(p.Name())
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if err := os.Rename(p.Name(), p.path); err != nil {
		os.Remove(p.Name())
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file. It does nothing after
// Commit, and may be called more than once.
func (p *PendingFile) Abort() {
	if p.done {
		return
	}
	p.done = true
	p.File.Close()
	os.Remove(p.Name())
}
