package lake

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/quiverdata/quiver/engine"
)

// cpuNow is the process's CPU time, DuckDB's threads included.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestExportCost compares, alternated in one process, the CPU and time of
// exporting 1M rows of the ingest benchmark's flat schema from DuckDB to a
// day-partitioned table (the rows span two days): read out as Arrow and written by iceberg-go
// (Table.Write), against written by DuckDB's COPY and added
// (Table.UploadParquet). QUIVER_EXPORT_COST=N runs N rounds.
func TestExportCost(t *testing.T) {
	rounds := 0
	fmt.Sscan(os.Getenv("QUIVER_EXPORT_COST"), &rounds)
	if rounds <= 0 {
		t.Skip("set QUIVER_EXPORT_COST=rounds to measure")
	}
	rowsN := 1_000_000
	ctx := context.Background()
	conn := duckConn(t, fmt.Sprintf(`CREATE TABLE src AS SELECT
		i::BIGINT AS id, (1740000000000 + i)::BIGINT AS ts_ms, (hash(i) %% 1000000000)::BIGINT AS user_id,
		['US','CA','FR','DE','JP','BR'][(1 + hash(i %% 4096 + 1) %% 6)::BIGINT] AS country,
		['phone','tablet','screen','billboard'][(1 + hash(i %% 4096 + 2) %% 4)::BIGINT] AS device,
		(320 + hash(i %% 4096 + 3) %% 1600)::INTEGER AS width, (240 + hash(i %% 4096 + 4) %% 900)::INTEGER AS height,
		(hash(i %% 4096 + 5) %% 5000) / 1000.0 AS floor_price, hash(i %% 4096 + 6) %% 50 = 0 AS test,
		(hash(i %% 4096 + 7) %% 10000)::BIGINT AS publisher_id, 'site-' || (hash(i %% 4096 + 8) %% 500) || '.example' AS site,
		(100 + hash(i %% 4096 + 9) %% 400)::UINTEGER AS tmax, (hash(i %% 4096 + 10) %% 10000) / 1000.0 AS bid,
		(hash(i %% 4096 + 11) %% 100000)::BIGINT AS campaign_id,
		TIMESTAMPTZ '2026-03-01 23:50:00+00' + (i * INTERVAL 1 MILLISECOND) AS _timestamp,
		(i %% 4)::INTEGER AS _kafka_partition, (i / 4)::BIGINT AS _offset
	FROM range(0, %d) t(i)`, rowsN))
	l := openLake(t, t.TempDir())
	spec := []PartitionField{{Column: "_timestamp", Transform: Day}}
	schema := querySchema(t, conn, "SELECT * FROM src")
	tb, err := l.Table(ctx, "ns", "t", schema, spec)
	if err != nil {
		t.Fatal(err)
	}
	tb1, err := l.Table(ctx, "ns", "level1", schema, spec)
	if err != nil {
		t.Fatal(err)
	}
	{
		tbl, err := tb1.Iceberg(ctx)
		if err != nil {
			t.Fatal(err)
		}
		txn := tbl.NewTransaction()
		if err := txn.SetProperties(iceberg.Properties{table.ParquetCompressionLevelKey: "1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var cols []string
	for _, f := range schema.Fields() {
		c := engine.QuoteIdent(f.Name)
		if f.Name == "tmax" {
			c = "CAST(" + c + " AS INTEGER) AS " + c
		}
		cols = append(cols, c)
	}
	key, _ := DuckDBPartitionKey(spec[0], "_timestamp")
	cols = append(cols, key+" AS __part")

	var next int64
	offsets := func() Offsets {
		r := Range{Start: next, End: next + 1, First: next == 0}
		next++
		return offs("g", "t", map[int32]Range{0: r})
	}
	type sample struct{ cpu, wall time.Duration }
	measure := func(f func()) sample {
		c0, w0 := cpuNow(), time.Now()
		f()
		return sample{cpuNow() - c0, time.Since(w0)}
	}
	res := map[string][]sample{}
	sizes := map[string]int64{}
	for r := 0; r < rounds; r++ {
		// DuckDB's scan and Arrow conversion alone.
		res["scan only"] = append(res["scan only"], measure(func() {
			rows, err := conn.Query(ctx, "SELECT * FROM src")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
		}))
		var files *Files
		res["write: scan+iceberg-go"] = append(res["write: scan+iceberg-go"], measure(func() {
			rows, err := conn.Query(ctx, "SELECT * FROM src")
			if err != nil {
				t.Fatal(err)
			}
			files, err = tb.Write(ctx, rows)
			rows.Close()
			if err != nil {
				t.Fatal(err)
			}
		}))
		res["write level 1"] = append(res["write level 1"], measure(func() {
			rows, err := conn.Query(ctx, "SELECT * FROM src")
			if err != nil {
				t.Fatal(err)
			}
			f, err := tb1.Write(ctx, rows)
			rows.Close()
			if err != nil {
				t.Fatal(err)
			}
			if r == 0 {
				sizes["write level 1"] = dirSize(t, f.Paths())
				sizes["write: scan+iceberg-go"] = dirSize(t, files.Paths())
			}
			_ = f.Discard(ctx)
		}))
		res["write: commit"] = append(res["write: commit"], measure(func() {
			if _, err := tb.CommitFiles(ctx, files, offsets()); err != nil {
				t.Fatal(err)
			}
		}))
		dir := t.TempDir()
		var paths []string
		res["copy: COPY"] = append(res["copy: COPY"], measure(func() {
			ids, err := tb.PrepareParquet(ctx, schema)
			if err != nil {
				t.Fatal(err)
			}
			q := "COPY (SELECT " + strings.Join(cols, ", ") + " FROM src) TO " + engine.QuoteString(dir) +
				" (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, FIELD_IDS " + DuckDBFieldIDs(ids) + ", PARTITION_BY (__part), OVERWRITE_OR_IGNORE)"
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					paths = append(paths, p)
				}
				return err
			})
		}))
		for _, v := range copyVariants {
			vdir := t.TempDir()
			res["variant: "+v.name] = append(res["variant: "+v.name], measure(func() {
				ids, err := tb.PrepareParquet(ctx, schema)
				if err != nil {
					t.Fatal(err)
				}
				target, sel := vdir, strings.Join(cols, ", ")
				if !v.part {
					target, sel = filepath.Join(vdir, "x.parquet"), strings.Join(cols[:len(cols)-1], ", ")
				}
				q := "COPY (SELECT " + sel + " FROM src) TO " + engine.QuoteString(target) +
					" (FORMAT parquet, FIELD_IDS " + DuckDBFieldIDs(ids) + v.opts + ")"
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}))
			sizes["variant: "+v.name] = treeSize(t, vdir)
		}
		res["copy: upload"] = append(res["copy: upload"], measure(func() {
			files, err = tb.UploadParquet(ctx, uuid.New(), paths)
			if err != nil {
				t.Fatal(err)
			}
		}))
		res["copy: commit"] = append(res["copy: commit"], measure(func() {
			if _, err := tb.CommitFiles(ctx, files, offsets()); err != nil {
				t.Fatal(err)
			}
		}))
	}
	med := func(s []sample, f func(sample) time.Duration) time.Duration {
		v := make([]time.Duration, len(s))
		for i := range s {
			v[i] = f(s[i])
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	keys := []string{"scan only", "write: scan+iceberg-go", "write level 1", "write: commit", "copy: COPY", "copy: upload", "copy: commit"}
	for _, v := range copyVariants {
		keys = append(keys, "variant: "+v.name)
	}
	for _, k := range keys {
		t.Logf("%-28s cpu %6.0f ms  wall %6.0f ms  %5.1f MB (median of %d, per %d rows)", k,
			float64(med(res[k], func(s sample) time.Duration { return s.cpu }))/1e6,
			float64(med(res[k], func(s sample) time.Duration { return s.wall }))/1e6, float64(sizes[k])/1e6, len(res[k]), rowsN)
	}
}

// copyVariants are other COPY settings measured beside the one the
// ingest uses (zstd level 1, one file per partition).
var copyVariants = []struct {
	name string
	part bool
	opts string
}{
	{"single level 3", false, ", COMPRESSION zstd"},
	{"single level 1", false, ", COMPRESSION zstd, COMPRESSION_LEVEL 1"},
	{"single l1 no bloom", false, ", COMPRESSION zstd, COMPRESSION_LEVEL 1, WRITE_BLOOM_FILTER false"},
	{"single l1 v2", false, ", COMPRESSION zstd, COMPRESSION_LEVEL 1, PARQUET_VERSION V2"},
	{"single uncompressed", false, ", COMPRESSION uncompressed"},
	{"part level 1", true, ", COMPRESSION zstd, COMPRESSION_LEVEL 1, PARTITION_BY (__part), OVERWRITE_OR_IGNORE"},
}

func dirSize(t *testing.T, paths []string) int64 {
	var n int64
	for _, p := range paths {
		fi, err := os.Stat(strings.TrimPrefix(p, "file://"))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func treeSize(t *testing.T, dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			fi, _ := d.Info()
			n += fi.Size()
		}
		return err
	})
	return n
}
