package mysqlwire_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/mysqlwire"
	"github.com/quiverdata/quiver/server"
)

// These tests read the catalog of `quiver serve --demo` (server.LoadDemo)
// the way MySQL tools do. They live outside package mysqlwire because
// server imports it.

// startDemo starts a MySQL endpoint on 127.0.0.1:0 over an in-memory
// database holding the demo tables, and returns its address.
func startDemo(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := engine.Open(ctx, engine.Options{Path: ":memory:", Logger: log})
	if err != nil {
		t.Fatalf("open engine: %v", err)
	}
	if err := server.LoadDemo(ctx, db, log); err != nil {
		db.Close()
		t.Fatalf("load demo: %v", err)
	}
	srv, err := mysqlwire.New(db, mysqlwire.Options{Logger: log})
	if err != nil {
		db.Close()
		t.Fatalf("new server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, mysqlwire.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
		db.Close()
	})
	return ln.Addr().String()
}

// demoConn is one connection to a demo server, closed with t.
func demoConn(t *testing.T, addr string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("mysql", "u:@tcp("+addr+")/main?timeout=5s")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rows runs query and returns its rows, cells as text ("NULL" for NULL)
// joined by spaces, rows joined by " | ".
func rows(t *testing.T, c *sql.Conn, query string) string {
	t.Helper()
	rs, err := c.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out []string
	for rs.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatalf("%s: scan: %v", query, err)
		}
		cells := make([]string, len(cols))
		for i, v := range vals {
			cells[i] = "NULL"
			if v.Valid {
				cells[i] = v.String
			}
		}
		out = append(out, strings.Join(cells, " "))
	}
	if err := rs.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return strings.Join(out, " | ")
}

// demoCreateTable is SHOW CREATE TABLE of the demo tables for a client
// whose sql_mode has no ANSI_QUOTES (mysqldump empties its sql_mode).
var demoCreateTable = map[string]string{
	"customers": "CREATE TABLE `customers` (\n" +
		"  `customer_id` int NOT NULL,\n" +
		"  `name` longtext NOT NULL,\n" +
		"  `country` longtext NOT NULL,\n" +
		"  `signed_up` date NOT NULL,\n" +
		"  PRIMARY KEY (`customer_id`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
	"products": "CREATE TABLE `products` (\n" +
		"  `product_id` int NOT NULL,\n" +
		"  `name` longtext NOT NULL,\n" +
		"  `category` longtext NOT NULL,\n" +
		"  `price` decimal(10,2) NOT NULL,\n" +
		"  PRIMARY KEY (`product_id`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
	"orders": "CREATE TABLE `orders` (\n" +
		"  `order_id` bigint NOT NULL,\n" +
		"  `customer_id` int NOT NULL,\n" +
		"  `product_id` int NOT NULL,\n" +
		"  `quantity` smallint NOT NULL,\n" +
		"  `status` longtext NOT NULL,\n" +
		"  `ordered_at` timestamp(6) NOT NULL,\n" +
		"  `tags` json DEFAULT NULL,\n" +
		"  PRIMARY KEY (`order_id`),\n" +
		"  KEY `orders_customer_id_customer_id_fkey` (`customer_id`),\n" +
		"  KEY `orders_product_id_product_id_fkey` (`product_id`),\n" +
		"  CONSTRAINT `orders_customer_id_customer_id_fkey` FOREIGN KEY (`customer_id`) REFERENCES `customers` (`customer_id`),\n" +
		"  CONSTRAINT `orders_product_id_product_id_fkey` FOREIGN KEY (`product_id`) REFERENCES `products` (`product_id`)\n" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
}

func TestServer_DemoCatalog(t *testing.T) {
	addr := startDemo(t)
	c := demoConn(t, addr)

	t.Run("SHOW CREATE TABLE", func(t *testing.T) {
		for _, table := range []string{"customers", "products", "orders"} {
			var name, create string
			if err := c.QueryRowContext(context.Background(), "SHOW CREATE TABLE "+table).Scan(&name, &create); err != nil {
				t.Fatalf("SHOW CREATE TABLE %s: %v", table, err)
			}
			// quiver's sql_mode has ANSI_QUOTES, so names are in "…", as
			// MySQL prints them then.
			if want := strings.ReplaceAll(demoCreateTable[table], "`", `"`); create != want || name != table {
				t.Errorf("%s:\ngot  %s %s\nwant %s", table, name, create, want)
			}
		}
	})

	t.Run("SHOW CREATE TABLE, sql_mode without ANSI_QUOTES", func(t *testing.T) {
		c := demoConn(t, addr)
		if _, err := c.ExecContext(context.Background(), "/*!40100 SET @@SQL_MODE='' */"); err != nil {
			t.Fatalf("set sql_mode: %v", err)
		}
		for _, table := range []string{"customers", "products", "orders"} {
			var name, create string
			if err := c.QueryRowContext(context.Background(), "SHOW CREATE TABLE `main`.`"+table+"`").Scan(&name, &create); err != nil {
				t.Fatalf("SHOW CREATE TABLE %s: %v", table, err)
			}
			if want := demoCreateTable[table]; create != want {
				t.Errorf("%s:\ngot  %s\nwant %s", table, create, want)
			}
		}
	})

	tests := []struct{ query, want string }{
		{"SHOW COLUMNS FROM orders",
			"order_id bigint NO PRI NULL  | customer_id int NO MUL NULL  | product_id int NO MUL NULL  | quantity smallint NO  NULL  | " +
				"status longtext NO  NULL  | ordered_at timestamp(6) NO  NULL  | tags json YES  NULL "},
		{"SHOW FULL COLUMNS FROM products",
			"product_id int NULL NO PRI NULL  select,insert,update,references  | " +
				"name longtext utf8mb4_general_ci NO  NULL  select,insert,update,references  | " +
				"category longtext utf8mb4_general_ci NO  NULL  select,insert,update,references  | " +
				"price decimal(10,2) NULL NO  NULL  select,insert,update,references "},
		{"DESCRIBE customers",
			"customer_id int NO PRI NULL  | name longtext NO  NULL  | country longtext NO  NULL  | signed_up date NO  NULL "},
		{"SHOW INDEX FROM orders",
			"orders 0 PRIMARY 1 order_id A NULL NULL NULL  BTREE   YES NULL | " +
				"orders 1 orders_customer_id_customer_id_fkey 1 customer_id A NULL NULL NULL  BTREE   YES NULL | " +
				"orders 1 orders_product_id_product_id_fkey 1 product_id A NULL NULL NULL  BTREE   YES NULL"},
		{"SHOW TABLE STATUS LIKE 'ord%'",
			"orders InnoDB 10 Dynamic 600000 NULL NULL NULL NULL NULL NULL NULL NULL NULL utf8mb4_general_ci NULL  "},
		{"SHOW TABLE STATUS FROM main WHERE Name <> 'orders'",
			"customers InnoDB 10 Dynamic 20000 NULL NULL NULL NULL NULL NULL NULL NULL NULL utf8mb4_general_ci NULL   | " +
				"products InnoDB 10 Dynamic 2000 NULL NULL NULL NULL NULL NULL NULL NULL NULL utf8mb4_general_ci NULL  "},
		{"SELECT TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_ROWS, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'main' ORDER BY 1",
			"customers BASE TABLE InnoDB 20000 utf8mb4_general_ci | orders BASE TABLE InnoDB 600000 utf8mb4_general_ci | " +
				"products BASE TABLE InnoDB 2000 utf8mb4_general_ci"},
		{"SELECT COLUMN_NAME, COLUMN_DEFAULT, IS_NULLABLE, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, " +
			"NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_TYPE, COLUMN_KEY, EXTRA " +
			"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'main' AND TABLE_NAME = 'orders' ORDER BY ORDINAL_POSITION",
			"order_id NULL NO bigint NULL NULL 19 0 NULL NULL NULL bigint PRI  | " +
				"customer_id NULL NO int NULL NULL 10 0 NULL NULL NULL int MUL  | " +
				"product_id NULL NO int NULL NULL 10 0 NULL NULL NULL int MUL  | " +
				"quantity NULL NO smallint NULL NULL 5 0 NULL NULL NULL smallint   | " +
				"status NULL NO longtext 4294967295 4294967295 NULL NULL NULL utf8mb4 utf8mb4_general_ci longtext   | " +
				"ordered_at NULL NO timestamp NULL NULL NULL NULL 6 NULL NULL timestamp(6)   | " +
				"tags NULL YES json NULL NULL NULL NULL NULL NULL NULL json  "},
		{"SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'main' ORDER BY 1, 2",
			"customers PRIMARY 0 1 customer_id | orders PRIMARY 0 1 order_id | " +
				"orders orders_customer_id_customer_id_fkey 1 1 customer_id | orders orders_product_id_product_id_fkey 1 1 product_id | " +
				"products PRIMARY 0 1 product_id"},
		{"SELECT CONSTRAINT_NAME, TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME " +
			"FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = 'main' ORDER BY 2, 1",
			"PRIMARY customers customer_id NULL NULL NULL | PRIMARY orders order_id NULL NULL NULL | " +
				"orders_customer_id_customer_id_fkey orders customer_id main customers customer_id | " +
				"orders_product_id_product_id_fkey orders product_id main products product_id | PRIMARY products product_id NULL NULL NULL"},
		{"SELECT CONSTRAINT_NAME, UNIQUE_CONSTRAINT_NAME, UPDATE_RULE, DELETE_RULE, TABLE_NAME, REFERENCED_TABLE_NAME " +
			"FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'main' ORDER BY 1",
			"orders_customer_id_customer_id_fkey PRIMARY NO ACTION NO ACTION orders customers | " +
				"orders_product_id_product_id_fkey PRIMARY NO ACTION NO ACTION orders products"},
		{"SELECT count(*) FROM INFORMATION_SCHEMA.FILES", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if got := rows(t, c, tt.query); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
