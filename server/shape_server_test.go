package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/go-sql-driver/mysql"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
)

// byShape reads how many queries the classifier put in the small lane by
// their shape.
func byShape(t *testing.T) float64 {
	t.Helper()
	v, _ := testutil.Metric(t, "quiver_admit_classified_total", map[string]string{"lane": "small", "source": "shape"})
	return v
}

// TestServe_PointLookupsByShape runs point lookups by other ids over
// Flight SQL and MySQL: once two of a shape ran small, the next are
// classified by their shape, not planned, and each returns its own row.
func TestServe_PointLookupsByShape(t *testing.T) {
	srv, _ := startRoleServer(t)
	ctx := context.Background()
	c := testutil.Dial(t, srv, client.Config{User: "admin", Password: "adminpw"})
	before := byShape(t)
	for id := range 6 {
		r, err := c.Query(ctx, fmt.Sprintf("SELECT n FROM facts WHERE n = %d", id))
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for r.Next() {
			col := r.RecordBatch().Column(0).(*array.Int64)
			for i := range col.Len() {
				got = append(got, col.Value(i))
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Release()
		if len(got) != 1 || got[0] != int64(id) {
			t.Fatalf("id %d: got %v", id, got)
		}
	}
	// Two runs teach the shape; the other four are classified by it.
	if got := byShape(t) - before; got < 4 {
		t.Errorf("%v of 6 Flight point lookups classified by their shape, want at least 4", got)
	}

	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "admin", "adminpw", "tcp", srv.MySQLAddr, "main"
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	before = byShape(t)
	for id := range 5 {
		var n int64
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT n FROM facts WHERE n > %d ORDER BY n LIMIT 1", id)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != int64(id+1) {
			t.Fatalf("after %d: got %d", id, n)
		}
	}
	if got := byShape(t) - before; got < 3 {
		t.Errorf("%v of 5 MySQL lookups classified by their shape, want at least 3", got)
	}
}
