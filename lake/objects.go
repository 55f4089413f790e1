package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	if key == "" || strings.HasPrefix(key, "/") {
		return 0, fmt.Errorf("iceberg: upload to %s: the key %q is not a relative path", o.uri, key)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("iceberg: upload: %w", err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dst := o.uri + "/" + key
	w, err := createUpload(ctx, o.fs, dst)
	if err != nil {
		return 0, fmt.Errorf("iceberg: upload to %s: %w", dst, err)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		cancel() // abandons the multipart upload
		return 0, errors.Join(fmt.Errorf("iceberg: upload to %s: %w", dst, err), w.Close())
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("iceberg: upload to %s: %w", dst, err)
	}
	return n, nil
}
