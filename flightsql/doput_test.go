package flightsql_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"

	"github.com/quiverdata/quiver/server"
)

// TestServer_DoPutRaw: a DoPut whose first message names no command, or
// one that is empty, garbage or not an upload's, is refused with
// InvalidArgument before arrow-go's router sees it (a schema with no
// descriptor made the router dereference nil and took the process, and
// Flight, MySQL and HTTP with it, down); so is an upload whose messages
// do not decode, or whose batch is laid out otherwise than its schema
// says, as rows to ingest or as a prepared statement's parameters (DuckDB
// read outside its buffers and crashed; a prepared query kept them bound).
// Every endpoint answers after each.
func TestServer_DoPutRaw(t *testing.T) {
	rs := startRawServer(t, server.Config{MySQLAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
	seeds := rawSeeds()
	my, err := sql.Open("mysql", "root@tcp("+rs.srv.MySQLAddr+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { my.Close() })
	tests := []struct {
		seed     string
		wantCode codes.Code
		wantMsg  string
	}{
		{"schema, no descriptor", codes.InvalidArgument, "the first message carries no flight descriptor"},
		{"descriptor on a later message", codes.InvalidArgument, "the first message carries no flight descriptor"},
		{"empty command", codes.InvalidArgument, "the flight descriptor's command is empty"},
		{"path descriptor", codes.InvalidArgument, "the flight descriptor is of type PATH"},
		{"garbage command", codes.InvalidArgument, "the flight descriptor's command"},
		{"unknown Any", codes.InvalidArgument, `command "type.googleapis.com/quiver.NoSuchCommand" cannot be read`},
		{"not a DoPut command", codes.InvalidArgument, "CommandGetCatalogs is not a command DoPut takes"},
		{"no messages", codes.InvalidArgument, "the stream ended before its first message"},
		{"garbage IPC", codes.InvalidArgument, "malformed IPC message header"},
		{"nested schema, flat batch", codes.InvalidArgument, "the client's stream is malformed"},
		{"prepared list update, flat batch", codes.InvalidArgument, "malformed parameters"},
		{"prepared query, flat batch", codes.InvalidArgument, "malformed parameters"},
		{"prepared update", codes.OK, ""},
		{"prepared list update", codes.OK, ""},
		{"prepared query", codes.OK, ""},
		{"ingest", codes.OK, ""},
		{"update", codes.OK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.seed, func(t *testing.T) {
			in, ok := seeds[tt.seed]
			if !ok {
				t.Fatalf("no seed %q", tt.seed)
			}
			err := rs.call(t, in)
			if tt.wantCode == codes.OK {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
			} else {
				wantCode(t, err, tt.wantCode, tt.wantMsg)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if n, _ := queryAll(t, rs.client, "SELECT 1"); n != 1 {
				t.Errorf("flight after the call: got %d rows, want 1", n)
			}
			if err := my.PingContext(ctx); err != nil {
				t.Errorf("mysql after the call: %v", err)
			}
			resp, err := http.Get("http://" + rs.srv.HTTPAddr + "/healthz")
			if err != nil {
				t.Fatalf("http after the call: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("/healthz after the call: got %s %q, want 200", resp.Status, body)
			}
		})
	}
}
