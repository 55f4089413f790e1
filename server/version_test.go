package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/internal/version"
	"github.com/quiverdata/quiver/server"
)

// TestServer_Version: /healthz, Flight SQL's SqlInfo, the MySQL handshake
// and the console all say which quiver is serving, the same version.
func TestServer_Version(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0"})
	v := version.Get()
	ctx := context.Background()

	getJSON := func(t *testing.T, path string, into any) {
		t.Helper()
		resp, err := http.Get("http://" + srv.HTTPAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	t.Run("healthz", func(t *testing.T) {
		var got struct {
			Status, Version, Commit, DuckDB string
		}
		getJSON(t, "/healthz", &got)
		if got.Status != "ok" || got.Version != v.Version || got.Commit != v.Commit || got.DuckDB != v.DuckDB {
			t.Errorf("/healthz = %+v, want ok, %s, %s, %s", got, v.Version, v.Commit, v.DuckDB)
		}
	})
	t.Run("console", func(t *testing.T) {
		var got struct{ Version string }
		getJSON(t, "/api/session", &got)
		if got.Version != v.Short() {
			t.Errorf("/api/session version = %q, want %q", got.Version, v.Short())
		}
	})
	t.Run("flight sql", func(t *testing.T) {
		c := testutil.Dial(t, srv, client.Config{})
		cctx := c.Context(ctx)
		info, err := c.SQL().GetSqlInfo(cctx, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerVersion})
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := c.SQL().DoGet(cctx, info.GetEndpoint()[0].GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		got := map[uint32]string{}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			ids := rec.Column(0).(*array.Uint32)
			vals := rec.Column(1).(*array.DenseUnion)
			for i := 0; i < int(rec.NumRows()); i++ {
				if s, ok := vals.Field(vals.ChildID(i)).(*array.String); ok {
					got[ids.Value(i)] = s.Value(int(vals.ValueOffset(i)))
				}
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		if name := got[uint32(flightsql.SqlInfoFlightSqlServerName)]; name != "quiver" {
			t.Errorf("server name %q, want quiver", name)
		}
		if ver := got[uint32(flightsql.SqlInfoFlightSqlServerVersion)]; !strings.Contains(ver, v.Short()) || !strings.Contains(ver, v.DuckDB) {
			t.Errorf("server version %q, want it to hold %q and DuckDB's %s", ver, v.Short(), v.DuckDB)
		}
	})
	t.Run("mysql", func(t *testing.T) {
		db := mysqlDB(t, srv, "main")
		var got string
		if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := "8.0.33-quiver-" + v.Version; got != want {
			t.Errorf("VERSION() = %q, want %q", got, want)
		}
	})
}
