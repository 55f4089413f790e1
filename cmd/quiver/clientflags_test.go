package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// TestClientFlags_EnvDefaults checks a flag that defaults to an
// environment variable takes its value, and that -h shows the built-in
// default instead: a password must not be printed.
func TestClientFlags_EnvDefaults(t *testing.T) {
	t.Setenv("QUIVER_SERVER", "db.example:4242")
	t.Setenv("QUIVER_USER", "etl")
	t.Setenv("QUIVER_PASSWORD", "hunter2")
	fs := newFlagSet("query")
	var cf clientFlags
	cf.register(fs)
	if _, err := parseFlags(discard(), fs, nil); err != nil {
		t.Fatal(err)
	}
	if cf.server != "db.example:4242" || cf.user != "etl" || cf.password != "hunter2" {
		t.Errorf("from the environment: got server %q user %q password %q, want db.example:4242, etl, hunter2", cf.server, cf.user, cf.password)
	}
	var usage strings.Builder
	fs.SetOutput(&usage)
	fs.PrintDefaults()
	if strings.Contains(usage.String(), "hunter2") || strings.Contains(usage.String(), "db.example") {
		t.Errorf("-h shows the environment's values:\n%s", usage.String())
	}
	if !strings.Contains(usage.String(), `(default "`+defaultServer+`")`) {
		t.Errorf("-h does not show the default server %s:\n%s", defaultServer, usage.String())
	}
}

// TestQuery_PermissionHints runs refused statements through quiver query
// against a real server and checks the hint after the server's message:
// a role only where a role would help, and for DuckDB's refusals to
// reach files, which hold for every user, a way around instead.
func TestQuery_PermissionHints(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Security: server.Security{Users: []server.UserSpec{
		{Name: "admin", Password: "adminpw", Role: auth.RoleAdmin},
		{Name: "bi", Password: "bipw", Role: auth.RoleReadOnly},
	}}})
	outside := filepath.Join(t.TempDir(), "x.csv")
	cases := []struct {
		name, user, sql string
		want            []string // in the hint
		not             []string // nowhere in the output
	}{
		{"a readonly user's CREATE", "bi", "CREATE TABLE t (i INT)",
			[]string{"log in as a user with the readwrite role"}, nil},
		{"a readonly user's SET", "bi", "SET threads = 1",
			[]string{"log in as a user with the admin role"}, nil},
		// DuckDB refuses the path when it prepares the statement, before
		// the role check: an admin would be refused too.
		{"a readonly user's COPY TO", "bi", "COPY (SELECT 1) TO '" + outside + "'",
			[]string{"no user, whatever the role", "--export-root"}, []string{"log in as"}},
		{"an admin's COPY TO outside", "admin", "COPY (SELECT 1 AS i) TO '" + outside + "'",
			[]string{"no user, whatever the role", "--export-root", "quiver query -o FILE"}, []string{"log in as"}},
		{"an admin's read of a file", "admin", "SELECT * FROM read_csv('" + outside + "')",
			[]string{"no user, whatever the role", "quiver load FILE"}, []string{"log in as", "--export-root"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pw := map[string]string{"admin": "adminpw", "bi": "bipw"}[tc.user]
			code, _, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "--user", tc.user, "--password", pw, tc.sql)
			if code == 0 {
				t.Fatalf("%s ran; want it refused", tc.sql)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q: want %q in it", errOut, w)
				}
			}
			for _, w := range append(tc.not, "read-write or admin") {
				if strings.Contains(errOut, w) {
					t.Errorf("stderr %q: want no %q in it", errOut, w)
				}
			}
		})
	}
}

func TestPermissionHint(t *testing.T) {
	for _, tc := range []struct{ msg, sql, want string }{
		{"user bi is read-only and may not run INSERT statements (they need the readwrite role)", "", "readwrite role"},
		{"export to 'x' refused: user bi is read-only and may not export: COPY … TO under --export-root needs the readwrite role", "", "readwrite role"},
		{`Permission Error: Cannot access file "/x" - file system operations are disabled by configuration`, "copy t to '/x'", "--export-root"},
		{`Permission Error: Cannot access file "/x" - file system operations are disabled by configuration`, "COPY t FROM '/x'", "quiver load"},
		{`Permission Error: Cannot access file "/x" - file system operations are disabled by configuration`, "COPY (SELECT 1 FROM t) TO '/x'", "--export-root"},
		{"lake tables are read-only", "", ""},
		{"export to '/r/../x' refused (--export-root /r): the path holds \"..\"", "", ""},
	} {
		got := permissionHint(tc.msg, tc.sql)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("permissionHint(%q, %q) = %q, want it to hold %q", tc.msg, tc.sql, got, tc.want)
		}
	}
}
