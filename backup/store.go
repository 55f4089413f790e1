package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/quiverdata/quiver/lake"
)

// ErrNotFound is returned for a backup that is not there, or not
// complete.
var ErrNotFound = errors.New("no such complete backup")

// objects is what a backup location must do: a directory on a file
// system, or a prefix of an object store (lake.Objects).
type objects interface {
	// Put stores r's content as key, published whole or not at all.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Open reads key; a missing key is an fs.ErrNotExist.
	Open(key string) (io.ReadCloser, error)
	// List returns the keys under dir.
	List(dir string) ([]string, error)
	// Remove deletes key.
	Remove(key string) error
}

// Store is a backup location. It is safe for concurrent use.
type Store struct {
	uri string
	obj objects
}

// Open opens the backup location uri: file:///absolute/dir (created if
// missing) or s3://bucket/prefix, reached with s3's settings.
func Open(ctx context.Context, uri string, s3 lake.S3Config) (*Store, error) {
	switch {
	case strings.HasPrefix(uri, "file://"):
		u, err := url.Parse(uri)
		if err != nil || u.Host != "" || !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("backup location %q: use file:///absolute/dir", uri)
		}
		dir := filepath.Clean(u.Path)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("backup location: %w", err)
		}
		return &Store{uri: "file://" + dir, obj: dirObjects(dir)}, nil
	case strings.HasPrefix(uri, "s3://"):
		o, err := lake.OpenObjects(ctx, strings.TrimRight(uri, "/"), s3)
		if err != nil {
			return nil, fmt.Errorf("backup location: %w", err)
		}
		return &Store{uri: o.URI(), obj: o}, nil
	}
	return nil, fmt.Errorf("backup location %q: use file:///absolute/dir or s3://bucket/prefix", uri)
}

// URI is the location, as file:///dir or s3://bucket/prefix.
func (s *Store) URI() string { return s.uri }

// List returns the complete backups, oldest first, and the IDs of the
// directories that are not complete backups (taken while a backup was
// interrupted, or damaged) with why, which are not restored.
func (s *Store) List(ctx context.Context) (complete []*Manifest, incomplete map[string]error, err error) {
	keys, err := s.obj.List("")
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", s.uri, err)
	}
	ids := map[string]bool{}
	for _, k := range keys {
		id, name, ok := strings.Cut(k, "/")
		if !ok || strings.Contains(name, "/") {
			continue
		}
		ids[id] = ids[id] || name == ManifestFile
	}
	incomplete = map[string]error{}
	for id, hasManifest := range ids {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if !hasManifest {
			incomplete[id] = fmt.Errorf("backup %s has no manifest: it was interrupted before it completed", id)
			continue
		}
		m, err := s.manifest(id)
		if err != nil {
			incomplete[id] = err
			continue
		}
		complete = append(complete, m)
	}
	sortManifests(complete)
	return complete, incomplete, nil
}

// Manifest returns the manifest of backup id, or of the newest complete
// backup when id is empty.
func (s *Store) Manifest(ctx context.Context, id string) (*Manifest, error) {
	if id != "" {
		return s.manifest(id)
	}
	all, _, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s holds no complete backup: %w", s.uri, ErrNotFound)
	}
	return all[len(all)-1], nil
}

func (s *Store) manifest(id string) (*Manifest, error) {
	if !validID(id) {
		return nil, fmt.Errorf("backup %q: not a backup ID (like 20260102T150405.000Z): %w", id, ErrNotFound)
	}
	r, err := s.obj.Open(path.Join(id, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("backup %s in %s has no manifest, so it is not complete: %w", id, s.uri, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", id, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("backup %s: read its manifest: %w", id, err)
	}
	return parseManifest(id, data)
}

// Fetch copies the files of the backup m into dir, checking each one's
// size and SHA-256 against the manifest, and returns their local paths by
// name. A file that does not match is an error; what was copied stays in
// dir for the caller to remove.
func (s *Store) Fetch(ctx context.Context, m *Manifest, dir string) (map[string]string, error) {
	paths := map[string]string{}
	for _, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		local := filepath.Join(dir, f.Name)
		if err := s.fetchFile(m.ID, f, local); err != nil {
			return nil, err
		}
		paths[f.Name] = local
	}
	return paths, nil
}

func (s *Store) fetchFile(id string, f File, local string) error {
	r, err := s.obj.Open(path.Join(id, f.Name))
	if err != nil {
		return fmt.Errorf("backup %s: %w", id, err)
	}
	defer r.Close()
	out, err := os.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("backup %s: %w", id, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), r)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup %s: copy %s: %w", id, f.Name, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != f.Size || sum != f.SHA256 {
		return fmt.Errorf("backup %s: %s is damaged: %d bytes with SHA-256 %s, the manifest says %d bytes with %s", id, f.Name, n, sum, f.Size, f.SHA256)
	}
	return nil
}

// put stores the local file at local as the backup's file name and
// returns its manifest entry.
func (s *Store) put(ctx context.Context, id, name, local string) (File, error) {
	in, err := os.Open(local)
	if err != nil {
		return File{}, err
	}
	defer in.Close()
	h := sha256.New()
	n, err := s.obj.Put(ctx, path.Join(id, name), io.TeeReader(in, h))
	if err != nil {
		return File{}, fmt.Errorf("store %s: %w", name, err)
	}
	return File{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Remove deletes backup id, its manifest first, so that a removal cut
// short leaves an incomplete backup, never one that looks complete and
// is not.
func (s *Store) Remove(ctx context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("backup %q: not a backup ID", id)
	}
	if err := s.obj.Remove(path.Join(id, ManifestFile)); err != nil {
		return fmt.Errorf("remove backup %s: %w", id, err)
	}
	keys, err := s.obj.List(id)
	if err != nil {
		return fmt.Errorf("remove backup %s: %w", id, err)
	}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.obj.Remove(k); err != nil {
			return fmt.Errorf("remove backup %s: %w", id, err)
		}
	}
	return nil
}

// validID reports whether id can name a backup: it must not reach out of
// the location.
func validID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, `/\`)
}
