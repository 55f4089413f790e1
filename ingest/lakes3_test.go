package ingest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
)

// faultProxy forwards to an S3 server and, while failing is set, answers
// every request with 500 or drops the connection, alternately.
type faultProxy struct {
	srv     *httptest.Server
	failing atomic.Bool
	faults  atomic.Int64
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	fp := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	fp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fp.failing.Load() {
			if fp.faults.Add(1)%2 == 0 {
				if hj, ok := w.(http.Hijacker); ok {
					if c, _, err := hj.Hijack(); err == nil {
						c.Close() // a dropped connection
						return
					}
				}
			}
			http.Error(w, "injected fault", http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(fp.srv.Close)
	return fp
}

// TestPipeline_LakeS3Faults ingests into a lake on a real S3 server
// (SeaweedFS) through a proxy that fails every request for a while: the
// pipeline retries, pauses consumption once files pile up, resumes by
// itself, and the lake ends with every message exactly once.
func TestPipeline_LakeS3Faults(t *testing.T) {
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"lake"}})
	proxy := newFaultProxy(t, sw.S3URL)
	const n, parts = 24000, 3
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	lk, err := lake.Open(context.Background(), lake.Config{
		Warehouse:  "s3://lake/warehouse",
		CatalogURI: "sqlite:///" + filepath.ToSlash(filepath.Join(dir, "catalog.db")),
		S3: lake.S3Config{Endpoint: proxy.srv.URL, Region: sw.Region, PathStyle: true,
			AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Close() })
	cfg := lakeConfig(t, testConfig(t, md, dir), lk, "s3")
	cfg.LakeMaxBacklog = 2
	cfg.IdleExit = 5 * time.Second
	base := time.Date(2025, 2, 24, 20, 0, 0, 0, time.UTC)
	values := flatValues(t, md, 0, n)
	produce(t, addrs, parts, values[:n/4], base)

	p, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, newSource(t, addrs, "s3"))
		done <- err
	}()
	time.Sleep(2 * time.Second)
	proxy.failing.Store(true) // the object store goes away
	for w := 1; w < 4; w++ {
		produce(t, addrs, parts, values[w*n/4:(w+1)*n/4], base.Add(time.Duration(w*n/4)*time.Second))
		time.Sleep(1500 * time.Millisecond)
	}
	time.Sleep(6 * time.Second)
	proxy.failing.Store(false) // and comes back
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if proxy.faults.Load() == 0 {
		t.Fatal("no request reached the failing proxy: the test proved nothing")
	}
	if got := metricValue(t, "quiver_ingest_pauses_total"); got < 1 {
		t.Errorf("quiver_ingest_pauses_total = %v: consumption never paused (and resumed) while the store was down", got)
	}
	t.Logf("%d requests failed while the store was down", proxy.faults.Load())
	checkExactlyOnce(t, lk, "s3", n, parts, nil)
}

// metricValue reads a counter or gauge without labels from the default
// Prometheus registry.
func metricValue(t *testing.T, name string) float64 {
	t.Helper()
	v, ok := testutil.Metric(t, name, nil)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return v
}
