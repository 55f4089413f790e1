package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/engine"
)

func TestConn_ExplainJSON(t *testing.T) {
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exec(ctx, "CREATE TABLE t (i INTEGER)"); err != nil {
		t.Fatal(err)
	}
	plan, err := c.ExplainJSON(ctx, "SELECT * FROM range(1000)")
	if err != nil || !strings.Contains(string(plan), `"Estimated Cardinality": "1000"`) {
		t.Fatalf("plan %s, %v", plan, err)
	}
	// A script is refused, and none of it runs.
	if _, err := c.ExplainJSON(ctx, "INSERT INTO t VALUES (1); SELECT * FROM t"); !errors.Is(err, engine.ErrScript) {
		t.Errorf("script: %v, want ErrScript", err)
	}
	if n, err := c.QueryInt64(ctx, "SELECT count(*) FROM t"); err != nil || n != 0 {
		t.Errorf("rows after explaining a script: %d, %v; want 0", n, err)
	}
	if _, err := c.ExplainJSON(ctx, "SELECT * FROM t WHERE i = ?"); err == nil {
		t.Error("a statement with parameters explained")
	}
}
