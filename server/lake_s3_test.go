package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

// TestLake_ServeS3 serves lakes on a real S3 server (SeaweedFS): with
// iceberg-go's SQL catalog, and with SeaweedFS's Iceberg REST catalog. The
// data files are copied once into the local cache: a second scan copies
// nothing, and a pruned scan copies only its partition's files.
func TestLake_ServeS3(t *testing.T) {
	testsvc.ClearAWSEnv(t)
	sw := testsvc.StartSeaweed(t, testsvc.SeaweedConfig{Buckets: []string{"quiver-lake"}, TableBuckets: []string{"quiver-tables"}})
	s3 := lake.S3Config{Endpoint: sw.S3URL, Region: sw.Region, PathStyle: true, AccessKeyID: sw.AccessKey, SecretAccessKey: sw.SecretKey}
	cases := []struct {
		name string
		cfg  func(t *testing.T) lake.Config
	}{
		{"sql catalog", func(t *testing.T) lake.Config {
			return lake.Config{Warehouse: "s3://quiver-lake/lake", CatalogURI: "sqlite:///" + t.TempDir() + "/catalog.db", S3: s3}
		}},
		{"rest catalog", func(t *testing.T) lake.Config {
			return lake.Config{Warehouse: "s3://quiver-tables", CatalogURI: sw.CatalogURL, RESTCredential: sw.AccessKey + ":" + sw.SecretKey, S3: s3}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(t)
			lakeTableIn(t, cfg, 20_000, 5_000, 1_000)
			cache := t.TempDir()
			srv := testutil.StartServer(t, server.Config{
				DB: filepath.Join(t.TempDir(), "q.duckdb"), HTTPAddr: "127.0.0.1:0",
				Lake: &server.LakeConfig{Iceberg: cfg, CacheDir: cache},
			})
			c := testutil.Dial(t, srv, client.Config{})
			down := func() float64 { return metric(t, srv, "quiver_lake_cache_download_bytes_total") }

			d0 := down()
			if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events WHERE day = DATE '2026-01-04'"); got != 1_000 {
				t.Errorf("one day: got %d", got)
			}
			pruned := down() - d0
			if got := queryInt(t, c, "SELECT count(DISTINCT id) FROM lake.quiver.events"); got != 20_000 {
				t.Errorf("distinct ids: got %d", got)
			}
			full := down() - d0
			if got := queryInt(t, c, "SELECT count(*) FROM lake.quiver.events"); got != 20_000 {
				t.Errorf("count again: got %d", got)
			}
			again := down() - d0 - full
			t.Logf("copied %.0f bytes for one day, %.0f for the table, %.0f for a second scan", pruned, full, again)
			if pruned <= 0 || pruned*10 > full {
				t.Errorf("a one-day scan copied %.0f of %.0f bytes", pruned, full)
			}
			if again != 0 {
				t.Errorf("a second scan copied %.0f bytes", again)
			}
			entries, err := os.ReadDir(filepath.Join(cache, "files"))
			if err != nil || len(entries) == 0 {
				t.Errorf("cache directory: %v, %d entries", err, len(entries))
			}
		})
	}
}
