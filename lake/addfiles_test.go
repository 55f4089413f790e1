package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/quiverdata/quiver/engine"
)

// duckConn opens an in-memory DuckDB with a table src made by create.
func duckConn(t *testing.T, create string) *engine.Conn {
	t.Helper()
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", ExternalAccess: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(ctx, create); err != nil {
		t.Fatalf("%s: %v", create, err)
	}
	return conn
}

// duckRows returns the rows of query as JSON objects, sorted.
func duckRows(t *testing.T, conn *engine.Conn, query string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		out = append(out, recordRows(t, rows.RecordBatch())...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// recordRows renders each row of rec as a JSON object by column name.
func recordRows(t *testing.T, rec arrow.RecordBatch) []string {
	t.Helper()
	out := make([]string, rec.NumRows())
	for i := range out {
		m := map[string]any{}
		for c, f := range rec.Schema().Fields() {
			col := rec.Column(c)
			if col.IsNull(i) {
				m[f.Name] = nil
				continue
			}
			m[f.Name] = col.GetOneForMarshal(i)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// scanRows scans tb through iceberg-go and renders its rows as duckRows does.
func scanRows(t *testing.T, tb *Table) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	var out []string
	for tr.Next() {
		out = append(out, recordRows(t, tr.RecordBatch())...)
	}
	sort.Strings(out)
	return out
}

// copyToLake writes the rows of query through DuckDB's COPY into local
// Parquet files laid out by spec, as the ingest's lake sink does, and
// uploads and commits them.
func copyToLake(t *testing.T, conn *engine.Conn, tb *Table, query string, spec []PartitionField, off Offsets) CommitResult {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, query+" LIMIT 0")
	if err != nil {
		t.Fatal(err)
	}
	schema := rows.Schema()
	rows.Close()
	ids, err := tb.PrepareParquet(ctx, schema)
	if err != nil {
		t.Fatalf("PrepareParquet: %v", err)
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "data.parquet")
	opts := []string{"FORMAT parquet", "COMPRESSION zstd", "FIELD_IDS " + DuckDBFieldIDs(ids)}
	sel := query
	if len(spec) > 0 {
		var exprs, names []string
		for i, pf := range spec {
			expr, ok := DuckDBPartitionKey(pf, engine.QuoteIdent(pf.Column))
			if !ok {
				t.Fatalf("no partition key for %v", pf)
			}
			name := fmt.Sprintf("__part_%d", i)
			exprs = append(exprs, expr+" AS "+name)
			names = append(names, name)
		}
		sel = "SELECT *, " + strings.Join(exprs, ", ") + " FROM (" + query + ")"
		opts = append(opts, "PARTITION_BY ("+strings.Join(names, ", ")+")")
		target = dir
	}
	n, err := conn.Exec(ctx, "COPY ("+sel+") TO "+engine.QuoteString(target)+" ("+strings.Join(opts, ", ")+")")
	if err != nil {
		t.Fatalf("COPY: %v", err)
	}
	var paths []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	files, err := tb.UploadParquet(ctx, uuid.New(), paths)
	if err != nil {
		t.Fatalf("UploadParquet: %v", err)
	}
	if files.Rows() != n {
		t.Fatalf("files hold %d rows, COPY wrote %d", files.Rows(), n)
	}
	res, err := tb.CommitFiles(ctx, files, off)
	if err != nil {
		t.Fatalf("CommitFiles: %v", err)
	}
	return res
}

const duckTypes = `CREATE TABLE src AS SELECT
	i::BIGINT AS id,
	(i % 7)::INTEGER AS small,
	(i % 3)::TINYINT AS tiny,
	CASE WHEN i % 5 = 0 THEN NULL ELSE 'name-' || (i % 11) END AS name,
	(i * 1.5)::DOUBLE AS price,
	(i % 2 = 0) AS flag,
	('x' || i)::BLOB AS payload,
	TIMESTAMPTZ '2026-03-01 00:00:00+00' + (i * INTERVAL 37 MINUTE) AS ts,
	TIMESTAMP '2026-03-01 00:00:00' + (i * INTERVAL 1 HOUR) AS local_ts,
	DATE '2026-03-01' + (i % 4)::INTEGER AS d
FROM range(0, 300) t(i)`

func TestParquetFromDuckDBReadsBackExactly(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec []PartitionField
	}{
		{"unpartitioned", nil},
		{"day", []PartitionField{{Column: "ts", Transform: Day}}},
		{"hour and identity", []PartitionField{{Column: "ts", Transform: Hour}, {Column: "name"}}},
		{"day of a date and a local timestamp", []PartitionField{{Column: "d", Transform: Day}, {Column: "local_ts", Transform: Day}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			conn := duckConn(t, duckTypes)
			l := openLake(t, lakeDir(t, "types-"+strings.ReplaceAll(tc.name, " ", "-")))
			schema := querySchema(t, conn, "SELECT * FROM src")
			tb, err := l.Table(ctx, "ns", "t", schema, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			copyToLake(t, conn, tb, "SELECT * FROM src WHERE id < 200", tc.spec, offs("g", "t", map[int32]Range{0: {Start: 0, End: 200, First: true}}))
			copyToLake(t, conn, tb, "SELECT * FROM src WHERE id >= 200", tc.spec, offs("g", "t", map[int32]Range{0: {Start: 200, End: 300}}))
			want := duckRows(t, conn, "SELECT * FROM src")
			keepRows(t, "types-"+strings.ReplaceAll(tc.name, " ", "-"), want)
			if got := scanRows(t, tb); !slices.Equal(got, want) {
				t.Fatalf("scan differs from the DuckDB rows:\n got %d rows, first %v\nwant %d rows, first %v", len(got), first(got), len(want), first(want))
			}
			checkDataFiles(t, tb, 300)
			// Pruning by partition values and bounds keeps exactly the
			// matching rows.
			cut := time.Date(2026, 3, 3, 5, 0, 0, 0, time.UTC)
			for _, f := range []struct {
				expr iceberg.BooleanExpression
				sql  string
			}{
				{iceberg.GreaterThanEqual(iceberg.Reference("ts"), iceberg.Timestamp(cut.UnixMicro())), "ts >= TIMESTAMPTZ '2026-03-03 05:00:00+00'"},
				{iceberg.LessThan(iceberg.Reference("local_ts"), iceberg.Timestamp(cut.UnixMicro())), "local_ts < TIMESTAMP '2026-03-03 05:00:00'"},
				{iceberg.EqualTo(iceberg.Reference("name"), "name-3"), "name = 'name-3'"},
				{iceberg.IsNull(iceberg.Reference("name")), "name IS NULL"},
			} {
				want := duckRows(t, conn, "SELECT * FROM src WHERE "+f.sql)
				if got := filteredRows(t, tb, f.expr); len(want) == 0 || !slices.Equal(got, want) {
					t.Errorf("scan where %s: got %d rows, want %d", f.sql, len(got), len(want))
				}
			}
		})
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return s[0]
}

func querySchema(t *testing.T, conn *engine.Conn, query string) *arrow.Schema {
	t.Helper()
	rows, err := conn.Query(context.Background(), query+" LIMIT 0")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	return rows.Schema()
}

// checkDataFiles checks the committed data files: zstd Parquet with field
// ids and statistics, bounds in the manifests, each file in one partition
// whose value matches its rows, and rows in all.
func checkDataFiles(t *testing.T, tb *Table, rows int64) {
	t.Helper()
	ctx := context.Background()
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spec := tbl.Spec()
	var n int64
	for _, task := range tasks {
		df := task.File
		n += df.Count()
		if len(df.LowerBoundValues()) == 0 || len(df.UpperBoundValues()) == 0 || len(df.NullValueCounts()) == 0 {
			t.Errorf("%s: no column statistics in the manifest", df.FilePath())
		}
		if got := len(df.Partition()); got != spec.NumFields() {
			t.Errorf("%s: %d partition values, the spec has %d fields", df.FilePath(), got, spec.NumFields())
		}
		path := strings.TrimPrefix(df.FilePath(), "file://")
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		sc := pf.MetaData().Schema
		for i := 0; i < sc.NumColumns(); i++ {
			if sc.Column(i).SchemaNode().FieldID() <= 0 {
				t.Errorf("%s: column %s has no field id", path, sc.Column(i).Path())
			}
		}
		for g := 0; g < pf.NumRowGroups(); g++ {
			rg := pf.MetaData().RowGroup(g)
			for i := 0; i < rg.NumColumns(); i++ {
				cc, err := rg.ColumnChunk(i)
				if err != nil {
					t.Fatal(err)
				}
				if cc.Compression() != compress.Codecs.Zstd {
					t.Errorf("%s: column %d compressed with %v, want zstd", path, i, cc.Compression())
				}
			}
		}
		pf.Close()
	}
	t.Logf("%d data files, %d rows", len(tasks), n)
	if n != rows {
		t.Errorf("the data files hold %d rows, want %d", n, rows)
	}
}

// filteredRows scans tb with filter through iceberg-go, which prunes
// files by their partition values and bounds first.
func filteredRows(t *testing.T, tb *Table, filter iceberg.BooleanExpression) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := tb.Iceberg(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithRowFilter(filter)).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	var out []string
	for tr.Next() {
		out = append(out, recordRows(t, tr.RecordBatch())...)
	}
	sort.Strings(out)
	return out
}

func TestParquetFromDuckDBNestedTypes(t *testing.T) {
	ctx := context.Background()
	conn := duckConn(t, `CREATE TABLE src AS SELECT
		i::BIGINT AS id,
		TIMESTAMPTZ '2026-03-01 00:00:00+00' + (i * INTERVAL 7 HOUR) AS ts,
		{'a': i::INTEGER, 'b': CASE WHEN i % 3 = 0 THEN NULL ELSE 'b' || i END, 'inner': {'x': i * 2.0}} AS st,
		CASE WHEN i % 4 = 0 THEN NULL ELSE [i, i + 1, NULL] END AS lst,
		[{'k': 'v' || i, 'n': i::INTEGER}] AS lst_of_st,
		MAP {'k' || i: i::INTEGER, 'z': NULL} AS m,
		{'tags': ['t' || (i % 3)]} AS st_of_lst
	FROM range(0, 100) t(i)`)
	l := openLake(t, lakeDir(t, "nested"))
	spec := []PartitionField{{Column: "ts", Transform: Day}}
	tb, err := l.Table(ctx, "ns", "nested", querySchema(t, conn, "SELECT * FROM src"), spec)
	if err != nil {
		t.Fatal(err)
	}
	copyToLake(t, conn, tb, "SELECT * FROM src", spec, offs("g", "t", map[int32]Range{0: {Start: 0, End: 100, First: true}}))
	want := duckRows(t, conn, "SELECT * FROM src")
	keepRows(t, "nested", want)
	if got := scanRows(t, tb); !slices.Equal(got, want) {
		t.Fatalf("scan differs from the DuckDB rows:\n got %d rows, first %v\nwant %d rows, first %v", len(got), first(got), len(want), first(want))
	}
	checkDataFiles(t, tb, 100)
}

func TestParquetFromDuckDBSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	conn := duckConn(t, duckTypes)
	l := openLake(t, t.TempDir())
	spec := []PartitionField{{Column: "ts", Transform: Day}}
	// small is a long in the table and an int in the files.
	tb, err := l.Table(ctx, "ns", "t", querySchema(t, conn, "SELECT id, ts, name, small::BIGINT AS small FROM src"), spec)
	if err != nil {
		t.Fatal(err)
	}
	// Old rows lack columns, new rows bring them, in another order.
	copyToLake(t, conn, tb, "SELECT id, ts, name, small FROM src WHERE id < 100", spec, offs("g", "t", map[int32]Range{0: {Start: 0, End: 100, First: true}}))
	copyToLake(t, conn, tb, "SELECT price, name, id, ts, small FROM src WHERE id >= 100", spec, offs("g", "t", map[int32]Range{0: {Start: 100, End: 300}}))
	want := duckRows(t, conn, `SELECT id, ts, name, small, CASE WHEN id >= 100 THEN price END AS price FROM src`)
	if got := scanRows(t, tb); !slices.Equal(got, want) {
		t.Fatalf("scan differs from the DuckDB rows:\n got %d rows, first %v\nwant %d rows, first %v", len(got), first(got), len(want), first(want))
	}
	// The int bounds of the long column prune right.
	want = duckRows(t, conn, `SELECT id, ts, name, small, CASE WHEN id >= 100 THEN price END AS price FROM src WHERE small >= 5`)
	if got := filteredRows(t, tb, iceberg.GreaterThanEqual(iceberg.Reference("small"), int64(5))); len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("scan where small >= 5: got %d rows, want %d", len(got), len(want))
	}
	// A column whose type cannot change is refused before anything is written.
	if _, err := tb.PrepareParquet(ctx, querySchema(t, conn, "SELECT name AS price FROM src")); !errors.Is(err, ErrIncompatibleSchema) {
		t.Fatalf("PrepareParquet with price as a string: %v, want ErrIncompatibleSchema", err)
	}
}

func TestUploadParquetRefusesFileAcrossPartitions(t *testing.T) {
	ctx := context.Background()
	conn := duckConn(t, duckTypes)
	l := openLake(t, t.TempDir())
	spec := []PartitionField{{Column: "ts", Transform: Day}}
	schema := querySchema(t, conn, "SELECT * FROM src")
	tb, err := l.Table(ctx, "ns", "t", schema, spec)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tb.PrepareParquet(ctx, schema)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// All rows, over several days, in one file.
	all := filepath.Join(dir, "all.parquet")
	if _, err := conn.Exec(ctx, "COPY (SELECT * FROM src) TO "+engine.QuoteString(all)+" (FORMAT parquet, FIELD_IDS "+DuckDBFieldIDs(ids)+")"); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.UploadParquet(ctx, uuid.New(), []string{all}); !errors.Is(err, ErrUnfitParquet) || !strings.Contains(err.Error(), "more than one value") {
		t.Fatalf("UploadParquet of a file across days: %v, want a refusal", err)
	}
	// Nothing was left in the table's data location.
	orphans, err := tb.Orphans(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans.Files) != 0 {
		t.Fatalf("%d files left after a refused upload", len(orphans.Files))
	}
}

// lakeDir is a fresh warehouse directory: under $QUIVER_KEEP_LAKES/name
// when set, kept for other readers (pyiceberg) to check, or a temporary
// one.
func lakeDir(t *testing.T, name string) string {
	t.Helper()
	root := os.Getenv("QUIVER_KEEP_LAKES")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// keepRows writes the expected rows, one JSON object a line, beside a
// kept warehouse.
func keepRows(t *testing.T, name string, rows []string) {
	t.Helper()
	if root := os.Getenv("QUIVER_KEEP_LAKES"); root != "" {
		if err := os.WriteFile(filepath.Join(root, name, "expected.jsonl"), []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// heldError stands for an S3 client error, which keeps the failed
// request and its part's buffer.
type heldError struct{ buf []byte }

func (e *heldError) Error() string { return fmt.Sprintf("part of %d bytes refused", len(e.buf)) }

func TestUploadErrorDropsTheCause(t *testing.T) {
	held := &heldError{buf: make([]byte, 8<<20)}
	tests := []struct {
		name   string
		err    error
		wantIs error // what errors.Is must still find
	}{
		{"store error", fmt.Errorf("write: %w", held), nil},
		{"canceled", fmt.Errorf("write: %w: %w", held, context.Canceled), context.Canceled},
		{"deadline", fmt.Errorf("write: %w: %w", held, context.DeadlineExceeded), context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := uploadError("s3://lake/t/data/f.parquet", tt.err)
			var got *heldError
			if errors.As(err, &got) {
				t.Errorf("uploadError(%v) still holds the store's error, and its buffer", tt.err)
			}
			if !strings.Contains(err.Error(), "part of 8388608 bytes refused") || !strings.Contains(err.Error(), "f.parquet") {
				t.Errorf("uploadError lost the message: %v", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("uploadError(%v) is not %v", tt.err, tt.wantIs)
			}
		})
	}
}
