package server_test

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// holdQuery is the statement of the attack: one bound string parameter.
const holdQuery = "SELECT count(*) FROM (SELECT ?::VARCHAR AS v)"

// stringParams is rows parameter rows of one string of size bytes.
func stringParams(t *testing.T, rows, size int) arrow.RecordBatch {
	t.Helper()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	v := strings.Repeat("x", size)
	for range rows {
		b.Append(v)
	}
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(rows))
	t.Cleanup(rec.Release)
	return rec
}

// bindAndRun prepares holdQuery on c, binds params and runs it, leaving
// the statement open. It returns the error of the first step that failed.
func bindAndRun(ctx context.Context, c *client.Client, params arrow.RecordBatch) error {
	ctx = c.Context(ctx)
	st, err := c.SQL().Prepare(ctx, holdQuery)
	if err != nil {
		return err
	}
	st.SetParameters(params)
	info, err := st.Execute(ctx)
	if err != nil {
		return err
	}
	r, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
	}
	return r.Err()
}

// wantExhausted checks err is RESOURCE_EXHAUSTED naming flag.
func wantExhausted(t *testing.T, what string, err error, flag string) {
	t.Helper()
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), flag) {
		t.Fatalf("%s: %v, want RESOURCE_EXHAUSTED naming %s", what, err, flag)
	}
	t.Logf("%s: refused: %v", what, status.Convert(err).Message())
}

// waitHeld waits, at most 10 s, until the server's held bytes are want,
// and returns how long that took.
func waitHeld(t *testing.T, srv *server.Server, what string, want int64) time.Duration {
	t.Helper()
	start := time.Now()
	for srv.Holds.Bytes() != want {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s: %d bytes held after %v, want %d", what, srv.Holds.Bytes(), time.Since(start), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func heapMiB() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// TestServer_HoldsBounded is the bound-parameter attack: a readonly user
// prepares statement after statement and binds megabytes of strings to
// each, over two Flight connections and over MySQL, and opens
// transactions and held results. Each bound (per statement, per session,
// per user) is refused with RESOURCE_EXHAUSTED (MySQL errors 1153 and
// 1461) naming its flag, while another user goes on binding and querying;
// what is held never passes the budget's share; and when the attacker
// disconnects, the accounting is back to its idle value within seconds.
func TestServer_HoldsBounded(t *testing.T) {
	const mib = 1 << 20
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", Security: server.Security{Users: boundUsers},
		Limits: server.Limits{Memory: 1 << 30, Holds: admit.HoldLimits{
			Prepared: 6, UserPrepared: 10, Txns: 2, UserTxns: 3, Held: 2, UserHeld: 3,
			ParamBytes: 8 * mib, SessionParamBytes: 20 * mib, UserParamBytes: 30 * mib,
		}}})
	ctx := context.Background()
	// 10,000 rows of 400 bytes: 3.86 MiB bound to a statement.
	params := stringParams(t, 10_000, 400)
	victim := testutil.Dial(t, srv, client.Config{User: "victim", Password: "victimpw"})
	if err := bindAndRun(ctx, victim, params); err != nil {
		t.Fatalf("victim's bind before the attack: %v", err)
	}
	idle := srv.Holds.Bytes()
	t.Logf("held before the attack: %d bytes (the victim's statement); Go heap %.0f MiB; the budget's share %d MiB",
		idle, heapMiB(), srv.Budget.Held/mib)
	peak := idle
	note := func() { peak = max(peak, srv.Holds.Bytes()) }

	m1 := testutil.Dial(t, srv, client.Config{User: "mallory", Password: "mallorypw"})
	m2 := testutil.Dial(t, srv, client.Config{User: "mallory", Password: "mallorypw"})
	t.Run("Flight", func(t *testing.T) {
		for i := range 5 {
			if err := bindAndRun(ctx, m1, params); err != nil {
				t.Fatalf("statement %d of a session: %v", i+1, err)
			}
			note()
		}
		wantExhausted(t, "the sixth 3.86 MiB statement of a session", bindAndRun(ctx, m1, params), "--max-session-param-bytes")
		wantExhausted(t, "the seventh prepared statement of a session", bindAndRun(ctx, m1, params), "--max-prepared")
		wantExhausted(t, "9.2 MiB bound to one statement", bindAndRun(ctx, m2, stringParams(t, 24_000, 400)), "--max-param-bytes")
		for i := range 2 {
			if err := bindAndRun(ctx, m2, params); err != nil {
				t.Fatalf("statement %d of another session of the user: %v", i+1, err)
			}
			note()
		}
		// Prepared, each of them: six in the first session, four in the
		// second.
		wantExhausted(t, "the user's eighth 3.86 MiB statement", bindAndRun(ctx, m2, params), "--max-user-param-bytes")
		_, err := m2.SQL().Prepare(m2.Context(ctx), "SELECT 1")
		wantExhausted(t, "the user's eleventh prepared statement", err, "--max-user-prepared")
		for i := range 2 {
			if _, err := m1.SQL().Execute(m1.Context(ctx), "SELECT 1; SELECT 2"); err != nil {
				t.Fatalf("held result %d: %v", i+1, err)
			}
		}
		_, err = m1.SQL().Execute(m1.Context(ctx), "SELECT 1; SELECT 2")
		wantExhausted(t, "a third held result in a session", err, "--max-held")
		note()
		if held := srv.Holds.Bytes(); held > srv.Budget.Held {
			t.Errorf("%d bytes held, past the budget's share of %d", held, srv.Budget.Held)
		}
		// The victim is not shut out.
		if err := bindAndRun(ctx, victim, params); err != nil {
			t.Fatalf("victim's bind during the attack: %v", err)
		}
		if n, err := testutil.CountRows(ctx, victim, "SELECT 42"); err != nil || n != 1 {
			t.Fatalf("victim's query during the attack: %d rows, %v", n, err)
		}
		t.Logf("held at the attack's peak: %.1f MiB; Go heap %.0f MiB", float64(peak)/mib, heapMiB())
		victimHeld := srv.Holds.Bytes() - peak
		m1.Close()
		m2.Close()
		took := waitHeld(t, srv, "after the attacker disconnected", idle+victimHeld)
		runtime.GC()
		t.Logf("back to %d bytes held %v after the attacker disconnected; Go heap %.0f MiB", srv.Holds.Bytes(), took.Round(time.Millisecond), heapMiB())
		idle = srv.Holds.Bytes()
	})
	t.Run("Flight transactions", func(t *testing.T) {
		m := testutil.Dial(t, srv, client.Config{User: "mallory", Password: "mallorypw"})
		var txns []*flightsql.Txn
		for range 2 {
			tx, err := m.SQL().BeginTransaction(m.Context(ctx))
			if err != nil {
				t.Fatal(err)
			}
			txns = append(txns, tx)
		}
		_, err := m.SQL().BeginTransaction(m.Context(ctx))
		wantExhausted(t, "a third transaction in a session", err, "--max-txns")
		for _, tx := range txns {
			if err := tx.Rollback(m.Context(ctx)); err != nil {
				t.Fatal(err)
			}
		}
		waitHeld(t, srv, "after the rollbacks", idle)
	})
	t.Run("MySQL", func(t *testing.T) {
		for _, tc := range []struct {
			name, dsn string
		}{
			{"parameters in the execute packet", ""},
			// The driver sends a parameter over a quarter of
			// maxAllowedPacket with COM_STMT_SEND_LONG_DATA.
			{"parameters as long data", "?maxAllowedPacket=1048576"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				db, err := sql.Open("mysql", "mallory:mallorypw@tcp("+srv.MySQLAddr+")/"+tc.dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				var stmts []*sql.Stmt
				for range 6 {
					st, err := conn.PrepareContext(ctx, "SELECT length(?)")
					if err != nil {
						t.Fatal(err)
					}
					stmts = append(stmts, st)
				}
				note()
				_, err = conn.PrepareContext(ctx, "SELECT length(?)")
				var me *mysql.MySQLError
				if !errors.As(err, &me) || me.Number != 1461 || !strings.Contains(me.Message, "--max-prepared") {
					t.Fatalf("a seventh prepared statement: %v, want error 1461 naming --max-prepared", err)
				}
				var n int64
				if err := stmts[0].QueryRowContext(ctx, strings.Repeat("y", 3*mib)).Scan(&n); err != nil || n != 3*mib {
					t.Fatalf("3 MiB parameter: %d, %v", n, err)
				}
				err = stmts[1].QueryRowContext(ctx, strings.Repeat("y", 9*mib)).Scan(&n)
				if !errors.As(err, &me) || me.Number != 1153 || !strings.Contains(me.Message, "--max-param-bytes") {
					t.Fatalf("9 MiB parameter: %v, want error 1153 naming --max-param-bytes", err)
				}
				t.Logf("refused: %v", err)
				if err := stmts[2].QueryRowContext(ctx, "z").Scan(&n); err != nil || n != 1 {
					t.Fatalf("the session after the refusal: %d, %v", n, err)
				}
				for _, st := range stmts {
					st.Close()
				}
				conn.Close()
				db.Close()
				took := waitHeld(t, srv, "after the MySQL client disconnected", idle)
				t.Logf("back to %d bytes held %v after the MySQL client disconnected", idle, took.Round(time.Millisecond))
			})
		}
	})
	if peak > srv.Budget.Held {
		t.Errorf("peak %d bytes held, past the budget's share of %d", peak, srv.Budget.Held)
	}
}
