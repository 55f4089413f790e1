// Package durable writes files so that a crash leaves either the old file
// or the whole new one, and makes renames and creations survive a power
// loss: the one copy of the temp-file, sync, rename and directory-sync
// sequence that the token key, the users file and the lake's segments
// each kept.
package durable

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// WriteFile replaces path with b, mode perm: written to a temporary file
// in the same directory, synced, renamed over path, and the directory
// synced. A reader sees the old contents or the new, never a part.
func WriteFile(path string, b []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, b, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename temp file: %w", err)
	}
	return SyncDir(filepath.Dir(path))
}

// CreateFile is WriteFile that never replaces: when path already exists it
// returns an error wrapping fs.ErrExist and leaves path as it was, so two
// processes racing to create the same file agree on one of them.
func CreateFile(path string, b []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, b, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	// Link, unlike rename, fails instead of replacing a file that another
	// process has just created.
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("link %s: %w", filepath.Base(path), err)
	}
	return SyncDir(filepath.Dir(path))
}

// writeTemp writes b to a new synced file of mode perm beside path and
// returns its name.
func writeTemp(path string, b []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("create temp file: %w", err)
	}
	err = func() error {
		if err := f.Chmod(perm); err != nil {
			return fmt.Errorf("chmod temp file: %w", err)
		}
		if _, err := f.Write(b); err != nil {
			return fmt.Errorf("write temp file: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync temp file: %w", err)
		}
		return nil
	}()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close temp file: %w", cerr)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// SyncDir makes a directory's entries (renames, creations, removals)
// durable. Windows cannot open a directory for syncing and needs no sync
// there, so it is a no-op on Windows.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// SyncFile flushes an existing file's contents to stable storage.
func SyncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
