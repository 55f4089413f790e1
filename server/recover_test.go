package server_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// TestServer_RecoversPanics: a panic injected into the server's code while
// it answers an HTTP request or a MySQL query costs that request or query
// an error and nothing else: it is logged, counted, and the same endpoint
// answers the next request, on the same MySQL connection too.
func TestServer_RecoversPanics(t *testing.T) {
	mem := testutil.NewTrapAllocator()
	var log syncbuf.Buffer
	srv := testutil.StartServer(t, server.Config{Allocator: mem, HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(&log, nil))})

	t.Run("http", func(t *testing.T) {
		before, _ := testutil.Metric(t, "quiver_http_panics_total", nil)
		query := map[string]string{"sql": "SELECT range FROM range(10)"}
		mem.Arm("console.(*Console).stream")
		resp := consolePost(t, srv, "/api/query", query)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "internal error") {
			t.Errorf("query that panicked: got %s %q, want 500 and an internal error", resp.Status, body)
		}
		if !mem.Fired() {
			t.Fatal("the trap did not go off")
		}
		if after, _ := testutil.Metric(t, "quiver_http_panics_total", nil); after != before+1 {
			t.Errorf("quiver_http_panics_total: got %v, want %v", after, before+1)
		}
		resp = consolePost(t, srv, "/api/query", query)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("next query: got %s, want 200", resp.Status)
		}
		r, err := http.Get("http://" + srv.HTTPAddr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("/healthz: got %s, want 200", r.Status)
		}
		wantLogged(t, &log, "recovered a panic serving an HTTP request", "console.(*Console).stream")
	})

	t.Run("mysql", func(t *testing.T) {
		db, err := sql.Open("mysql", "root@tcp("+srv.MySQLAddr+")/")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		before, _ := testutil.Metric(t, "quiver_mysql_panics_total", nil)
		mem.Arm("mysqlwire.")
		_, err = conn.ExecContext(ctx, "SELECT range FROM range(10)")
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1105 || !strings.Contains(me.Message, "injected panic") {
			t.Errorf("query that panicked: got %v, want error 1105 with the panic", err)
		}
		if !mem.Fired() {
			t.Fatal("the trap did not go off")
		}
		if after, _ := testutil.Metric(t, "quiver_mysql_panics_total", nil); after != before+1 {
			t.Errorf("quiver_mysql_panics_total: got %v, want %v", after, before+1)
		}
		wantLogged(t, &log, "mysql handler panic", "mysqlwire.")
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM range(10)").Scan(&n); err != nil || n != 10 {
			t.Errorf("the connection's next query: got %d, %v; want 10", n, err)
		}
	})
}

// wantLogged checks that log holds an error record with msg whose stack
// shows where.
func wantLogged(t *testing.T, log *syncbuf.Buffer, msg, where string) {
	t.Helper()
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, msg) && strings.Contains(line, "stack=") && strings.Contains(line, where) {
			return
		}
	}
	t.Errorf("log: got %q, want an error %q with a stack through %s", log.String(), msg, where)
}
