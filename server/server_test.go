package server_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// TestServer_FileSystemLocked checks SQL cannot read or write the server's
// files, nor turn access back on.
func TestServer_FileSystemLocked(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.csv")
	if err := os.WriteFile(secret, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A small memory limit makes the sort below spill to DuckDB's temp
	// directory, which must keep working with external access off. At
	// 200 MB the query still fails without a temp directory (checked with
	// SET temp_directory = ''); at 100 MB it ran out of memory once under
	// load even with one.
	srv := testutil.StartServer(t, server.Config{DB: filepath.Join(dir, "q.duckdb"), MemoryLimit: "200MB"})
	c := testutil.Dial(t, srv, client.Config{})
	ctx := context.Background()
	for _, sql := range []string{
		"SELECT * FROM read_csv('" + secret + "')",
		"COPY (SELECT 1) TO '" + filepath.Join(t.TempDir(), "out.csv") + "'",
		"SET enable_external_access = true",
		"ATTACH '" + filepath.Join(t.TempDir(), "other.duckdb") + "'",
		// Nor the database's own directory, where the token key lives.
		"COPY (SELECT 'forged') TO '" + filepath.Join(dir, "q.duckdb.tokenkey") + "'",
		"SELECT * FROM read_text('" + filepath.Join(dir, "q.duckdb.tokenkey") + "')",
	} {
		t.Run(sql, func(t *testing.T) {
			_, err := c.Exec(ctx, sql)
			if err == nil {
				t.Fatalf("got no error")
			}
			if code := status.Code(err); code == codes.OK || code == codes.Unavailable {
				t.Errorf("code: got %v (%v)", code, err)
			}
		})
	}
	// Ordinary SQL still works, checkpoints and spills to disk included.
	for _, sql := range []string{
		"CREATE TABLE ok AS SELECT i, 'v' || i AS s FROM range(3000000) t(i)",
		"CHECKPOINT",
		"SET memory_limit = '1GB'", // refused: the configuration is locked
		"SELECT count(DISTINCT s) FROM (SELECT s FROM ok ORDER BY s DESC)",
	} {
		_, err := c.Exec(ctx, sql)
		if locked := strings.HasPrefix(sql, "SET"); (err != nil) != locked {
			t.Errorf("%s: got %v, want error: %v", sql, err, locked)
		}
	}
}

func TestServer_HTTP(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{HTTPAddr: "127.0.0.1:0"})
	for path, want := range map[string]string{"/healthz": "ok", "/metrics": "quiver_engine_connections_open"} {
		resp, err := http.Get("http://" + srv.HTTPAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: got %d %q…, want 200 containing %q", path, resp.StatusCode, firstLine(string(body)), want)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestServer_RefusesOpenAddressWithoutUsers(t *testing.T) {
	_, err := server.Start(context.Background(), server.Config{DB: ":memory:", FlightAddr: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("got %v, want a refusal naming loopback", err)
	}
}

func TestServer_Demo(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Demo: true})
	c := testutil.Dial(t, srv, client.Config{})
	r, err := c.Query(context.Background(), "SELECT count(*) FROM orders o JOIN customers c USING (customer_id) JOIN products p USING (product_id)")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if got := r.RecordBatch().Column(0).ValueStr(0); got != "600000" {
		t.Errorf("joined orders: got %s, want 600000", got)
	}
}

func TestServer_MySQLAndFlightShareData(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", Security: server.Security{
		Users: []server.UserSpec{{Name: "u", Password: "pw", Role: auth.RoleAdmin}},
	}})
	c := testutil.Dial(t, srv, client.Config{User: "u", Password: "pw"})
	if _, err := c.Exec(context.Background(), "CREATE TABLE shared AS SELECT 7 AS v"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", "u:pw@tcp("+srv.MySQLAddr+")/main")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("SELECT v FROM shared").Scan(&v); err != nil || v != 7 {
		t.Errorf("mysql read of a Flight-created table: got %d, %v; want 7", v, err)
	}
	if _, err := sql.Open("mysql", "u:wrong@tcp("+srv.MySQLAddr+")/main"); err == nil {
		bad, _ := sql.Open("mysql", "u:wrong@tcp("+srv.MySQLAddr+")/main")
		defer bad.Close()
		if err := bad.Ping(); err == nil {
			t.Errorf("mysql with a wrong password: got no error")
		}
	}
}
