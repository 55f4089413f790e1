package flightsql_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/auth/authtest"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// users are the accounts the auth tests configure.
var users = []server.UserSpec{
	{Name: "admin", Password: "admin-pw", Role: auth.RoleAdmin},
	{Name: "writer", Password: "writer-pw", Role: auth.RoleReadWrite},
	{Name: "reader", Password: "reader-pw", Role: auth.RoleReadOnly},
}

// dial connects to srv with cfg, closing the client when the test ends.
// Unlike testutil.Dial it returns the error, for tests that expect one.
func dial(t *testing.T, srv *server.Server, cfg client.Config) (*client.Client, error) {
	t.Helper()
	cfg.Addr = srv.FlightAddr
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c, nil
}

// query runs sql and returns its row count, or the error of the call or
// of the stream.
func query(c *client.Client, sql string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return testutil.CountRows(ctx, c, sql)
}

// bearer is the bearer token a logged-in client sends.
func bearer(t *testing.T, c *client.Client) string {
	t.Helper()
	md, _ := metadata.FromOutgoingContext(c.Context(context.Background()))
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			return tok
		}
	}
	t.Fatalf("client holds no bearer token: %v", md)
	return ""
}

// withToken runs sql on a client that holds no credentials of its own,
// sending tok as its bearer token.
func withToken(c *client.Client, tok, sql string) (int64, error) {
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
	info, err := c.SQL().Execute(ctx, sql)
	if err != nil {
		return 0, err
	}
	rdr, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	return n, rdr.Err()
}

func code(err error) codes.Code { return status.Code(err) }

func TestAuth_Credentials(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Security: server.Security{Users: users}})
	tests := []struct {
		name     string
		user, pw string
		wantDial codes.Code // of the login
		wantCall codes.Code // of a query after it
	}{
		{"no credentials", "", "", codes.OK, codes.Unauthenticated},
		{"wrong password", "admin", "nope", codes.Unauthenticated, codes.OK},
		{"unknown user", "mallory", "admin-pw", codes.Unauthenticated, codes.OK},
		{"right password", "admin", "admin-pw", codes.OK, codes.OK},
		{"read-only user", "reader", "reader-pw", codes.OK, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := dial(t, srv, client.Config{User: tt.user, Password: tt.pw})
			if got := code(err); got != tt.wantDial {
				t.Fatalf("login: got %v (%v), want %v", got, err, tt.wantDial)
			}
			if err != nil {
				return
			}
			n, err := query(c, "SELECT 1")
			if got := code(err); got != tt.wantCall {
				t.Errorf("query: got %v (%v), want %v", got, err, tt.wantCall)
			}
			if err == nil && n != 1 {
				t.Errorf("query: got %d rows, want 1", n)
			}
		})
	}
}

func TestAuth_BearerToken(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Security: server.Security{Users: users}})
	c := testutil.Dial(t, srv, client.Config{User: "writer", Password: "writer-pw"})
	tok := bearer(t, c)

	// A second client with no credentials of its own uses the token.
	bare := testutil.Dial(t, srv, client.Config{})
	if n, err := withToken(bare, tok, "SELECT 42"); err != nil || n != 1 {
		t.Errorf("with token: got %d rows, %v; want 1 row", n, err)
	}
	// The token carries the user's role: a writer may write.
	if _, err := bare.SQL().ExecuteUpdate(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok),
		"CREATE TABLE by_token (a INT)"); err != nil {
		t.Errorf("create with a writer's token: %v", err)
	}
	// A forged or truncated token is refused.
	for _, bad := range []string{tok[:len(tok)-2], tok + "x", "garbage"} {
		_, err := withToken(bare, bad, "SELECT 1")
		if got := code(err); got != codes.Unauthenticated {
			t.Errorf("bad token %q: got %v (%v), want Unauthenticated", bad, got, err)
		}
	}
}

func TestAuth_ReadOnly(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Security: server.Security{Users: users}})
	admin := testutil.Dial(t, srv, client.Config{User: "admin", Password: "admin-pw"})
	if _, err := admin.Exec(context.Background(), "CREATE TABLE facts AS SELECT range AS n FROM range(10)"); err != nil {
		t.Fatal(err)
	}
	reader := testutil.Dial(t, srv, client.Config{User: "reader", Password: "reader-pw"})
	if n, err := query(reader, "SELECT * FROM facts"); err != nil || n != 10 {
		t.Errorf("select: got %d rows, %v; want 10", n, err)
	}
	ctx := reader.Context(context.Background())
	// Metadata is reading.
	info, err := reader.SQL().GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		t.Fatalf("get tables as reader: %v", err)
	}
	if _, rows := fetch(t, reader, info); len(rows) != 1 || rows[0][2] != "facts" {
		t.Errorf("tables as reader: got %q, want facts", rows)
	}
	for _, sql := range []string{
		"INSERT INTO facts VALUES (11)",
		"CREATE TABLE mine (a INT)",
		"DELETE FROM facts",
		"DROP TABLE facts",
		"UPDATE facts SET n = 0",
	} {
		t.Run(sql, func(t *testing.T) {
			_, err := reader.Exec(context.Background(), sql)
			wantCode(t, err, codes.PermissionDenied, "read-only")
			// Through Execute and through a prepared statement too.
			_, err = reader.SQL().Execute(ctx, sql)
			wantCode(t, err, codes.PermissionDenied, "read-only")
			if st, err := reader.SQL().Prepare(ctx, sql); err == nil {
				_, err = st.ExecuteUpdate(ctx)
				st.Close(ctx)
				wantCode(t, err, codes.PermissionDenied, "read-only")
			} else {
				wantCode(t, err, codes.PermissionDenied, "read-only")
			}
		})
	}
	if _, first := queryAll(t, admin, "SELECT count(*) FROM facts"); first[0] != "10" {
		t.Errorf("rows after the read-only user's attempts: got %s, want 10", first[0])
	}
}

// TestAuth_TokenSurvivesRestart checks a token issued before a restart is
// still good after it: the signing key lives next to the database file.
func TestAuth_TokenSurvivesRestart(t *testing.T) {
	cfg := server.Config{
		DB:       filepath.Join(t.TempDir(), "quiver.db"),
		Security: server.Security{Users: users},
	}
	first := testutil.StartServer(t, cfg)
	c := testutil.Dial(t, first, client.Config{User: "admin", Password: "admin-pw"})
	if _, err := c.Exec(context.Background(), "CREATE TABLE kept AS SELECT 1 AS a"); err != nil {
		t.Fatal(err)
	}
	tok := bearer(t, c)
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first.Shutdown(ctx)

	second := testutil.StartServer(t, cfg)
	bare := testutil.Dial(t, second, client.Config{})
	if n, err := withToken(bare, tok, "SELECT * FROM kept"); err != nil || n != 1 {
		t.Errorf("old token on the restarted server: got %d rows, %v; want 1 row", n, err)
	}
}

func TestAuth_TLS(t *testing.T) {
	ca := authtest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.WriteServerCert(t, dir)
	clientCert, clientKey := ca.WriteClientCert(t, dir, "analyst")
	other := authtest.NewCA(t)
	strangerCert, strangerKey := other.WriteClientCert(t, dir, "stranger")

	tls := testutil.StartServer(t, server.Config{Security: server.Security{
		Users: users, TLSCert: cert, TLSKey: key,
	}})
	mtls := testutil.StartServer(t, server.Config{Security: server.Security{
		Users: users, TLSCert: cert, TLSKey: key, TLSClientCA: ca.CertFile,
	}})
	login := client.Config{User: "reader", Password: "reader-pw"}
	with := func(f func(*client.Config)) client.Config {
		c := login
		f(&c)
		return c
	}
	tests := []struct {
		name string
		srv  *server.Server
		cfg  client.Config
		ok   bool
	}{
		{"tls with the CA", tls, with(func(c *client.Config) { c.TLS, c.CAFile = true, ca.CertFile }), true},
		{"tls plaintext client", tls, login, false},
		{"tls unknown CA", tls, with(func(c *client.Config) { c.TLS = true; c.CAFile = other.CertFile }), false},
		{"mtls with client cert", mtls, with(func(c *client.Config) {
			c.TLS, c.CAFile, c.CertFile, c.KeyFile = true, ca.CertFile, clientCert, clientKey
		}), true},
		{"mtls without client cert", mtls, with(func(c *client.Config) { c.TLS, c.CAFile = true, ca.CertFile }), false},
		{"mtls cert from another CA", mtls, with(func(c *client.Config) {
			c.TLS, c.CAFile, c.CertFile, c.KeyFile = true, ca.CertFile, strangerCert, strangerKey
		}), false},
		{"mtls plaintext client", mtls, login, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := dial(t, tt.srv, tt.cfg)
			var n int64
			if err == nil {
				n, err = query(c, "SELECT 1")
			}
			switch {
			case tt.ok && (err != nil || n != 1):
				t.Errorf("got %d rows, %v; want 1 row", n, err)
			case !tt.ok && err == nil:
				t.Errorf("got a connection, want it refused")
			case !tt.ok && code(err) != codes.Unavailable:
				t.Errorf("got %v (%v), want Unavailable", code(err), err)
			}
		})
	}
}
