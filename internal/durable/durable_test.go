package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// entries lists dir's names, to check that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestWriteFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  []byte // nil: no file before
		perm fs.FileMode
	}{
		{"new file", nil, 0o600},
		{"replaces", []byte("old contents, longer than the new"), 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if tc.old != nil {
				if err := os.WriteFile(path, tc.old, 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, []byte("new"), tc.perm); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != "new" {
				t.Errorf("contents: got %q, %v; want %q", got, err, "new")
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != tc.perm {
				t.Errorf("mode: got %v, %v; want %v", fi.Mode().Perm(), err, tc.perm)
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Errorf("directory: got %v, want only f", names)
			}
		})
	}
}

func TestCreateFile(t *testing.T) {
	t.Run("new file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "k")
		if err := CreateFile(path, []byte("first"), 0o600); err != nil {
			t.Fatalf("CreateFile: %v", err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != "first" {
			t.Errorf("contents: got %q, %v; want %q", got, err, "first")
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("directory: got %v, want only k", names)
		}
	})
	t.Run("exists", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "k")
		if err := os.WriteFile(path, []byte("first"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := CreateFile(path, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
			t.Errorf("CreateFile over a file: got %v, want %v", err, fs.ErrExist)
		}
		if got, _ := os.ReadFile(path); string(got) != "first" {
			t.Errorf("contents: got %q, want %q kept", got, "first")
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("directory: got %v, want only k", names)
		}
	})
	t.Run("no directory", func(t *testing.T) {
		if err := CreateFile(filepath.Join(t.TempDir(), "missing", "k"), nil, 0o600); err == nil {
			t.Error("CreateFile in a missing directory: got no error")
		}
	})
}

func TestSync(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"SyncDir", SyncDir(dir), false},
		{"SyncFile", SyncFile(path), false},
		{"SyncDir of a missing directory", SyncDir(filepath.Join(dir, "missing")), true},
		{"SyncFile of a missing file", SyncFile(filepath.Join(dir, "missing")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.err != nil) != tc.wantErr {
				t.Errorf("got %v, want error %v", tc.err, tc.wantErr)
			}
		})
	}
}
