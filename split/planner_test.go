package split

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// open returns a database holding t (id, grp, s) of n rows, with every
// tenth row and one long run deleted, so row ids have gaps.
func open(t *testing.T, n int) (*engine.DB, *engine.Conn) {
	t.Helper()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	db, err := engine.Open(ctx, engine.Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Release()
		db.Close()
		mem.AssertSize(t, 0)
	})
	for _, q := range []string{
		"SET VARIABLE n = $1::BIGINT",
		"CREATE TABLE t AS SELECT range AS id, range % 7 AS grp, 'v' || range AS s FROM range(getvariable('n'))",
		"DELETE FROM t WHERE id % 10 = 3 OR (id >= getvariable('n') / 2 AND id < getvariable('n') / 2 + getvariable('n') / 20)",
		"CREATE VIEW v AS SELECT * FROM t",
		"CREATE TABLE own_rowid AS SELECT range AS rowid, range AS x FROM range(getvariable('n'))",
		"CREATE MACRO total(x) AS sum(x)",
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, n)
		}
		if _, err := c.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return db, c
}

// ids runs sql and returns its first column, a BIGINT, in order.
func ids(t *testing.T, c *engine.Conn, sql string, args ...any) []int64 {
	t.Helper()
	rows, err := c.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		col := rows.RecordBatch().Column(0).(*array.Int64)
		out = append(out, col.Int64Values()...)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func TestPlanner_Plan(t *testing.T) {
	db, c := open(t, 300_000)
	p := &Planner{DB: db, MinRows: 100_000, RowsPerPart: 100_000}
	tests := []struct {
		sql   string
		parts int
	}{
		{"SELECT * FROM t", 3},
		{"SELECT id, s FROM t WHERE grp = 3", 3},
		{"SELECT id, upper(s) AS u, id + 1 FROM main.t AS x WHERE grp IN (1, 2) AND s LIKE 'v1%'", 3},
		{"SELECT id FROM memory.main.t WHERE id BETWEEN 5 AND 250000 OR grp IS NULL", 3},
		{"SELECT id, CASE WHEN grp > 3 THEN 'hi' ELSE 'lo' END FROM t WHERE CAST(grp AS VARCHAR) = '1'", 3},
		{"SELECT id FROM t WHERE grp = ?", 3},
		{"select id from T where rowid > 5", 3},
		// Not a pure scan.
		{"SELECT id FROM t ORDER BY id", 0},
		{"SELECT id FROM t LIMIT 10", 0},
		{"SELECT id FROM t OFFSET 10", 0},
		{"SELECT DISTINCT grp FROM t", 0},
		{"SELECT count(*) FROM t", 0},
		{"SELECT sum(id) FROM t", 0},
		{"SELECT total(id) FROM t", 0},
		{"SELECT grp FROM t GROUP BY grp", 0},
		{"SELECT id, row_number() OVER () FROM t", 0},
		{"SELECT id FROM t QUALIFY id > 1", 0},
		{"SELECT id FROM t WHERE id IN (SELECT 1)", 0},
		{"SELECT (SELECT 1), id FROM t", 0},
		{"SELECT a.id FROM t a JOIN t b USING (id)", 0},
		{"SELECT id FROM t, range(2)", 0},
		{"SELECT id FROM t UNION ALL SELECT id FROM t", 0},
		{"WITH w AS (SELECT * FROM t) SELECT id FROM w", 0},
		{"SELECT * FROM range(3000000)", 0},
		{"SELECT id FROM t USING SAMPLE 10%", 0},
		{"SELECT id FROM t TABLESAMPLE 10%", 0},
		{"SELECT id FROM (SELECT * FROM t)", 0},
		{"SELECT unnest([id, id]) FROM t", 0},
		{"SELECT list(id) FROM t", 0},
		{"SELECT * FROM v", 0},
		{"SELECT * FROM own_rowid", 0},
		{"SELECT 1", 0},
		{"SELECT * FROM t; SELECT 1", 0},
		{"INSERT INTO t SELECT * FROM t", 0},
		{"SELEC 1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			parts, err := p.Plan(context.Background(), c, tt.sql)
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			if got := len(parts); got != tt.parts {
				t.Errorf("parts: got %d, want %d", got, tt.parts)
			}
		})
	}
	t.Run("small table", func(t *testing.T) {
		big := &Planner{DB: db} // the defaults: a million rows at least
		if parts, err := big.Plan(context.Background(), c, "SELECT * FROM t"); err != nil || parts != nil {
			t.Errorf("got %d parts, %v; want none", len(parts), err)
		}
	})
	t.Run("max parts", func(t *testing.T) {
		capped := &Planner{DB: db, MinRows: 1, RowsPerPart: 1000, MaxParts: 5}
		if parts, err := capped.Plan(context.Background(), c, "SELECT * FROM t"); err != nil || len(parts) != 5 {
			t.Errorf("got %d parts, %v; want 5", len(parts), err)
		}
	})
}

// TestPlanner_PartsAreTheWhole checks the parts of a query, run one by
// one, give exactly the rows of the query (as a multiset), on a table with
// deleted rows and with a WHERE clause, and that a part gives the same rows
// in the same order each time.
func TestPlanner_PartsAreTheWhole(t *testing.T) {
	db, c := open(t, 600_000)
	ctx := context.Background()
	p := &Planner{DB: db, MinRows: 100_000, RowsPerPart: 100_000}
	for _, tt := range []struct {
		sql  string
		args []any
	}{
		{"SELECT id FROM t", nil},
		{"SELECT id, s FROM t WHERE grp = 3 OR s LIKE '%77%'", nil},
		{"SELECT id FROM t WHERE grp = ? AND id > ?", []any{int64(5), int64(1000)}},
	} {
		t.Run(tt.sql, func(t *testing.T) {
			parts, err := p.Plan(ctx, c, tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != 6 {
				t.Fatalf("parts: got %d, want 6", len(parts))
			}
			want := ids(t, c, tt.sql, tt.args...)
			var got []int64
			for i, pt := range parts {
				_, sql, err := p.Bind(ctx, tt.sql, pt)
				if err != nil {
					t.Fatalf("bind part %d %s: %v", i, pt, err)
				}
				first := ids(t, c, sql, tt.args...)
				if again := ids(t, c, sql, tt.args...); !slices.Equal(first, again) {
					t.Errorf("part %d: a second fetch gave other rows or another order", i)
				}
				got = append(got, first...)
			}
			slices.Sort(got)
			slices.Sort(want)
			if len(got) != len(want) || !slices.Equal(got, want) {
				t.Errorf("union of parts: got %d rows, want %d, or other rows", len(got), len(want))
			}
		})
	}
}

// TestPlanner_RowidPushdown checks DuckDB filters a part's row ids in the
// table scan itself, so that a part reads only its range.
func TestPlanner_RowidPushdown(t *testing.T) {
	db, c := open(t, 300_000)
	ctx := context.Background()
	p := &Planner{DB: db, MinRows: 100_000, RowsPerPart: 100_000}
	const sql = "SELECT id, s FROM t WHERE grp = 3 AND s LIKE '%5%'"
	parts, err := p.Plan(ctx, c, sql)
	if err != nil || len(parts) != 3 {
		t.Fatalf("plan: got %d parts, %v", len(parts), err)
	}
	_, partSQL, err := p.Bind(ctx, sql, parts[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := "rowid >= 100000"; !strings.Contains(partSQL, want) {
		t.Errorf("part SQL %q: want it to contain %q", partSQL, want)
	}
	plan, err := c.ExplainJSON(ctx, partSQL)
	if err != nil {
		t.Fatal(err)
	}
	scan := findScan(t, plan)
	filters, _ := scan["Filters"].([]any)
	if !slices.Contains(filters, any("rowid>=100000 AND rowid<200000")) {
		t.Errorf("scan filters: got %q, want the row-id range among them\nplan: %s", filters, plan)
	}
	t.Logf("EXPLAIN of %s:\n%s", partSQL, plan)
}

// findScan returns the extra_info of the plan's one table scan.
func findScan(t *testing.T, plan []byte) map[string]any {
	t.Helper()
	roots, err := duckdbsql.ReadExplain(plan)
	if err != nil {
		t.Fatal(err)
	}
	var found []map[string]any
	var walk func([]duckdbsql.Operator)
	walk = func(ops []duckdbsql.Operator) {
		for _, o := range ops {
			if o.Name == "SEQ_SCAN" || o.Name == "TABLE_SCAN" {
				found = append(found, o.ExtraInfo)
			}
			walk(o.Children)
		}
	}
	walk(roots)
	if len(found) != 1 {
		t.Fatalf("plan has %d table scans, want 1: %s", len(found), plan)
	}
	return found[0]
}

func TestPlanner_Bind(t *testing.T) {
	db, _ := open(t, 1000)
	p := &Planner{DB: db}
	ctx := context.Background()
	for _, tt := range []struct {
		name, sql, part string
	}{
		{"not json", "SELECT * FROM t", `nope`},
		{"unknown field", "SELECT * FROM t", `{"lo": 1, "x": 2}`},
		{"no bounds", "SELECT * FROM t", `{}`},
		{"empty range", "SELECT * FROM t", `{"lo": 5, "hi": 5}`},
		{"negative", "SELECT * FROM t", `{"lo": -5}`},
		{"not a number", "SELECT * FROM t", `{"lo": "1; DROP TABLE t"}`},
		{"trailing", "SELECT * FROM t", `{"lo": 1} {"lo": 2}`},
		{"aggregate", "SELECT count(*) FROM t GROUP BY grp", `{"lo": 1}`},
		{"aggregate alone", "SELECT count(*) FROM t", `{"lo": 1}`},
		{"macro", "SELECT total(id) FROM t", `{"lo": 1}`},
		{"window", "SELECT row_number() OVER () FROM t", `{"lo": 1}`},
		{"join", "SELECT * FROM t, t AS u", `{"lo": 1}`},
		{"write", "DELETE FROM t", `{"lo": 1}`},
		{"script", "SELECT * FROM t; DROP TABLE t", `{"lo": 1}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, sql, err := p.Bind(ctx, tt.sql, json.RawMessage(tt.part)); err == nil {
				t.Errorf("got %q, want an error", sql)
			}
		})
	}
	_, sql, err := p.Bind(ctx, "SELECT id FROM t WHERE grp = 1 OR grp = 2", json.RawMessage(`{"lo": 10, "hi": 20}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "SELECT id FROM t WHERE (((grp = 1) OR (grp = 2)) AND (rowid >= 10) AND (rowid < 20))"; sql != want {
		t.Errorf("got %q, want %q", sql, want)
	}
}

func TestRanges(t *testing.T) {
	for _, tt := range []struct{ rows, k int64 }{{3_000_000, 3}, {10, 3}, {1_000_001, 2}, {64_000_000, 64}} {
		parts := ranges(tt.rows, tt.k)
		if int64(len(parts)) != tt.k || parts[0].Lo != nil || parts[len(parts)-1].Hi != nil {
			t.Fatalf("%d rows in %d: got %v", tt.rows, tt.k, parts)
		}
		for i := 1; i < len(parts); i++ {
			if *parts[i].Lo != *parts[i-1].Hi {
				t.Errorf("%d rows in %d: part %d starts at %d, the one before ends at %d", tt.rows, tt.k, i, *parts[i].Lo, *parts[i-1].Hi)
			}
		}
	}
}
