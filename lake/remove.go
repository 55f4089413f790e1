package lake

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// RemoveFiles deletes data files by location, for instance those a
// process uploaded and then crashed before committing. A file already gone
// is no error. The caller must know that no snapshot references the files.
func (t *Table) RemoveFiles(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	tbl, err := t.refresh(ctx)
	if err != nil {
		return err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	var first error
	for _, p := range paths {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}

// RemoveWrites deletes the data files of writes ids (see [Table.WriteAs])
// that no snapshot references: those of a write that was never committed,
// or whose commit failed. It returns how many it deleted. Files of the
// writes that a snapshot references are left alone. The table's files
// are listed once, however many writes are given.
func (t *Table) RemoveWrites(ctx context.Context, ids ...uuid.UUID) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	orphans, err := t.Orphans(ctx, 0)
	if err != nil {
		return 0, err
	}
	var paths []string
	for _, o := range orphans.Files {
		name := path.Base(o.Path)
		if slices.ContainsFunc(ids, func(id uuid.UUID) bool { return strings.Contains(name, id.String()) }) {
			paths = append(paths, o.Path)
		}
	}
	return len(paths), t.RemoveFiles(ctx, paths)
}
