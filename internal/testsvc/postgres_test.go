package testsvc

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// TestPostgres starts a real PostgreSQL and checks that the URL it returns
// reaches it on loopback with a password, and that its user may create
// tables in the database, as an Iceberg SQL catalog does.
func TestPostgres(t *testing.T) {
	t.Parallel()
	pgURL := StartPostgres(t)
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "postgresql" || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.Query().Get("sslmode") != "disable" {
		t.Fatalf("URL %s is not postgresql://…@127.0.0.1:PORT/…?sslmode=disable", pgURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(pgURL)))
	defer db.Close()
	var user, dbName, version string
	if err := db.QueryRowContext(ctx, "SELECT current_user, current_database(), version()").Scan(&user, &dbName, &version); err != nil {
		t.Fatalf("query: %v", err)
	}
	if user != u.User.Username() || dbName != strings.TrimPrefix(u.Path, "/") || !strings.HasPrefix(version, "PostgreSQL ") {
		t.Fatalf("connected as %q to %q (%s), want %s", user, dbName, version, pgURL)
	}
	t.Logf("%s", version)

	if _, err := db.ExecContext(ctx, "CREATE TABLE t (k text PRIMARY KEY, v bigint NOT NULL)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES ($1, $2), ($3, $4)", "a", 1, "b", 2); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var sum int64
	if err := db.QueryRowContext(ctx, "SELECT sum(v) FROM t").Scan(&sum); err != nil || sum != 3 {
		t.Fatalf("sum = %d, %v; want 3", sum, err)
	}

	// The password is checked.
	bad := *u
	bad.User = url.UserPassword(u.User.Username(), "wrong")
	wrong := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(bad.String())))
	defer wrong.Close()
	if err := wrong.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("ping with a wrong password = %v, want an authentication error", err)
	}
}
