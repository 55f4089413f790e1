package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// files is the page: our own files, and vendor/, the pinned libraries
// (apache-arrow's and uPlot's builds) that make console-assets installs
// from console/web's lockfile.
//
//go:embed assets
var files embed.FS

// vendorFiles are the libraries the page loads.
var vendorFiles = []string{"vendor/Arrow.es2015.min.js", "vendor/uPlot.iife.min.js", "vendor/uPlot.min.css"}

// asset is one file, kept as is and gzip-compressed.
type asset struct {
	body, gz []byte
	mime     string
	etag     string
}

type assets struct {
	byPath  map[string]*asset
	missing []string // vendor files not built in
}

// contentPolicy lets the page load nothing but its own origin's files.
const contentPolicy = "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; " +
	"connect-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'"

func loadAssets() (*assets, error) {
	sub, err := fs.Sub(files, "assets")
	if err != nil {
		return nil, fmt.Errorf("console assets: %w", err)
	}
	a := &assets{byPath: map[string]*asset{}}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		body, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		sum := sha256.Sum256(body)
		typ := mime.TypeByExtension(path.Ext(p))
		if typ == "" {
			typ = "application/octet-stream"
		}
		a.byPath["/"+p] = &asset{body: body, gz: gz.Bytes(), mime: typ, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console assets: %w", err)
	}
	for _, v := range vendorFiles {
		if a.byPath["/"+v] == nil {
			a.missing = append(a.missing, v)
		}
	}
	return a, nil
}

// serve answers the page's files: gzip-compressed when the browser takes
// it, revalidated by ETag.
func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the console's files take GET", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "/" {
		p = "/index.html"
	}
	f := a.byPath[p]
	if f == nil {
		msg := fmt.Sprintf("no console file %s", r.URL.Path)
		if strings.HasPrefix(p, "/vendor/") && len(a.missing) > 0 {
			msg += ": this binary was built without the console's libraries; build it with make build (make console-assets)"
		}
		http.Error(w, msg, http.StatusNotFound)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.mime)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	hd.Set("Vary", "Accept-Encoding")
	if p == "/index.html" {
		hd.Set("Content-Security-Policy", contentPolicy)
	}
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		hd.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	w.Write(body)
}
