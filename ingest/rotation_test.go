package ingest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quiverdata/quiver/ingest/segment"
)

// union is SQL reading a table's rows from the live file (db0) and from
// its Parquet export.
func union(exportDir, table string) string {
	glob := filepath.Join(exportDir, table, "**", "*.parquet")
	return fmt.Sprintf("(SELECT * FROM db0.%s UNION ALL BY NAME SELECT * EXCLUDE (dt) FROM read_parquet('%s', hive_partitioning = true))", table, glob)
}

func TestPipeline_RotationExport(t *testing.T) {
	const n, parts = 20000, 3
	addrs := startCluster(t, parts)
	md := compile(t, "Deep")
	// Timestamps cross midnight, so the export has two dt partitions.
	base := time.Date(2025, 2, 24, 20, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	cfg := testConfig(t, md, dir)
	cfg.Normalize = "id, items[].sku AS sku"
	cfg.ExportDir = filepath.Join(dir, "lake")
	cfg.Rotate = segment.Policy{MaxBytes: 1 << 20, MaxAge: 300 * time.Millisecond}
	cfg.BatchRows = 2000
	cfg.IdleExit = 2 * time.Second
	values := deepValues(t, md, n)
	for i := 3; i < n; i += 1000 {
		values[i] = []byte{0xff} // dead letters travel to Parquet too
	}
	// Produce in two waves so that rotation happens while rows arrive.
	produce(t, addrs, parts, values[:n/2], base)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(700 * time.Millisecond)
		produce(t, addrs, parts, values[n/2:], base.Add(n/2*time.Second))
	}()
	rep := runUntilIdle(t, cfg, newSource(t, addrs, "rotate"))
	<-done
	if rep.DuckDBFiles == 0 {
		t.Fatalf("report: no file rotated")
	}
	t.Logf("rotated %d files, %d MB, avg %s", rep.DuckDBFiles, rep.DuckDBFilesMB, rep.FileAvgDuration)

	if segs, _ := segment.Sealed(cfg.DBPath); len(segs) != 0 {
		t.Errorf("sealed segments left after a clean stop: %v", segs)
	}
	if _, err := os.Stat(filepath.Join(cfg.ExportDir, "_staging")); err == nil {
		if ents, _ := os.ReadDir(filepath.Join(cfg.ExportDir, "_staging")); len(ents) > 0 {
			t.Errorf("staging not empty: %v", ents)
		}
	}
	for _, day := range []string{"dt=2025-02-24", "dt=2025-02-25"} {
		if _, err := os.Stat(filepath.Join(cfg.ExportDir, "events", day)); err != nil {
			t.Errorf("partition %s missing: %v", day, err)
		}
	}
	bad := 0
	for i := 3; i < n; i += 1000 {
		bad++
	}
	items, _ := deepCounts(n)
	for i := 3; i < n; i += 1000 {
		items -= i % 4
	}
	all, norm, dead := union(cfg.ExportDir, "events"), union(cfg.ExportDir, "events_norm"), union(cfg.ExportDir, "events_dead_letters")
	check(t, []string{cfg.DBPath}, []struct{ sql, want string }{
		{"SELECT count(*) FROM " + all, fmt.Sprint(n - bad)},
		{"SELECT count(DISTINCT (_partition, _offset)) FROM " + all, fmt.Sprint(n - bad)},
		{"SELECT sum(id) FROM " + all, fmt.Sprint(n*(n-1)/2 - sumBad(n))},
		{"SELECT count(*) FROM " + all + " WHERE len(items) <> id % 4", "0"},
		{"SELECT count(*) FROM " + all + " WHERE id > 0 AND id % 4 = 3 AND items[3].sku <> 's' || id || '-2'", "0"},
		{"SELECT count(*) FROM " + norm, fmt.Sprint(items)},
		{"SELECT count(*) FROM " + dead, fmt.Sprint(bad)},
		{"SELECT count(*) FROM " + all + " WHERE strftime(_timestamp, '%Y-%m-%d') NOT IN ('2025-02-24', '2025-02-25')", "0"},
	})
	// Parquet alone holds most rows, and its files use zstd.
	pq := filepath.Join(cfg.ExportDir, "events", "**", "*.parquet")
	check(t, []string{cfg.DBPath}, []struct{ sql, want string }{
		{"SELECT count(*) > 0 FROM read_parquet('" + pq + "')", "true"},
		{"SELECT DISTINCT compression FROM parquet_metadata('" + pq + "')", "ZSTD"},
	})
}

func sumBad(n int) int {
	s := 0
	for i := 3; i < n; i += 1000 {
		s += i
	}
	return s
}

func TestPipeline_Restart(t *testing.T) {
	const n1, n2, parts = 3000, 2000, 2
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	dir := t.TempDir()
	produce(t, addrs, parts, flatValues(t, md, 0, n1), time.Now())
	cfg := testConfig(t, md, dir)
	if rep := runUntilIdle(t, cfg, newSource(t, addrs, "restart")); rep.Records != n1 {
		t.Fatalf("first run: got %d records, want %d", rep.Records, n1)
	}
	produce(t, addrs, parts, flatValues(t, md, n1, n1+n2), time.Now())
	// A new group: Kafka has no committed offsets for it, so only DuckDB's
	// stored offsets keep the second run from reading everything again.
	if rep := runUntilIdle(t, cfg, newSource(t, addrs, "restart-other-group")); rep.Records != n2 {
		t.Errorf("second run: got %d records, want %d", rep.Records, n2)
	}
	check(t, []string{cfg.DBPath}, []struct{ sql, want string }{
		{"SELECT count(*) FROM db0.events", fmt.Sprint(n1 + n2)},
		{"SELECT count(DISTINCT id) FROM db0.events", fmt.Sprint(n1 + n2)},
	})
}

func TestPipeline_TwoClients(t *testing.T) {
	const n, parts = 8000, 4
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	produce(t, addrs, parts, flatValues(t, md, 0, n), time.Now())
	cfg := testConfig(t, md, t.TempDir())
	runUntilIdle(t, cfg, newSource(t, addrs, "two", kafkaClients(2)))
	check(t, []string{cfg.DBPath}, []struct{ sql, want string }{
		{"SELECT count(*) FROM db0.events", fmt.Sprint(n)},
		{"SELECT count(DISTINCT (_partition, _offset)) FROM db0.events", fmt.Sprint(n)},
	})
}
