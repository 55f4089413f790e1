//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestServe_UsersFile starts quiver serve on a users file that does not
// exist yet: it makes one, with the admin whose password QUIVER_PASSWORD
// gives; quiver user adds a user to the file, and SIGHUP makes the running
// server load it.
func TestServe_UsersFile(t *testing.T) {
	noPasswordEnv(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "users")
	t.Setenv(envPassword, "first-pw")
	srv, stop := startServe(t, "--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "", "--http", "", "--users-file", path)
	defer stop()
	if err := canLogin(t, srv, "admin", "first-pw"); err != nil {
		t.Fatalf("the first admin: %v", err)
	}
	t.Setenv(envPassword, "")
	t.Setenv(envNewPassword, "late-pw")
	if code, _, errOut := runQuiver(t, "user", "add", "late", "--users-file", path); code != 0 {
		t.Fatalf("add late: %s", errOut)
	}
	if err := canLogin(t, srv, "late", "late-pw"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("late before SIGHUP: got %v, want Unauthenticated", err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := canLogin(t, srv, "late", "late-pw")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late after SIGHUP: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := canLogin(t, srv, "admin", "first-pw"); err != nil {
		t.Errorf("the admin after the reload: %v", err)
	}
}
