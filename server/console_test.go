package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

// consoleGet and consolePost call a server's console API without users.
func consoleGet(t *testing.T, srv *server.Server, path string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + srv.HTTPAddr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s, %v", path, resp.Status, err)
	}
}

func consolePost(t *testing.T, srv *server.Server, path string, body any) *http.Response {
	t.Helper()
	var s struct{ CSRF string }
	consoleGet(t, srv, "/api/session", &s)
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "http://"+srv.HTTPAddr+path, bytes.NewReader(b))
	req.Header.Set("X-CSRF-Token", s.CSRF)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestConsole_LakeInSchemaTree: the console's schema tree lists the lake's
// tables, with their columns, as Flight's GetTables does.
func TestConsole_LakeInSchemaTree(t *testing.T) {
	dir := t.TempDir()
	lakeTable(t, dir, 100, 100, 1_000)
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "q.duckdb"), HTTPAddr: "127.0.0.1:0",
		Lake: &server.LakeConfig{Iceberg: lake.Config{Warehouse: "file://" + dir}},
	})
	var tree struct {
		Catalogs []struct {
			Name    string
			Schemas []struct {
				Name   string
				Tables []struct {
					Name    string
					Columns []struct{ Name, Type string }
				}
			}
		}
	}
	consoleGet(t, srv, "/api/schema", &tree)
	var got []string
	for _, c := range tree.Catalogs {
		for _, s := range c.Schemas {
			for _, tb := range s.Tables {
				if c.Name == "lake" {
					for _, col := range tb.Columns {
						got = append(got, s.Name+"."+tb.Name+"."+col.Name)
					}
				}
			}
		}
	}
	if !strings.Contains(strings.Join(got, ","), "quiver.events.") {
		t.Fatalf("lake tables in the console's tree: %v (tree %+v)", got, tree)
	}
}

// TestConsole_CancelMySQL: an admin cancels a MySQL query from the
// console's list; the client gets error 1317 naming who canceled it.
func TestConsole_CancelMySQL(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{MySQLAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Limits: server.Limits{Memory: 1 << 30}})
	db, err := sql.Open("mysql", "root@tcp("+srv.MySQLAddr+")/main")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const slow = "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3"
	errc := make(chan error, 1)
	go func() {
		var n int64
		errc <- db.QueryRowContext(context.Background(), slow).Scan(&n)
	}()
	var id string
	for deadline := time.Now().Add(30 * time.Second); id == ""; {
		var live struct {
			Queries []struct{ ID, Endpoint, SQL string }
		}
		consoleGet(t, srv, "/api/live", &live)
		for _, q := range live.Queries {
			if q.Endpoint == "mysql" && q.SQL == slow {
				id = q.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the MySQL query is not listed: %+v", live)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp := consolePost(t, srv, "/api/cancel", map[string]string{"id": id}); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("cancel: %s", resp.Status)
	}
	select {
	case err := <-errc:
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1317 || !strings.Contains(me.Message, "canceled by admin") {
			t.Fatalf("MySQL query after the cancel: %v, want error 1317", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the canceled MySQL query did not end")
	}
	// The connection is still usable.
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the cancel: %d, %v", one, err)
	}
}
