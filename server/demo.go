package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/quiverdata/quiver/engine"
)

// DemoOrders is the row count of the demo dataset's orders table.
const DemoOrders = 600_000

// demoSQL builds a small shop: customers, products and orders, with keys
// and a foreign key per reference, from deterministic hashes of the row
// number. (The DuckDB build quiver links has no tpch extension, and nothing
// is downloaded at run time.)
var demoSQL = []string{
	`CREATE TABLE customers (
		customer_id INTEGER PRIMARY KEY,
		name VARCHAR NOT NULL,
		country VARCHAR NOT NULL,
		signed_up DATE NOT NULL)`,
	`INSERT INTO customers
		SELECT i, 'customer_' || i,
			['US','DE','FR','GB','JP','BR','IN','CA','AU','NL'][(hash(i) % 10)::INTEGER + 1],
			DATE '2020-01-01' + (hash(i * 7) % 1800)::INTEGER
		FROM range(1, 20001) t(i)`,
	`CREATE TABLE products (
		product_id INTEGER PRIMARY KEY,
		name VARCHAR NOT NULL,
		category VARCHAR NOT NULL,
		price DECIMAL(10,2) NOT NULL)`,
	`INSERT INTO products
		SELECT i, 'product_' || i,
			['books','games','garden','kitchen','music','sports','toys','tools'][(hash(i) % 8)::INTEGER + 1],
			((hash(i * 13) % 50000) / 100.0 + 1)::DECIMAL(10,2)
		FROM range(1, 2001) t(i)`,
	`CREATE TABLE orders (
		order_id BIGINT PRIMARY KEY,
		customer_id INTEGER NOT NULL REFERENCES customers (customer_id),
		product_id INTEGER NOT NULL REFERENCES products (product_id),
		quantity SMALLINT NOT NULL,
		status VARCHAR NOT NULL,
		ordered_at TIMESTAMPTZ NOT NULL,
		tags VARCHAR[])`,
	fmt.Sprintf(`INSERT INTO orders
		SELECT i,
			(hash(i) %% 20000)::INTEGER + 1,
			(hash(i * 31) %% 2000)::INTEGER + 1,
			(hash(i * 17) %% 9)::SMALLINT + 1,
			['new','paid','shipped','delivered','returned'][(hash(i * 5) %% 5)::INTEGER + 1],
			TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds((hash(i * 3) %% 63072000)::BIGINT),
			CASE WHEN hash(i * 11) %% 4 = 0 THEN ['gift'] WHEN hash(i * 11) %% 4 = 1 THEN ['gift', 'express'] ELSE [] END
		FROM range(1, %d) t(i)`, DemoOrders+1),
}

// LoadDemo creates the demo dataset in a database that has no orders table
// yet; an existing one is left alone.
func LoadDemo(ctx context.Context, db *engine.DB, log *slog.Logger) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	rows, err := c.Query(ctx, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'orders' AND schema_name = 'main'")
	if err != nil {
		return fmt.Errorf("look for demo data: %w", err)
	}
	have := rows.Next() && rows.RecordBatch().Column(0).ValueStr(0) != "0"
	rows.Close()
	if have {
		return nil
	}
	start := time.Now()
	if _, err := c.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
		return err
	}
	for _, sql := range demoSQL {
		if _, err := c.Exec(ctx, sql); err != nil {
			c.Exec(ctx, "ROLLBACK")
			return fmt.Errorf("create demo data: %w", err)
		}
	}
	if _, err := c.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("create demo data: %w", err)
	}
	log.Info("demo dataset loaded", "tables", "customers, products, orders", "orders", DemoOrders, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
