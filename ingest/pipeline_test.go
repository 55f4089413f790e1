package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/ingest"
)

func TestPipeline_Flat(t *testing.T) {
	const n, parts = 5000, 3
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	base := time.Date(2025, 2, 24, 21, 0, 0, 0, time.UTC)
	produce(t, addrs, parts, flatValues(t, md, 0, n), base)

	cfg := testConfig(t, md, t.TempDir())
	rep := runUntilIdle(t, cfg, newSource(t, addrs, "flat"))
	if rep.Records != n {
		t.Errorf("report records: got %d, want %d", rep.Records, n)
	}
	db := []string{cfg.DBPath}
	checks := []struct{ sql, want string }{
		{"SELECT count(*) FROM db0.events", fmt.Sprint(n)},
		{"SELECT count(DISTINCT (_partition, _offset)) FROM db0.events", fmt.Sprint(n)},
		{"SELECT sum(id) FROM db0.events", fmt.Sprint(n * (n - 1) / 2)},
		{"SELECT count(*) FROM db0.events WHERE name <> 'name-' || id OR price <> id * 0.5 OR ok <> (id % 2 = 0) OR qty <> id % 1000", "0"},
		{"SELECT count(*) FROM db0.events WHERE epoch(\"at\") <> 1700000000 + id", "0"},
		{"SELECT color FROM db0.events WHERE id = 5", "BLUE"},
		{"SELECT count(*) FROM db0.events WHERE (octet_length(blob) = 0) <> (id % 5 <> 0)", "0"},
		{"SELECT count(*) FROM db0.events WHERE _partition <> id % 3", "0"},
		{"SELECT count(*) FROM db0.events WHERE epoch(_timestamp) <> epoch(TIMESTAMPTZ '2025-02-24 21:00:00+00') + id", "0"},
		{`SELECT string_agg("partition" || ':' || next_offset, ',' ORDER BY "partition") FROM (SELECT "partition", max(next_offset) AS next_offset FROM db0._quiver_offsets GROUP BY ALL)`,
			fmt.Sprintf("0:%d,1:%d,2:%d", (n+2)/3, (n+1)/3, n/3)},
		{"SELECT count(*) FROM db0.events_dead_letters", "0"},
	}
	for _, c := range checks {
		if got := one(t, db, c.sql); got != c.want {
			t.Errorf("%s: got %s, want %s", c.sql, got, c.want)
		}
	}
}

// check runs each query against the attached files and compares its one
// value.
func check(t *testing.T, files []string, checks []struct{ sql, want string }) {
	t.Helper()
	for _, c := range checks {
		if got := one(t, files, c.sql); got != c.want {
			t.Errorf("%s: got %s, want %s", c.sql, got, c.want)
		}
	}
}

func TestPipeline_Nested(t *testing.T) {
	const n, parts = 3000, 2
	addrs := startCluster(t, parts)
	md := compile(t, "Deep")
	produce(t, addrs, parts, deepValues(t, md, n), time.Now())
	cfg := testConfig(t, md, t.TempDir())
	runUntilIdle(t, cfg, newSource(t, addrs, "deep"))

	items, deals := deepCounts(n)
	check(t, []string{cfg.DBPath}, []struct{ sql, want string }{
		{"SELECT typeof(items) FROM db0.events LIMIT 1", `STRUCT(sku VARCHAR, deals STRUCT(price DOUBLE, tags VARCHAR[])[])[]`},
		{"SELECT count(*) FROM db0.events", fmt.Sprint(n)},
		{"SELECT sum(len(items)) FROM db0.events", fmt.Sprint(items)},
		{"SELECT sum(len(it.deals)) FROM (SELECT unnest(items) AS it FROM db0.events)", fmt.Sprint(deals)},
		{"SELECT items[2].deals[1].tags[1] FROM db0.events WHERE id = 7", "t7-1-0-0"},
		{"SELECT items[1].deals[2].tags[2] FROM db0.events WHERE id = 5", "t5-0-1-1"},
		{"SELECT items[3].deals[1].price FROM db0.events WHERE id = 11", "11.5"},
		{"SELECT count(*) FROM db0.events WHERE len(items) <> id % 4", "0"},
	})
}

func TestPipeline_Map(t *testing.T) {
	const n, parts = 2000, 2
	addrs := startCluster(t, parts)
	md := compile(t, "Mapped")
	produce(t, addrs, parts, mappedValues(t, md, n), time.Now())
	cfg := testConfig(t, md, t.TempDir())
	runUntilIdle(t, cfg, newSource(t, addrs, "mapped"))

	check(t, []string{cfg.DBPath}, []struct{ sql, want string }{
		{"SELECT typeof(counters) FROM db0.events LIMIT 1", "MAP(VARCHAR, BIGINT)"},
		{"SELECT count(*) FROM db0.events", fmt.Sprint(n)},
		{"SELECT counters['b'] FROM db0.events WHERE id = 4", "8"},
		{"SELECT count(*) FROM db0.events WHERE cardinality(counters) <> 2 - id % 2", "0"},
		{"SELECT by_sku['k3'].sku FROM db0.events WHERE id = 3", "s3-2"},
		{"SELECT by_sku['k5'].deals[1].tags[1] FROM db0.events WHERE id = 5", "t5-2-0-0"},
	})
}

func TestPipeline_Normalizer(t *testing.T) {
	const n, parts = 3000, 3
	addrs := startCluster(t, parts)
	md := compile(t, "Deep")
	produce(t, addrs, parts, deepValues(t, md, n), time.Now())
	cfg := testConfig(t, md, t.TempDir())
	cfg.Normalize = "id, items[].sku AS sku, items[].deals[].price AS price"
	rep := runUntilIdle(t, cfg, newSource(t, addrs, "norm"))

	_, deals := deepCounts(n)
	if rep.NormRecords != int64(deals) || rep.NormalizerFields != 3 {
		t.Errorf("report: got %d norm records and %d fields, want %d and 3", rep.NormRecords, rep.NormalizerFields, deals)
	}
	check(t, []string{cfg.DBPath}, []struct{ sql, want string }{
		{"SELECT count(*) FROM db0.events", fmt.Sprint(n)},
		{"SELECT count(*) FROM db0.events_norm", fmt.Sprint(deals)},
		{"SELECT string_agg(column_name, ',' ORDER BY column_index) FROM duckdb_columns() WHERE database_name = 'db0' AND table_name = 'events_norm'",
			"id,sku,price,_partition,_offset,_timestamp"},
		{"SELECT count(*) FROM db0.events_norm WHERE sku NOT LIKE 's' || id || '-%' OR floor(price) <> id", "0"},
		{"SELECT count(*) FROM db0.events_norm n JOIN db0.events e USING (_partition, _offset) WHERE n.id <> e.id", "0"},
		{"SELECT count(*) FROM db0.events_norm WHERE id = 10", "3"}, // items 0,1 with deals (10+0)%3=1, (10+1)%3=2
	})
}

func TestPipeline_DeadLetters(t *testing.T) {
	const n, parts = 4000, 2
	addrs := startCluster(t, parts)
	md := compile(t, "Flat")
	values := flatValues(t, md, 0, n)
	for i := 0; i < n; i += 10 {
		values[i] = []byte{0x08, 0xff, 0xff} // field 1 varint, truncated
	}
	values[1] = []byte{0x12, 0x02, 0xc3, 0x28} // field 2 (string) with invalid UTF-8
	produce(t, addrs, parts, values, time.Now())
	cfg := testConfig(t, md, t.TempDir())
	rep := runUntilIdle(t, cfg, newSource(t, addrs, "dead"))

	bad := n/10 + 1
	if rep.DeadLetters != int64(bad) || rep.Records != int64(n-bad) {
		t.Errorf("report: got %d records and %d dead letters, want %d and %d", rep.Records, rep.DeadLetters, n-bad, bad)
	}
	check(t, []string{cfg.DBPath}, []struct{ sql, want string }{
		{"SELECT count(*) FROM db0.events", fmt.Sprint(n - bad)},
		{"SELECT count(*) FROM db0.events_dead_letters", fmt.Sprint(bad)},
		{"SELECT count(*) FROM db0.events_dead_letters WHERE topic <> 'events' OR raw <> '\\x08\\xFF\\xFF'::BLOB", "1"},
		{`SELECT count(*) FROM db0.events_dead_letters d JOIN db0.events e ON d."partition" = e._partition AND d."offset" = e._offset`, "0"},
		{`SELECT error FROM db0.events_dead_letters WHERE "partition" = 1 AND "offset" = 0`, "decode field name at byte 0: invalid UTF-8 in string field"},
		{"SELECT count(*) FROM db0.events_dead_letters WHERE error NOT LIKE 'decode%'", "0"},
		{"SELECT count(DISTINCT (_partition, _offset)) + (SELECT count(*) FROM db0.events_dead_letters) FROM db0.events", fmt.Sprint(n)},
		{`SELECT sum(m) FROM (SELECT max(next_offset) AS m FROM db0._quiver_offsets GROUP BY topic, "partition")`, fmt.Sprint(n)},
	})
}

// TestPipeline_DiskCeiling checks that consumption pauses, rather than
// filling the disk, while the files are over the ceiling.
func TestPipeline_DiskCeiling(t *testing.T) {
	addrs := startCluster(t, 1)
	md := compile(t, "Flat")
	produce(t, addrs, 1, flatValues(t, md, 0, 1000), time.Now())
	cfg := testConfig(t, md, t.TempDir())
	cfg.DiskCeiling = 1 // any file is over it
	cfg.IdleExit = 0
	p, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	rep, err := p.Run(ctx, newSource(t, addrs, "ceiling"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 0 {
		t.Errorf("got %d records ingested over the disk ceiling, want 0", rep.Records)
	}
}

// TestPipeline_NoLeaks checks that every Arrow buffer the pipeline builds
// is released, dead letters and normalized rows included.
func TestPipeline_NoLeaks(t *testing.T) {
	const n, parts = 3000, 2
	addrs := startCluster(t, parts)
	md := compile(t, "Deep")
	values := deepValues(t, md, n)
	for i := 0; i < n; i += 7 {
		values[i] = []byte{0xff}
	}
	produce(t, addrs, parts, values, time.Now())
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	cfg := testConfig(t, md, t.TempDir())
	cfg.Normalize = "id, items[].deals[].price AS price"
	cfg.Allocator = mem
	rep := runUntilIdle(t, cfg, newSource(t, addrs, "leaks"))
	if rep.Records+rep.DeadLetters != n {
		t.Errorf("got %d records and %d dead letters, want %d in all", rep.Records, rep.DeadLetters, n)
	}
	mem.AssertSize(t, 0)
}
