package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/quiverdata/quiver/engine"
)

// ErrExists is returned by Restore for a target that exists, without
// force.
var ErrExists = errors.New("already exists")

// Mismatch is one difference Verify found between a restored database
// and its manifest.
type Mismatch struct {
	Table string // schema.name
	What  string
}

func (m Mismatch) String() string { return m.Table + ": " + m.What }

// VerifyError is Verify's error when the restored database differs from
// the manifest.
type VerifyError struct {
	ID         string
	Mismatches []Mismatch
}

func (e *VerifyError) Error() string {
	parts := make([]string, len(e.Mismatches))
	for i, m := range e.Mismatches {
		parts[i] = m.String()
	}
	return fmt.Sprintf("backup %s does not match its manifest: %s", e.ID, strings.Join(parts, "; "))
}

// Verify restores backup m into the empty directory scratch (which the
// caller removes) and compares each table's row count and checksum with
// the manifest. The checksums are compared only when the running DuckDB
// is the version that took the backup (sameVersion reports whether it
// was); the row counts always are.
func Verify(ctx context.Context, st *Store, m *Manifest, scratch string) (sameVersion bool, err error) {
	paths, err := st.Fetch(ctx, m, scratch)
	if err != nil {
		return false, err
	}
	db, err := engine.Open(ctx, engine.Options{Path: paths[DatabaseFile], MaxIdle: 1})
	if err != nil {
		return false, fmt.Errorf("backup %s: open the restored database: %w", m.ID, err)
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	v, err := queryStrings(ctx, c, "SELECT library_version FROM pragma_version()")
	if err != nil {
		return false, err
	}
	sameVersion = v[0][0] == m.DuckDB
	got, err := tableSums(ctx, c, db.DefaultCatalog())
	if err != nil {
		return false, fmt.Errorf("backup %s: read the restored database: %w", m.ID, err)
	}
	if ms := compareTables(m.Tables, got, sameVersion); len(ms) > 0 {
		return sameVersion, &VerifyError{ID: m.ID, Mismatches: ms}
	}
	return sameVersion, nil
}

// compareTables lists how got differs from want.
func compareTables(want, got []Table, sums bool) []Mismatch {
	byName := map[string]Table{}
	for _, t := range got {
		byName[t.Schema+"."+t.Name] = t
	}
	var ms []Mismatch
	for _, w := range want {
		name := w.Schema + "." + w.Name
		g, ok := byName[name]
		delete(byName, name)
		switch {
		case !ok:
			ms = append(ms, Mismatch{name, "missing from the restored database"})
		case g.Rows != w.Rows:
			ms = append(ms, Mismatch{name, fmt.Sprintf("%d rows, the manifest says %d", g.Rows, w.Rows)})
		case sums && g.Checksum != w.Checksum:
			ms = append(ms, Mismatch{name, fmt.Sprintf("checksum %s, the manifest says %s", g.Checksum, w.Checksum)})
		}
	}
	for name := range byName {
		ms = append(ms, Mismatch{name, "in the restored database but not in the manifest"})
	}
	return ms
}

// Targets are where Restore puts a backup's files. An empty path leaves
// that file out.
type Targets struct {
	DB, Users, TokenKey string
}

// Restore puts the files of backup m at t's paths, each checked against
// the manifest before it replaces anything. A target that exists is
// refused with ErrExists unless force; with force, the database's WAL,
// which belongs to the database replaced, is removed. It returns the
// paths it wrote, by backup file name.
func Restore(ctx context.Context, st *Store, m *Manifest, t Targets, force bool) (map[string]string, error) {
	want := map[string]string{DatabaseFile: t.DB, UsersFile: t.Users, TokenKeyFile: t.TokenKey}
	if t.DB == "" {
		return nil, errors.New("restore: no database file to restore into")
	}
	for _, f := range m.Files {
		dst := want[f.Name]
		if dst == "" || force {
			continue
		}
		for _, p := range []string{dst, dst + ".wal"} {
			if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("restore into %s: %s %w (give --force to replace it)", dst, p, ErrExists)
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(t.DB), 0o755); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(t.DB), ".quiver-restore-")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(tmp)
	fetched, err := st.Fetch(ctx, m, tmp)
	if err != nil {
		return nil, err
	}
	done := map[string]string{}
	for _, name := range []string{DatabaseFile, UsersFile, TokenKeyFile} {
		src, dst := fetched[name], want[name]
		if src == "" || dst == "" {
			continue
		}
		if name == DatabaseFile {
			// Removed first: a crash after the rename must not leave the
			// replaced database's WAL to be replayed into this one.
			if err := os.Remove(dst + ".wal"); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("restore: remove the replaced database's WAL: %w", err)
			}
		}
		if err := os.Rename(src, dst); err != nil {
			return nil, fmt.Errorf("restore %s: %w", name, err)
		}
		done[name] = dst
	}
	if err := syncDir(filepath.Dir(t.DB)); err != nil {
		return nil, err
	}
	return done, nil
}
