package main

import (
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
	if _, err := parseFlags(fs, nil); err != nil {
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

// TestServerError_PermissionHints runs refused statements through quiver
// query against a server with users of each role, and checks the hint:
// another role where one would help, what can be done where no role can.
func TestServerError_PermissionHints(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{Security: server.Security{Users: []server.UserSpec{
		{Name: "admin", Password: "adminpw", Role: auth.RoleAdmin},
		{Name: "bi", Password: "bipw", Role: auth.RoleReadOnly},
	}}})
	const noRole = "no role can: the server turns file access off for every user (quiver serve --allow-external-access turns it on)"
	for _, tt := range []struct {
		name, user, password, sql string
		want, notWant             string
	}{
		{"read a file as an admin", "admin", "adminpw", "SELECT * FROM read_csv('/etc/passwd')",
			"\n" + noRole, "use a read-write or admin user"},
		{"write a file as an admin", "admin", "adminpw", "COPY (SELECT 1) TO '/tmp/quiver-hint-test.csv'",
			"disabled by configuration; " + noRole, "use a read-write or admin user"},
		{"create as a reader", "bi", "bipw", "CREATE TABLE t (i INT)",
			"(they need the readwrite role); connect as a user with that role (--user)", "no role can"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runQuiver(t, "query", "--server", srv.FlightAddr, "--user", tt.user, "--password", tt.password, tt.sql)
			if code != 1 || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, tt.notWant) {
				t.Errorf("exit %d, stderr:\n%s\nwant 1 and a message holding %q, not %q", code, errOut, tt.want, tt.notWant)
			}
		})
	}
}
