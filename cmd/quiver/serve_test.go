package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/server"
)

// parseUsers parses the user flags of a serve command line.
func parseUsers(args []string) (map[string]auth.Role, error) {
	fs, f := newServeFlags()
	if _, err := parseFlags(discard(), fs, args); err != nil {
		return nil, err
	}
	specs, err := f.users.specs()
	if err != nil {
		return nil, err
	}
	got := map[string]auth.Role{}
	for _, s := range specs {
		got[s.Name+":"+s.Password] = s.Role
	}
	return got, nil
}

func TestServe_UserFlagsBindToPrecedingUser(t *testing.T) {
	const (
		ro = auth.RoleReadOnly
		rw = auth.RoleReadWrite
		ad = auth.RoleAdmin
	)
	tests := []struct {
		name    string
		args    string
		want    map[string]auth.Role // "name:password" → role
		wantErr string
	}{
		{name: "issue example",
			args: "--user admin --password adminpw --user bi --password bipw --role readonly --user etl --password etlpw --role readwrite",
			want: map[string]auth.Role{"admin:adminpw": ad, "bi:bipw": ro, "etl:etlpw": rw}},
		{name: "role on the first user",
			args: "--user bi --password bipw --role readonly --user admin --password adminpw",
			want: map[string]auth.Role{"bi:bipw": ro, "admin:adminpw": ad}},
		{name: "role on the middle user only",
			args: "--user a --password pa --user b --password pb --role rw --user c --password pc",
			want: map[string]auth.Role{"a:pa": ad, "b:pb": rw, "c:pc": ad}},
		{name: "role on the last user only",
			args: "--user a --password pa --user b --password pb --user c --password pc --role ro",
			want: map[string]auth.Role{"a:pa": ad, "b:pb": ad, "c:pc": ro}},
		{name: "role before password",
			args: "--user a --role readonly --password pa --user b --role readwrite --password pb",
			want: map[string]auth.Role{"a:pa": ro, "b:pb": rw}},
		{name: "other flags in between",
			args: "--user a --threads 2 --password pa --db x.duckdb --role ro --user b --password pb",
			want: map[string]auth.Role{"a:pa": ro, "b:pb": ad}},
		{name: "equals form",
			args: "--user=a --password=pa --role=readwrite",
			want: map[string]auth.Role{"a:pa": rw}},
		{name: "no users", args: "--threads 2", want: map[string]auth.Role{}},
		{name: "role before any user", args: "--role readonly --user a --password pa", wantErr: "--role must follow the --user"},
		{name: "password before any user", args: "--password pa --user a", wantErr: "--password must follow the --user"},
		{name: "two roles for one user", args: "--user a --password pa --role ro --role admin", wantErr: "user a has two --role flags"},
		{name: "two passwords for one user", args: "--user a --password pa --password pb", wantErr: "user a has two --password flags"},
		{name: "user without password", args: "--user a --password pa --user b --role ro", wantErr: "user b has no --password"},
		{name: "unknown role", args: "--user a --password pa --role root", wantErr: `parse role "root"`},
		{name: "empty user name", args: "--user= --password pa", wantErr: "empty user name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseUsers(strings.Fields(tt.args))
			if tt.wantErr != "" {
				var ue *usageError
				if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want a usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got users %v, want %v", got, tt.want)
			}
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("user %s: got role %v, want %v (all: %v)", k, got[k], want, got)
				}
			}
		})
	}
}

// TestServe_BadUserFlagsExit2 checks the whole command: a misplaced --role
// exits 2 with a one-line reason naming the flag, before anything starts.
func TestServe_BadUserFlagsExit2(t *testing.T) {
	code, _, errOut := runQuiver(t, "serve", "--db", ":memory:", "--role", "readonly", "--user", "a", "--password", "p")
	if code != 2 || !strings.Contains(errOut, "--role must follow the --user") {
		t.Errorf("got exit %d, %q; want 2 and a reason naming --role", code, errOut)
	}
}

// TestServe_BadLakeFlagsExit2 checks the lake and replica flags (and a
// limit's) refuse bad values with exit 2 and a reason, before anything starts.
func TestServe_BadLakeFlagsExit2(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--lake", "ftp://x/y"}, "--lake"},
		{[]string{"--catalog", "sqlite:///tmp/c.db"}, "--catalog needs --lake"},
		{[]string{"--lake", "file:///tmp/quiver-no-lake", "--lake-part-mb", "0"}, "--lake-part-mb must be positive"},
		{[]string{"--lake", "file:///tmp/quiver-no-lake", "--lake-cache-mb", "-1"}, "--lake-cache-mb"},
		{[]string{"--peers", "not-an-address"}, `"not-an-address" is not HOST:PORT`},
		{[]string{"--peers", "@/nonexistent/peers"}, "--peers @/nonexistent/peers"},
		{[]string{"--bulk-yield", "-1ms"}, "--bulk-yield not negative"},
		{[]string{"--max-param-bytes", "1KB"}, "--max-param-bytes"},
		{[]string{"--max-session-param-bytes", "lots"}, "--max-session-param-bytes"},
		{[]string{"--max-prepared", "0"}, "--max-prepared"},
		{[]string{"--max-user-txns", "-1"}, "--max-user-txns"},
		{[]string{"--txn-idle-timeout", "0"}, "--txn-idle-timeout must be positive"},
		{[]string{"--max-statement-depth", "0"}, "--max-statement-depth"},
		{[]string{"--max-statement-terms", "-5"}, "--max-statement-terms"},
		{[]string{"--mysql-require-tls"}, "--mysql-require-tls needs --tls-cert"},
		{[]string{"--mysql-require-tls=maybe"}, "want true or false"},
	}
	for _, tc := range cases {
		args := append([]string{"serve", "--db", ":memory:"}, tc.args...)
		code, _, errOut := runQuiver(t, args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: got exit %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// serveMemory runs serve on an in-memory database with Flight SQL alone,
// on a free port, and flags, and returns a client of it; both stop when
// the test ends.
func serveMemory(t *testing.T, flags ...string) *client.Client {
	t.Helper()
	srv, stop := startServe(t, append([]string{"--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "", "--http", ""}, flags...)...)
	t.Cleanup(stop)
	c, err := client.Dial(context.Background(), client.Config{Addr: srv.FlightAddr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestServe_TxnIdleTimeout checks --txn-idle-timeout reaches the Flight
// service: a transaction idle past it is rolled back and its handle says
// so, naming the flag.
func TestServe_TxnIdleTimeout(t *testing.T) {
	c := serveMemory(t, "--txn-idle-timeout", "150ms")
	ctx := context.Background()
	txn, err := c.SQL().BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	_, err = txn.ExecuteUpdate(ctx, "CREATE TABLE t (a INTEGER)")
	if st, _ := status.FromError(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "after 150ms without a call (--txn-idle-timeout)") {
		t.Errorf("a call after the idle timeout: got %v, want FailedPrecondition naming 150ms and --txn-idle-timeout", err)
	}
}

// TestServe_ShapeLimits checks the limits on a statement's shape reach
// the engine: a statement past one is refused with an error naming it,
// and one a raised limit allows runs.
func TestServe_ShapeLimits(t *testing.T) {
	c := serveMemory(t, "--max-statement-depth", "300", "--max-statement-terms", "3")
	ctx := context.Background()
	if _, err := c.Exec(ctx, "SELECT "+strings.Repeat("(", 200)+"1"+strings.Repeat(")", 200)); err != nil {
		t.Errorf("depth 200 under --max-statement-depth 300: %v", err)
	}
	_, err := c.Exec(ctx, "SELECT 1 WHERE true OR true OR true OR true OR true")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "4 AND, OR, UNION, EXCEPT, INTERSECT and WITH terms exceed the limit of 3") {
		t.Errorf("4 ORs under --max-statement-terms 3: got %v, want InvalidArgument naming the limit", err)
	}
}

// TestPrintHints_MySQLClient checks serve suggests the mysql command only
// where one is installed, and the shell, which needs nothing, always.
func TestPrintHints_MySQLClient(t *testing.T) {
	withMySQL := t.TempDir()
	if err := os.WriteFile(filepath.Join(withMySQL, "mysql"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := &server.Server{FlightAddr: "127.0.0.1:31337", MySQLAddr: "127.0.0.1:9030"}
	for _, tt := range []struct {
		name, path    string
		want, notWant []string
	}{
		{"mysql installed", withMySQL,
			[]string{"shell --server 127.0.0.1:31337\n", "  MySQL      : mysql -h 127.0.0.1 -P 9030\n"}, nil},
		{"no mysql", t.TempDir(),
			[]string{"shell --server 127.0.0.1:31337\n", "  MySQL      : 127.0.0.1:9030, for MySQL clients and tools (no mysql command is installed here)\n"},
			[]string{"mysql -h"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			var out bytes.Buffer
			printHints(&out, srv, server.Config{DB: ":memory:"})
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("hints lack %q; got:\n%s", w, out.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("hints hold %q; got:\n%s", w, out.String())
				}
			}
		})
	}
}
