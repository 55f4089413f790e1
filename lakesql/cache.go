package lakesql

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"
)

var (
	cacheDownloads = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_cache_downloads_total",
		Help: "Lake data files copied from object storage into the local cache.",
	})
	cacheDownloadBytes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_cache_download_bytes_total",
		Help: "Bytes copied from object storage into the local cache.",
	})
	cacheHits = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_cache_hits_total",
		Help: "Lake data files read from the local cache without a copy.",
	})
	cacheBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "quiver_lake_cache_bytes",
		Help: "Bytes of lake data files held in the local cache.",
	})
)

// fileCache keeps local copies of an object store's data files. Iceberg
// data files are never rewritten in place, so a copy is good for as long
// as the file is read. Copies beyond max bytes are evicted, least
// recently used first, but never one used within hold: the files of a
// running query stay.
type fileCache struct {
	dir  string
	max  int64
	hold time.Duration
	log  *slog.Logger
	sf   singleflight.Group

	mu    sync.Mutex
	files map[string]*cached // by local path
	total int64
}

type cached struct {
	size int64
	used time.Time
}

func newFileCache(dir string, max int64, hold time.Duration, log *slog.Logger) *fileCache {
	c := &fileCache{dir: dir, max: max, hold: hold, log: log, files: map[string]*cached{}}
	// Copies left by an earlier run are good: the names are the
	// locations' hashes.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && filepath.Ext(e.Name()) == ".parquet" {
			c.files[filepath.Join(dir, e.Name())] = &cached{size: info.Size(), used: info.ModTime()}
			c.total += info.Size()
		}
	}
	cacheBytes.Set(float64(c.total))
	return c
}

// get returns local copies of files, copying the missing ones with up to
// eight at a time.
func (c *fileCache) get(ctx context.Context, fs iceio.IO, files []planned) ([]string, error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("lake cache: %w", err)
	}
	out := make([]string, len(files))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, f := range files {
		sum := sha256.Sum256([]byte(f.path))
		local := filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".parquet")
		out[i] = local
		g.Go(func() error {
			_, err, _ := c.sf.Do(local, func() (any, error) { return nil, c.fetch(gctx, fs, f, local) })
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	c.evict()
	return out, nil
}

// fetch makes sure local holds a copy of f.
func (c *fileCache) fetch(ctx context.Context, fs iceio.IO, f planned, local string) error {
	now := time.Now()
	c.mu.Lock()
	if e := c.files[local]; e != nil {
		e.used = now
		c.mu.Unlock()
		cacheHits.Inc()
		return nil
	}
	c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	src, err := fs.Open(f.path)
	if err != nil {
		return fmt.Errorf("read lake data file %s: %w", f.path, err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(c.dir, path.Base(local)+".*.tmp")
	if err != nil {
		return fmt.Errorf("lake cache: %w", err)
	}
	n, err := io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && f.size > 0 && n != f.size {
		err = fmt.Errorf("got %d bytes, the table says %d", n, f.size)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), local)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("copy lake data file %s: %w", f.path, err)
	}
	cacheDownloads.Inc()
	cacheDownloadBytes.Add(float64(n))
	c.mu.Lock()
	c.files[local] = &cached{size: n, used: now}
	c.total += n
	cacheBytes.Set(float64(c.total))
	c.mu.Unlock()
	return nil
}

// evict removes the least recently used copies past the cap.
func (c *fileCache) evict() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total <= c.max {
		return
	}
	type entry struct {
		path string
		*cached
	}
	var old []entry
	cutoff := time.Now().Add(-c.hold)
	for p, e := range c.files {
		if e.used.Before(cutoff) {
			old = append(old, entry{p, e})
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].used.Before(old[j].used) })
	for _, e := range old {
		if c.total <= c.max {
			break
		}
		if err := os.Remove(e.path); err != nil && !os.IsNotExist(err) {
			c.log.Warn("lake cache: evict", "file", e.path, "err", err)
			continue
		}
		delete(c.files, e.path)
		c.total -= e.size
	}
	cacheBytes.Set(float64(c.total))
	if c.total > c.max {
		c.log.Warn("lake cache over its cap: every copy is in recent use", "bytes", c.total, "cap", c.max)
	}
}
