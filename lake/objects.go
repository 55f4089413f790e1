package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
)

// Objects is a prefix of an object store (s3://bucket/prefix) that files
// are uploaded under, through iceberg-go's file IO with the settings a
// lake on that store uses: the server's export root when it is remote.
type Objects struct {
	uri string // s3://bucket/prefix, without a trailing slash
	fs  iceio.WriteFileIO
}

// OpenObjects opens uri, which must be s3://bucket[/prefix], and checks
// that its bucket can be reached with s3's settings.
func OpenObjects(ctx context.Context, uri string, s3 S3Config) (*Objects, error) {
	wh, err := parseWarehouse(uri)
	if err != nil {
		return nil, err
	}
	if wh.scheme == "file" {
		return nil, fmt.Errorf("iceberg: %s is a local directory, not an object store", uri)
	}
	props := s3Properties(s3)
	if err := checkWarehouse(ctx, wh, props); err != nil {
		return nil, err
	}
	fsys, err := iceio.LoadFS(ctx, props, wh.uri)
	if err != nil {
		return nil, fmt.Errorf("iceberg: open %s: %w", wh.uri, err)
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("iceberg: %s cannot be written", wh.uri)
	}
	return &Objects{uri: wh.uri, fs: wfs}, nil
}

// URI is the prefix, as s3://bucket/prefix.
func (o *Objects) URI() string { return o.uri }

// Upload copies the local file at path to the object key under the
// prefix (a slash-separated relative path), replacing what is there, and
// returns its size. A failed or canceled upload leaves no object behind:
// the object store publishes it only when it is complete.
func (o *Objects) Upload(ctx context.Context, path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("iceberg: upload: %w", err)
	}
	defer f.Close()
	return o.Put(ctx, key, f)
}

// Put is Upload from a reader: it stores what r holds, to its end, as the
// object key, published only when complete.
func (o *Objects) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	dst, err := o.location(key)
	if err != nil {
		return 0, fmt.Errorf("iceberg: upload: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := createUpload(ctx, o.fs, dst)
	if err != nil {
		return 0, fmt.Errorf("iceberg: upload to %s: %w", dst, err)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		cancel() // abandons the multipart upload
		return 0, errors.Join(fmt.Errorf("iceberg: upload to %s: %w", dst, err), w.Close())
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("iceberg: upload to %s: %w", dst, err)
	}
	return n, nil
}

// Open opens the object key under the prefix for reading. An object
// that is not there gives an error satisfying errors.Is(err,
// fs.ErrNotExist).
func (o *Objects) Open(key string) (io.ReadCloser, error) {
	src, err := o.location(key)
	if err != nil {
		return nil, fmt.Errorf("iceberg: open: %w", err)
	}
	f, err := o.fs.Open(src)
	if err != nil {
		return nil, fmt.Errorf("iceberg: open %s: %w", src, err)
	}
	return f, nil
}

// List returns the keys of the objects under the prefix whose keys
// start with dir + "/", relative to the prefix, in no set order.
func (o *Objects) List(dir string) ([]string, error) {
	lister, ok := o.fs.(iceio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("iceberg: %s cannot be listed", o.uri)
	}
	root := o.uri
	if dir != "" {
		root += "/" + strings.Trim(dir, "/")
	}
	var keys []string
	err := lister.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if rel, ok := strings.CutPrefix(p, o.uri+"/"); ok {
			keys = append(keys, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("iceberg: list %s: %w", root, err)
	}
	return keys, nil
}

// Remove deletes the object key under the prefix.
func (o *Objects) Remove(key string) error {
	dst, err := o.location(key)
	if err != nil {
		return fmt.Errorf("iceberg: remove: %w", err)
	}
	if err := o.fs.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("iceberg: remove %s: %w", dst, err)
	}
	return nil
}

// location is the full URI of key, which must be a relative path.
func (o *Objects) location(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") {
		return "", fmt.Errorf("the key %q under %s is not a relative path", key, o.uri)
	}
	return o.uri + "/" + key, nil
}
