package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/engine"
)

// openCheckpointDB opens a file database (a checkpoint of an in-memory one
// writes nothing) with a sequence s and a table t.
func openCheckpointDB(t *testing.T) *engine.DB {
	t.Helper()
	db, err := engine.Open(context.Background(), engine.Options{Path: filepath.Join(t.TempDir(), "cp.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	testConn(t, db, "CREATE SEQUENCE s", "CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1)",
		"CREATE TABLE checkpoint_log (a INTEGER)")
	return db
}

// TestStmt_ForceCheckpoint checks that a force checkpoint waiting for
// another connection's open write holds nobody else: statements that open
// transactions (reads of tables, inserts, DDL) keep completing while it
// waits, and it runs once the write ends. On DuckDB's own wait they all
// block until the checkpoint stops waiting.
func TestStmt_ForceCheckpoint(t *testing.T) {
	tests := []struct{ name, write, checkpoint string }{
		{"FORCE CHECKPOINT behind nextval", "SELECT nextval('s')", "FORCE CHECKPOINT"},
		{"CALL behind UPDATE", "UPDATE t SET a = a + 1", "CALL force_checkpoint()"},
		{"table function behind DDL", "CREATE TABLE w (a INTEGER)", "SELECT * FROM force_checkpoint()"},
		{"in any case", "SELECT nextval('s')", "select * from Force_Checkpoint()"},
	}
	others := []string{"SELECT count(*) FROM t", "INSERT INTO t VALUES (2)", "SELECT nextval('s')", "CREATE OR REPLACE TABLE o (a INTEGER)"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openCheckpointDB(t)
			ctx := context.Background()
			writer := testConn(t, db, "BEGIN", tt.write)
			cp := testConn(t, db)
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := cp.Exec(cctx, tt.checkpoint)
				done <- err
			}()
			// Rounds of other statements, each on a connection of its
			// own, until the checkpoint has had time to start waiting;
			// after every round it must still be waiting.
			for round, start := 0, time.Now(); round < 3 || time.Since(start) < 300*time.Millisecond; round++ {
				for _, sql := range others {
					octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
					err := execOnce(octx, db, sql)
					ocancel()
					if err != nil {
						t.Fatalf("round %d: %s: %v", round, sql, err)
					}
				}
				select {
				case err := <-done:
					t.Fatalf("round %d: the checkpoint ended (%v) while the write was open; want it waiting", round, err)
				default:
				}
			}
			if _, err := writer.Exec(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("checkpoint after the write ended: got %v, want success", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the checkpoint did not run after the write ended")
			}
		})
	}
}

// execOnce runs sql on a pooled connection of its own.
func execOnce(ctx context.Context, db *engine.DB, sql string) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	_, err = c.Exec(ctx, sql)
	return err
}

// TestStmt_ForceCheckpointCanceled checks that a force checkpoint whose
// context ends while it waits says why, and that statements which only
// mention checkpoints, and plain CHECKPOINT, do not wait at all.
func TestStmt_ForceCheckpointCanceled(t *testing.T) {
	tests := []struct {
		name, sql string
		timeout   time.Duration
		wantKind  engine.Kind
		wantMsg   string // "" for success
	}{
		{"force checkpoint times out", "FORCE CHECKPOINT", 200 * time.Millisecond, engine.KindCanceled, "waiting"},
		{"plain CHECKPOINT fails at once", "CHECKPOINT", 10 * time.Second, engine.KindTransaction, "other write transactions"},
		{"a table named for checkpoints", "SELECT count(*) FROM checkpoint_log", 10 * time.Second, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openCheckpointDB(t)
			ctx := context.Background()
			testConn(t, db, "BEGIN", "SELECT nextval('s')")
			c := testConn(t, db)
			cctx, cancel := context.WithTimeout(ctx, tt.timeout)
			defer cancel()
			_, err := c.Exec(cctx, tt.sql)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			var ee *engine.Error
			if !errors.As(err, &ee) || ee.Kind != tt.wantKind || !strings.Contains(ee.Msg, tt.wantMsg) {
				t.Fatalf("got %v, want a %v error containing %q", err, tt.wantKind, tt.wantMsg)
			}
		})
	}
}
