package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/testmem"
)

// TestStmt_PipeCopy runs COPY (query) TO statements that PipeCopy pipes
// and ones it leaves alone, by Exec and by Query, and reads each file
// back: its rows, in the query's order (the table's rows are stored in
// hash order, which the file must keep). A query that fails mid-stream
// fails the COPY with the query's error and writes no file, and so does
// a cancel; the connection works afterwards. Every Arrow buffer is
// released.
func TestStmt_PipeCopy(t *testing.T) {
	mem := testmem.Checked(t)
	dir := t.TempDir()
	db := openTest(t, engine.Options{AllowedDirs: []string{dir}, Allocator: mem})
	ctx := context.Background()
	c := testConn(t, db, "CREATE TABLE t AS SELECT range AS i, hash(range) AS h, 'v' || range AS s FROM range(300000) ORDER BY h")
	for _, tt := range []struct {
		name, query string
		params      []any
		piped       bool
		rows        int64
		query_      bool // run by Query instead of Exec
		tableOrder  bool // the rows are the table's first, in its order
	}{
		{"large LIMIT", "SELECT * FROM t LIMIT 250000", nil, true, 250000, false, true},
		{"large LIMIT by Query", "SELECT * FROM t LIMIT 250000", nil, true, 250000, true, true},
		{"LIMIT under a projection and filter", "SELECT h, s FROM (SELECT * FROM t WHERE i % 2 = 0) LIMIT 100000", nil, true, 100000, false, false},
		{"no LIMIT: DuckDB runs it in parallel", "SELECT * FROM t", nil, false, 300000, false, true},
		{"ORDER BY with LIMIT: a top-n", "SELECT * FROM t ORDER BY h LIMIT 1000", nil, false, 1000, false, false},
		{"LIMIT below an aggregate", "SELECT count(*) AS h FROM (SELECT * FROM t LIMIT 250000)", nil, false, 1, false, false},
		{"parameters", "SELECT * FROM t WHERE i < ? LIMIT 250000", []any{int64(500)}, false, 500, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".parquet")
			copySQL := func(src string) string {
				return "COPY " + src + " TO " + engine.QuoteString(out) + " (FORMAT parquet, USE_TMP_FILE true)"
			}
			st, err := c.Prepare(ctx, copySQL("("+tt.query+")"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.BindValues(tt.params...); err != nil {
				t.Fatal(err)
			}
			piped, err := st.PipeCopy(ctx, tt.query, func(view string) string { return copySQL("(SELECT * FROM " + view + ")") })
			if err != nil {
				t.Fatal(err)
			}
			if piped != tt.piped {
				t.Errorf("piped: got %v, want %v", piped, tt.piped)
			}
			var n int64
			if tt.query_ {
				rows, err := st.Query(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if name := rows.Schema().Field(0).Name; name != "Count" {
					t.Errorf("result column: got %q, want Count, as the COPY's own", name)
				}
				for rows.Next() {
					n += rows.RecordBatch().Column(0).(*array.Int64).Value(0)
				}
				if err := rows.Close(); err != nil {
					t.Fatal(err)
				}
			} else if n, err = st.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if n != tt.rows {
				t.Errorf("rows: got %d, want %d", n, tt.rows)
			}
			if !tt.tableOrder {
				return
			}
			// The file's rows in file order against the query's own.
			got, err := c.QueryInt64(ctx, fmt.Sprintf(`SELECT count(*) FROM
				(SELECT h, row_number() OVER (ORDER BY file_row_number) AS k FROM read_parquet(%s, file_row_number = true)) f
				JOIN (SELECT h, row_number() OVER (ORDER BY rowid) AS k FROM t) q USING (k)
				WHERE f.h = q.h`, engine.QuoteString(out)))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.rows {
				t.Errorf("%d of %d rows in the table's order", got, tt.rows)
			}
		})
	}

	t.Run("the query fails mid-stream", func(t *testing.T) {
		out := filepath.Join(dir, "fails.parquet")
		query := "SELECT CASE WHEN i = 200000 THEN error('row 200000 is bad') ELSE i END AS i FROM t LIMIT 250000"
		st, err := c.Prepare(ctx, "COPY ("+query+") TO "+engine.QuoteString(out)+" (FORMAT parquet, USE_TMP_FILE true)")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		piped, err := st.PipeCopy(ctx, query, func(view string) string {
			return "COPY (SELECT * FROM " + view + ") TO " + engine.QuoteString(out) + " (FORMAT parquet, USE_TMP_FILE true)"
		})
		if err != nil || !piped {
			t.Fatalf("piped %v, %v", piped, err)
		}
		_, err = st.Exec(ctx)
		if err == nil || !strings.Contains(err.Error(), "row 200000 is bad") {
			t.Fatalf("got %v, want the query's error", err)
		}
		noFiles(t, dir, "fails.parquet")
	})

	t.Run("canceled", func(t *testing.T) {
		out := filepath.Join(dir, "canceled.parquet")
		query := "SELECT i, s, md5(s || x) AS m FROM t, range(40) r(x) LIMIT 12000000"
		st, err := c.Prepare(ctx, "COPY ("+query+") TO "+engine.QuoteString(out)+" (FORMAT parquet, USE_TMP_FILE true)")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.PipeCopy(ctx, query, func(view string) string {
			return "COPY (SELECT * FROM " + view + ") TO " + engine.QuoteString(out) + " (FORMAT parquet, USE_TMP_FILE true)"
		}); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = st.Exec(cctx)
		if err == nil {
			t.Fatal("a canceled export succeeded")
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("the cancel took %v", took)
		}
		noFiles(t, dir, "canceled.parquet")
		if n, err := c.QueryInt64(ctx, "SELECT count(*) FROM t"); err != nil || n != 300000 {
			t.Fatalf("the connection after a cancel: %d, %v", n, err)
		}
	})
}

// noFiles fails when name is in dir. (DuckDB leaves its tmp_name behind
// a failed COPY, piped or not; the server removes it.)
func noFiles(t *testing.T, dir, name string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is there after a failed export: %v", name, err)
	}
}
