package server_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// boundUsers are a hostile readonly user and a victim.
var boundUsers = []server.UserSpec{
	{Name: "admin", Password: "adminpw", Role: auth.RoleAdmin},
	{Name: "mallory", Password: "mallorypw", Role: auth.RoleReadOnly},
	{Name: "victim", Password: "victimpw", Role: auth.RoleReadOnly},
}

// userDB opens a MySQL pool as user (password user+"pw") on srv.
func userDB(t *testing.T, srv *server.Server, user string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", user+":"+user+"pw@tcp("+srv.MySQLAddr+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestServer_QueryTimeoutCeiling checks that the server's --query-timeout
// is a ceiling: a readonly user's session that asks for a longer timeout
// (Flight's query_timeout option, MySQL's max_execution_time) still has
// its scan stopped at the server's timeout, with an error that names it,
// while a session that asks for a shorter one gets it.
func TestServer_QueryTimeoutCeiling(t *testing.T) {
	const serverTimeout = 2 * time.Second
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", Security: server.Security{Users: boundUsers},
		Limits: server.Limits{QueryTimeout: serverTimeout, Memory: 1 << 30}})
	c := testutil.Dial(t, srv, client.Config{User: "mallory", Password: "mallorypw"})
	my := userDB(t, srv, "mallory")

	tests := []struct {
		name   string
		flight bool
		value  string // query_timeout, or max_execution_time in ms
		// wantSource is what the timeout error names.
		wantSource string
	}{
		{"Flight query_timeout above the server's", true, "10m", "--query-timeout"},
		{"Flight query_timeout in milliseconds above the server's", true, "600000", "--query-timeout"},
		{"Flight query_timeout below the server's", true, "300ms", "query_timeout option"},
		{"MySQL max_execution_time above the server's", false, "600000", "--query-timeout"},
		{"MySQL max_execution_time far above the server's", false, "99999999999999999999", "--query-timeout"},
		{"MySQL max_execution_time below the server's", false, "300", "max_execution_time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Without the ceiling the scan would run for minutes: the
			// client gives up well before, and the error then names no
			// server limit.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			var err error
			if tc.flight {
				sctx, res := testutil.SessionCookie(t, c, "query_timeout", tc.value)
				if len(res.Errors) > 0 {
					t.Fatalf("query_timeout=%s refused: %v", tc.value, res.Errors)
				}
				sctx, cancel := context.WithTimeout(sctx, 10*time.Second)
				defer cancel()
				_, err = testutil.CountRows(sctx, c, longQuery)
				if status.Code(err) != codes.DeadlineExceeded {
					t.Fatalf("got %v, want DEADLINE_EXCEEDED", err)
				}
			} else {
				conn, cerr := my.Conn(ctx)
				if cerr != nil {
					t.Fatal(cerr)
				}
				defer conn.Close()
				if _, err := conn.ExecContext(ctx, "SET max_execution_time = "+tc.value); err != nil {
					t.Fatal(err)
				}
				var n int64
				err = conn.QueryRowContext(ctx, longQuery).Scan(&n)
				var me *mysql.MySQLError
				if !errors.As(err, &me) || me.Number != 3024 {
					t.Fatalf("got %v, want error 3024", err)
				}
			}
			took := time.Since(start)
			t.Logf("stopped after %v: %v", took.Round(time.Millisecond), err)
			if !strings.Contains(err.Error(), tc.wantSource) {
				t.Errorf("error %q does not name %s", err, tc.wantSource)
			}
			if tc.wantSource == "--query-timeout" && !strings.Contains(err.Error(), serverTimeout.String()) {
				t.Errorf("error %q does not give the server's timeout %s", err, serverTimeout)
			}
		})
	}

	t.Run("MySQL variables show the server's ceiling", func(t *testing.T) {
		ctx := context.Background()
		conn, err := my.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, tc := range []struct{ set, name, want string }{
			{"SET max_execution_time = 600000", "max_execution_time", "2000"},
			{"SET SESSION max_execution_time = 700", "max_execution_time", "700"},
			{"SET wait_timeout = 99999999", "wait_timeout", "28800"},
			{"SET @@session.interactive_timeout = 60", "interactive_timeout", "60"},
			{"SET net_write_timeout = 100000", "net_write_timeout", "60"},
		} {
			if _, err := conn.ExecContext(ctx, tc.set); err != nil {
				t.Fatalf("%s: %v", tc.set, err)
			}
			var got string
			if err := conn.QueryRowContext(ctx, "SELECT @@"+tc.name).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("after %s: @@%s = %s, want %s", tc.set, tc.name, got, tc.want)
			}
		}
	})
}

// TestServer_SmallLaneKeptFromHeavyLookalikes has a readonly user run
// four statements at once that look small and run for seconds (a
// recursive CTE, which DuckDB estimates at a thousand rows; an
// expression whose cost no estimate shows), over Flight and MySQL, on a
// server with four run slots, two kept for small statements. Another
// user's point query must still run in the small lane, and finish while
// the four are still running.
func TestServer_SmallLaneKeptFromHeavyLookalikes(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", Security: server.Security{Users: boundUsers},
		Limits: server.Limits{MaxRunning: 4, QueueTimeout: 20 * time.Second, Memory: 1 << 30}})
	if c := srv.Admission.Config(); c.Running != 4 || c.Reserved != 2 {
		t.Fatalf("admission config %+v, want 4 running, 2 kept for small statements", c)
	}
	ctx := context.Background()
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "adminpw"})
	if _, err := admin.Exec(ctx, "CREATE TABLE pts AS SELECT range AS id, 'v' || range AS v FROM range(100000)"); err != nil {
		t.Fatal(err)
	}
	mallory := testutil.Dial(t, srv, client.Config{User: "mallory", Password: "mallorypw"})
	malloryDB := userDB(t, srv, "mallory")
	victim := testutil.Dial(t, srv, client.Config{User: "victim", Password: "victimpw"})
	victimDB := userDB(t, srv, "victim")
	const point = "SELECT v FROM pts WHERE id = 4242"

	// The victim's point query, idle, for the log.
	for range 3 {
		start := time.Now()
		if n, err := testutil.CountRows(ctx, victim, point); err != nil || n != 1 {
			t.Fatalf("idle point query: %d rows, %v", n, err)
		}
		t.Logf("idle point query: %v", time.Since(start).Round(time.Microsecond))
	}

	for _, tc := range []struct {
		name, sql string
		mysql     bool
	}{
		{"recursive CTE over Flight", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < 2000000) SELECT max(n) FROM r", false},
		{"recursive CTE over MySQL", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < 2000000) SELECT max(n) FROM r", true},
		{"a cost no estimate shows, over Flight", "SELECT count(*) FROM range(300000) WHERE md5(repeat(range::VARCHAR, 5000)) < 'z'", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			actx, stop := context.WithCancel(ctx)
			defer stop()
			type result struct {
				took time.Duration
				err  error
			}
			attacks := make(chan result, 4)
			for range 4 {
				go func() {
					start := time.Now()
					var err error
					if tc.mysql {
						var n int64
						err = malloryDB.QueryRowContext(actx, tc.sql).Scan(&n)
					} else {
						_, err = testutil.CountRows(actx, mallory, tc.sql)
					}
					attacks <- result{time.Since(start), err}
				}()
			}
			waitStats(t, srv, "the four statements to run", func(s admit.Stats) bool { return s.Running[admit.Small]+s.Running[admit.Bulk] >= 2 })
			time.Sleep(500 * time.Millisecond) // past the small lane's hold
			for _, ep := range []string{"flight", "mysql"} {
				start := time.Now()
				var err error
				if ep == "flight" {
					_, err = testutil.CountRows(ctx, victim, point)
				} else {
					var v string
					err = victimDB.QueryRowContext(ctx, point).Scan(&v)
				}
				took := time.Since(start)
				t.Logf("victim's point query over %s beside them: %v (%v)", ep, took.Round(time.Microsecond), err)
				if err != nil {
					t.Fatalf("victim's point query over %s: %v", ep, err)
				}
				select {
				case r := <-attacks:
					t.Fatalf("an attacking statement ended (after %v: %v) before the victim's point query over %s, which took %v", r.took, r.err, ep, took)
				default:
				}
			}
			stop()
			for range 4 {
				r := <-attacks
				t.Logf("attacking statement: %v (%v)", r.took.Round(time.Millisecond), r.err)
			}
			waitStats(t, srv, "the attack to end", func(s admit.Stats) bool { return s.Open == [2]int{} && s.Queued == 0 })
		})
	}
}
