package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/syncbuf"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
	"io"
)

// noPasswordEnv clears the password variables for the test.
func noPasswordEnv(t *testing.T) {
	t.Setenv(envPassword, "")
	t.Setenv(envNewPassword, "")
}

// withStdin makes text the standard input passwords are read from.
func withStdin(t *testing.T, text string) {
	t.Helper()
	old := testInput
	testInput = text
	t.Cleanup(func() { testInput = old })
}

// canLogin reports whether user logs in to srv over Flight with password.
func canLogin(t *testing.T, srv *server.Server, user, password string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr, User: user, Password: password})
	if err != nil {
		return err
	}
	c.Close()
	return nil
}

func TestUser_File(t *testing.T) {
	noPasswordEnv(t)
	path := filepath.Join(t.TempDir(), "users")
	run := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runQuiver(t, append([]string{"user"}, append(args, "--users-file", path)...)...)
		if code != wantCode {
			t.Fatalf("quiver user %s: exit %d, want %d: %s", strings.Join(args, " "), code, wantCode, errOut)
		}
		return out, errOut
	}
	t.Setenv(envNewPassword, "root-pw")
	_, errOut := run(0, "add", "root", "--role", "admin")
	if !strings.Contains(errOut, "added root (admin)") || !strings.Contains(errOut, "SIGHUP") {
		t.Errorf("add: got %q", errOut)
	}
	if fi, err := os.Stat(path); err != nil || (fi.Mode().Perm() != 0o600 && runtime.GOOS != "windows") {
		t.Errorf("the users file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	t.Setenv(envNewPassword, "")
	t.Setenv(envPassword, "bi-pw") // with --users-file, QUIVER_PASSWORD is the new password too
	run(0, "add", "bi")
	t.Setenv(envPassword, "")
	withStdin(t, "etl-pw\n")
	run(0, "add", "etl", "--role", "readwrite")

	out, _ := run(0, "list")
	if want := "NAME  ROLE\netl   readwrite\nbi    readonly\nroot  admin\n"; sortedLines(out) != sortedLines(want) {
		t.Errorf("list:\n%s\nwant:\n%s", out, want)
	}
	st, err := auth.ReadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for user, pw := range map[string]string{"root": "root-pw", "bi": "bi-pw", "etl": "etl-pw"} {
		if _, err := st.Verify(user, pw); err != nil {
			t.Errorf("%s's password: %v", user, err)
		}
	}

	t.Setenv(envNewPassword, "bi-new")
	run(0, "passwd", "bi")
	run(0, "role", "bi", "readwrite")
	run(0, "del", "etl")
	st, err = auth.ReadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := st.Verify("bi", "bi-new"); err != nil || u.Role != auth.RoleReadWrite {
		t.Errorf("bi after passwd and role: %v, %v", u, err)
	}
	if _, ok := st.Lookup("etl"); ok {
		t.Errorf("etl is still there")
	}

	t.Run("refused", func(t *testing.T) {
		for _, tt := range []struct {
			code int
			args []string
			msg  string
		}{
			{2, []string{"add"}, "add takes 1 argument"},
			{2, []string{"grant", "bi"}, `unknown operation "grant"`},
			{2, []string{"passwd", "bi", "--role", "admin"}, "--role goes with add"},
			{2, []string{"role", "bi", "root"}, `parse role "root"`},
			{1, []string{"add", "bi"}, "already exists"},
			{1, []string{"del", "nobody"}, "unknown user"},
			{1, []string{"del", "root"}, "only admin"},
			{1, []string{"role", "root", "readonly"}, "only admin"},
			{2, []string{"list", "--server", "127.0.0.1:1"}, "give one or the other"},
		} {
			code, _, errOut := runQuiver(t, append([]string{"user"}, append(tt.args, "--users-file", path)...)...)
			if code != tt.code || !strings.Contains(errOut, tt.msg) {
				t.Errorf("quiver user %s: exit %d, %q; want %d and %q", strings.Join(tt.args, " "), code, errOut, tt.code, tt.msg)
			}
		}
		t.Setenv(envNewPassword, "")
		withStdin(t, "")
		code, _, errOut := runQuiver(t, "user", "passwd", "bi", "--users-file", path)
		if code != 1 || !strings.Contains(errOut, envNewPassword) {
			t.Errorf("passwd without a password: exit %d, %q", code, errOut)
		}
		if runtime.GOOS != "windows" {
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runQuiver(t, "user", "list", "--users-file", path)
			if code != 1 || !strings.Contains(errOut, "chmod 600") {
				t.Errorf("list a 0644 file: exit %d, %q", code, errOut)
			}
			os.Chmod(path, 0o600)
		}
	})
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.Join(strings.Fields(lines[i]), " ")
	}
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && lines[j] < lines[j-1]; j-- {
			lines[j], lines[j-1] = lines[j-1], lines[j]
		}
	}
	return strings.Join(lines, "\n")
}

// TestUser_Server changes a running server's users through the
// quiver.user action: an admin may, and the change shows at once; a user
// who is not an admin may not.
func TestUser_Server(t *testing.T) {
	noPasswordEnv(t)
	path := filepath.Join(t.TempDir(), "users")
	for _, req := range []auth.UserRequest{
		{Op: auth.OpAdd, Name: "root", Password: "root-pw", Role: "admin"},
		{Op: auth.OpAdd, Name: "bi", Password: "bi-pw"},
	} {
		if _, err := auth.EditUsersFile(path, req.Apply); err != nil {
			t.Fatal(err)
		}
	}
	srv := testutil.StartServer(t, server.Config{Security: server.Security{UsersFile: path}})
	as := func(user, pw string, args ...string) (int, string, string) {
		t.Helper()
		t.Setenv(envPassword, pw)
		return runQuiver(t, append([]string{"user"}, append(args, "--server", srv.FlightAddr, "--user", user)...)...)
	}
	t.Setenv(envNewPassword, "etl-pw")
	if code, _, errOut := as("root", "root-pw", "add", "etl", "--role", "readwrite"); code != 0 || !strings.Contains(errOut, "added etl (readwrite) on "+srv.FlightAddr) {
		t.Fatalf("add etl: exit %d: %s", code, errOut)
	}
	if err := canLogin(t, srv, "etl", "etl-pw"); err != nil {
		t.Errorf("etl logs in: %v", err)
	}
	code, out, errOut := as("root", "root-pw", "list")
	if code != 0 || !strings.Contains(out, "etl   readwrite") {
		t.Errorf("list: exit %d, %q, %s", code, out, errOut)
	}
	t.Setenv(envNewPassword, "bi-new")
	if code, _, errOut := as("root", "root-pw", "passwd", "bi"); code != 0 {
		t.Fatalf("passwd bi: exit %d: %s", code, errOut)
	}
	if err := canLogin(t, srv, "bi", "bi-new"); err != nil {
		t.Errorf("bi with the new password: %v", err)
	}
	if err := canLogin(t, srv, "bi", "bi-pw"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("bi with the old password: got %v, want Unauthenticated", err)
	}
	// The file has the change too.
	st, err := auth.ReadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Verify("bi", "bi-new"); err != nil {
		t.Errorf("bi's new password in the file: %v", err)
	}
	code, _, errOut = as("bi", "bi-new", "del", "etl")
	if code != 1 || !strings.Contains(errOut, "needs the admin role") {
		t.Errorf("bi deletes etl: exit %d, %q; want 1 and a refusal", code, errOut)
	}
	code, _, errOut = as("root", "wrong", "list")
	if code != 1 || !strings.Contains(errOut, "check --user and --password") {
		t.Errorf("a wrong admin password: exit %d, %q", code, errOut)
	}
}

// TestServe_UsersFileNoPassword checks serve refuses to create a users
// file without a password to give its admin, and says how to give one.
func TestServe_UsersFileNoPassword(t *testing.T) {
	noPasswordEnv(t)
	withStdin(t, "")
	path := filepath.Join(t.TempDir(), "users")
	code, _, errOut := runQuiver(t, "serve", "--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "", "--http", "", "--users-file", path)
	if code != 1 || !strings.Contains(errOut, "QUIVER_PASSWORD") {
		t.Errorf("got exit %d, %q; want 1 and a hint naming QUIVER_PASSWORD", code, errOut)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a users file was written without a password")
	}
	code, _, errOut = runQuiver(t, "serve", "--db", ":memory:", "--users-file", path, "--user", "a", "--password", "b")
	if code != 2 || !strings.Contains(errOut, "not both") {
		t.Errorf("--users-file with --user: got exit %d, %q", code, errOut)
	}
}

// TestServe_PasswordFlagWarns checks the old --user/--password flags
// still work, with a warning that the password is in the process list.
func TestServe_PasswordFlagWarns(t *testing.T) {
	var log syncbuf.Buffer
	srv, stop := startServeWith(t, cli.Stdio{In: strings.NewReader(""), Out: io.Discard, Err: &log},
		"--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "", "--http", "", "--user", "a", "--password", "apw")
	defer stop()
	if err := canLogin(t, srv, "a", "apw"); err != nil {
		t.Errorf("login: %v", err)
	}
	if b := log.String(); !strings.Contains(b, "level=WARN") || !strings.Contains(b, "process list") {
		t.Errorf("serve's log has no warning about the process list:\n%s", b)
	}
}

// startServe runs quiver serve with args in-process until stop is called.
func startServe(t *testing.T, args ...string) (*server.Server, func()) {
	t.Helper()
	return startServeWith(t, discard(), args...)
}

// startServeWith is startServe on the standard streams std.
func startServeWith(t *testing.T, std cli.Stdio, args ...string) (*server.Server, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *server.Server, 1)
	done := make(chan error, 1)
	go func() { done <- (&serveCmd{started: func(s *server.Server) { started <- s }}).Run(ctx, std, args) }()
	select {
	case srv := <-started:
		return srv, func() {
			cancel()
			<-done
		}
	case err := <-done:
		cancel()
		t.Fatalf("serve %s: %v", strings.Join(args, " "), err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("serve did not start in 60 s")
	}
	return nil, nil
}
