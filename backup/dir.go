package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// dirObjects is a backup location on a file system: keys are paths
// under the directory.
type dirObjects string

// tmpMark is in the name of a file being written; List skips such files,
// and a crash leaves them to the next Remove of their backup.
const tmpMark = ".tmp-"

// Put writes r to a temporary file beside key, syncs it, renames it to
// key and syncs the directory, so that key holds all of r or nothing,
// whatever the moment of a crash.
func (d dirObjects) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	dst := filepath.Join(string(d), filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+tmpMark+"*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	n, err := io.Copy(f, readerWithContext{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("write %s: %w", dst, err)
	}
	return n, syncDir(filepath.Dir(dst))
}

// Open opens key.
func (d dirObjects) Open(key string) (io.ReadCloser, error) {
	return os.Open(filepath.Join(string(d), filepath.FromSlash(key)))
}

// List returns the keys of the files under dir, temporary ones excepted.
func (d dirObjects) List(dir string) ([]string, error) {
	root := filepath.Join(string(d), filepath.FromSlash(dir))
	var keys []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() || strings.Contains(e.Name(), tmpMark) {
			return nil
		}
		rel, err := filepath.Rel(string(d), p)
		if err != nil {
			return err
		}
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	return keys, err
}

// Remove deletes key, and its directory once that is empty of all but
// temporary files.
func (d dirObjects) Remove(key string) error {
	p := filepath.Join(string(d), filepath.FromSlash(key))
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(p)
	if parent == filepath.Clean(string(d)) {
		return nil
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if !strings.Contains(e.Name(), tmpMark) {
			return nil
		}
	}
	return os.RemoveAll(parent)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// readerWithContext stops a copy when its context ends.
type readerWithContext struct {
	ctx context.Context
	r   io.Reader
}

func (r readerWithContext) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// sortManifests orders backups oldest first.
func sortManifests(ms []*Manifest) {
	slices.SortFunc(ms, func(a, b *Manifest) int { return strings.Compare(a.ID, b.ID) })
}
