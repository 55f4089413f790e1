package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/quiverdata/quiver/engine"
)

// DemoScale is the TPC-H scale factor of the demo dataset (about 600k
// lineitem rows).
const DemoScale = 0.1

// LoadDemo generates the TPC-H tables with DuckDB's bundled tpch extension
// into an empty database. A database that already has a lineitem table is
// left alone.
func LoadDemo(ctx context.Context, db *engine.DB, log *slog.Logger) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	rows, err := c.Query(ctx, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'lineitem'")
	if err != nil {
		return fmt.Errorf("look for demo data: %w", err)
	}
	have := rows.Next() && rows.RecordBatch().Column(0).ValueStr(0) != "0"
	rows.Close()
	if have {
		return nil
	}
	start := time.Now()
	if _, err := c.Exec(ctx, fmt.Sprintf("CALL dbgen(sf = %g)", DemoScale)); err != nil {
		return fmt.Errorf("generate demo data (TPC-H sf %g): %w", DemoScale, err)
	}
	log.Info("demo dataset loaded", "dataset", fmt.Sprintf("TPC-H sf %g", DemoScale), "took", time.Since(start).Round(time.Millisecond))
	return nil
}
