package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/quiverdata/quiver/engine"
)

// TestStmt_OnResult checks the hook a statement runs when its result is
// ready: once, with the statement's error, its own error taking the
// statement's place, and on a close without a run.
func TestStmt_OnResult(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, engine.Options{Path: ":memory:", AllowedDirs: []string{dir}})
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	out := filepath.Join(dir, "out.csv")
	hookErr := errors.New("upload failed")
	for _, tt := range []struct {
		name     string
		sql      string
		ret      error // what the hook returns when the statement succeeded
		query    bool
		wantSeen string // "ok", "failed"
		wantErr  bool
	}{
		{"exec", "CREATE TABLE a AS SELECT 1 AS x", nil, false, "ok", false},
		{"copy written before the hook", "COPY (SELECT 42 AS x) TO '" + out + "' (FORMAT csv)", nil, false, "ok", false},
		{"hook fails a statement", "CREATE TABLE b AS SELECT 1 AS x", hookErr, false, "ok", true},
		{"statement fails", "SELECT * FROM no_such_table", nil, true, "failed", true},
		{"query", "SELECT 1", nil, true, "ok", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := c.Prepare(ctx, tt.sql)
			if err != nil {
				if tt.wantSeen == "failed" {
					return // DuckDB refused it at prepare: no run
				}
				t.Fatal(err)
			}
			defer st.Close()
			calls, seen := 0, ""
			st.OnResult(func(ctx context.Context, err error) error {
				calls++
				if err != nil {
					seen = "failed"
					return err
				}
				seen = "ok"
				if tt.name == "copy written before the hook" {
					if b, rerr := os.ReadFile(out); rerr != nil || len(b) == 0 {
						return errors.New("the COPY's file is not there yet")
					}
				}
				return tt.ret
			})
			if tt.query {
				var rows *engine.Rows
				if rows, err = st.Query(ctx); err == nil {
					rows.Close()
				}
			} else {
				_, err = st.Exec(ctx)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.ret != nil && !errors.Is(err, tt.ret) {
				t.Errorf("err = %v, want the hook's", err)
			}
			if calls != 1 || seen != tt.wantSeen {
				t.Errorf("hook ran %d times seeing %q, want once seeing %q", calls, seen, tt.wantSeen)
			}
			st.Close()
			if calls != 1 {
				t.Errorf("Close ran the hook again (%d calls)", calls)
			}
		})
	}
	st, err := c.Prepare(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	var got error
	st.OnResult(func(_ context.Context, err error) error { got = err; return err })
	st.Close()
	if !errors.Is(got, engine.ErrNotRun) {
		t.Errorf("closed without a run: hook got %v, want ErrNotRun", got)
	}
}

// TestStmt_ExecCount checks the count Exec returns for each kind of
// write: CREATE TABLE … AS SELECT reports its rows, as DuckDB's own
// clients show them, not the 0 of DuckDB's rows-changed figure.
func TestStmt_ExecCount(t *testing.T) {
	db := openTest(t, engine.Options{Path: ":memory:"})
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	for _, tt := range []struct {
		sql  string
		want int64
	}{
		{"CREATE TABLE t AS SELECT range AS id FROM range(5)", 5},
		{"CREATE TABLE e AS SELECT range AS id FROM range(0)", 0},
		{"CREATE TABLE p (id BIGINT)", 0},
		{"INSERT INTO t SELECT range FROM range(3)", 3},
		{"UPDATE t SET id = id + 1 WHERE id < 2", 4},
		{"DELETE FROM t WHERE id >= 3", 2},
		{"CREATE OR REPLACE TABLE t AS SELECT 1 AS n", 1},
		{"CREATE VIEW v AS SELECT 7 AS Count", 0},
	} {
		t.Run(tt.sql, func(t *testing.T) {
			got, err := c.Exec(ctx, tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Exec(%q) = %d, want %d", tt.sql, got, tt.want)
			}
		})
	}
}
