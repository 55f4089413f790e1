package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/server"
)

// TestReadme_UsersAsWritten runs the README's users example exactly as
// written, in order, in a scratch directory: quiver user on the users
// file, quiver serve on it (on the ports the README names), then quiver
// user against the running server. The passwords the commands would ask
// for come from QUIVER_NEW_PASSWORD and QUIVER_PASSWORD, as a script's
// would. It then checks each user can do what the example made of them.
func TestReadme_UsersAsWritten(t *testing.T) {
	var cmds []string
	for _, c := range readme.Commands(t, "quiver ") {
		if strings.HasPrefix(c, "quiver user ") || strings.HasPrefix(c, "quiver serve ") && strings.Contains(c, "--users-file") {
			cmds = append(cmds, c)
		}
	}
	noPasswordEnv(t)
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}
	password := map[string]string{"admin": "admin-pw", "etl": "etl-pw", "bi": "bi-pw"}
	ran := map[string]bool{}
	var srv *server.Server
	for _, line := range cmds {
		t.Logf("README: %s", line)
		args := strings.Fields(line)[1:]
		if args[0] == "serve" {
			var stop func()
			srv, stop = startServe(t, args[1:]...)
			t.Cleanup(stop)
			ran["serve"] = true
			continue
		}
		op, name := args[1], ""
		if len(args) > 2 && !strings.HasPrefix(args[2], "-") {
			name = args[2]
		}
		onServer := !strings.Contains(line, "--users-file")
		switch {
		case onServer:
			if srv == nil {
				t.Fatalf("%s: the README changes a server before it starts one", line)
			}
			t.Setenv(envPassword, password["admin"])
			t.Setenv(envNewPassword, name+"-new")
			ran[op+" on the server"] = true
		default:
			t.Setenv(envPassword, "")
			t.Setenv(envNewPassword, password[name])
			ran[op+" in the file"] = true
		}
		code, out, errOut := runQuiver(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", line, code, errOut)
		}
		if op == "list" {
			for name := range password {
				if !strings.Contains(out, name) {
					t.Errorf("%s: no %s in\n%s", line, name, out)
				}
			}
		}
	}
	for _, want := range []string{"add in the file", "list in the file", "serve", "passwd on the server", "role on the server", "del on the server"} {
		if !ran[want] {
			t.Errorf("the README's users example has no %s", want)
		}
	}
	if srv == nil {
		t.FailNow()
	}

	ctx := context.Background()
	dial := func(user, pw string) (*client.Client, error) {
		c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr, User: user, Password: pw})
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	admin, err := dial("admin", "admin-pw")
	if err != nil {
		t.Fatalf("admin: %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE TABLE facts (n INT)"); err != nil {
		t.Errorf("admin creates a table: %v", err)
	}
	if _, err := dial("bi", "bi-pw"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("bi with the password passwd replaced: got %v, want Unauthenticated", err)
	}
	bi, err := dial("bi", "bi-new")
	if err != nil {
		t.Fatalf("bi with the new password: %v", err)
	}
	if _, err := bi.Exec(ctx, "INSERT INTO facts VALUES (1)"); err != nil {
		t.Errorf("bi, made readwrite, inserts: %v", err)
	}
	if _, err := dial("etl", "etl-pw"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("deleted etl: got %v, want Unauthenticated", err)
	}
}
