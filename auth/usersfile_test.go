package auth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// writeTestUsersFile writes a users file with newTestStore's users and
// returns its path.
func writeTestUsersFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	if _, err := EditUsersFile(path, func(s *Store) error {
		s.replaceUsers(newTestStore(t))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUsersFile_RoundTrip(t *testing.T) {
	path := writeTestUsersFile(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 && runtime.GOOS != "windows" {
		t.Errorf("mode: got %#o, want 0600", got)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{"alice-pw", "bob-pw", "carol-pw"} {
		if strings.Contains(string(b), pw) {
			t.Errorf("the file holds the password %q in clear", pw)
		}
	}
	if !strings.Contains(string(b), "\nalice:admin:$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("the file does not list alice as NAME:ROLE:$argon2id$…:\n%s", b)
	}

	s, err := ReadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.Users()); got != "[{alice admin} {bob readwrite} {carol readonly}]" {
		t.Errorf("users: got %s", got)
	}
	t.Run("password", func(t *testing.T) {
		if u, err := s.Verify("bob", "bob-pw"); err != nil || u.Role != RoleReadWrite {
			t.Errorf("Verify(bob) = %v, %v; want bob/readwrite", u, err)
		}
		if _, err := s.Verify("bob", "alice-pw"); !errors.Is(err, ErrBadPassword) {
			t.Errorf("Verify(bob, wrong) = %v, want %v", err, ErrBadPassword)
		}
	})
	t.Run("mysql", func(t *testing.T) {
		salt := []byte("abcdefghij0123456789")
		if u, err := s.VerifyNativePassword("carol", salt, scramble("carol-pw", salt)); err != nil || u.Role != RoleReadOnly {
			t.Errorf("VerifyNativePassword(carol) = %v, %v; want carol/readonly", u, err)
		}
	})
	t.Run("written again unchanged", func(t *testing.T) {
		if got := string(s.marshalUsers()); got != string(b) {
			t.Errorf("re-encoded:\n%s\nwant:\n%s", got, b)
		}
	})
}

func TestUsersFile_Mode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	path := writeTestUsersFile(t)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadUsersFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("read a 0644 file: got %v, want an error saying chmod 600", err)
	}
	if _, err := EditUsersFile(path, func(*Store) error { return nil }); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("edit a 0644 file: got %v, want an error saying chmod 600", err)
	}
	if _, err := ReadUsersFile(filepath.Dir(path)); err == nil {
		t.Errorf("read a directory: got no error")
	}
	if _, err := ReadUsersFile(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read a missing file: got %v, want %v", err, fs.ErrNotExist)
	}
}

func TestUsersFile_Malformed(t *testing.T) {
	good := string(writeTestStoreLine(t))
	fields := strings.Split(good, ":")
	phc := strings.Split(fields[2], "$")
	with := func(i int, v string) string {
		f := append([]string(nil), fields...)
		f[i] = v
		return strings.Join(f, ":")
	}
	withPHC := func(i int, v string) string {
		p := append([]string(nil), phc...)
		p[i] = v
		return with(2, strings.Join(p, "$"))
	}
	for _, tt := range []struct{ name, text, msg string }{
		{"three fields", "alice:admin:x", "want NAME:ROLE"},
		{"five fields", good + ":x", "want NAME:ROLE"},
		{"bad name", with(0, "a b\x01"), "non-printable"},
		{"empty name", with(0, ""), "empty user name"},
		{"bad role", with(1, "root"), "parse role"},
		{"not argon2id", with(2, "$2y$10$abc"), "argon2id"},
		{"other version", withPHC(2, "v=16"), "version"},
		{"huge memory", withPHC(3, "m=4194304,t=2,p=1"), "m=4194304"},
		{"zero time", withPHC(3, "m=19456,t=0,p=1"), "t=0"},
		{"unknown parameter", withPHC(3, "m=19456,t=2,p=1,x=1"), "unknown parameter"},
		{"short salt", withPHC(4, "YWJj"), "salt"},
		{"bad hash", withPHC(5, "!!"), "hash"},
		{"no star", with(3, strings.TrimPrefix(fields[3], "*")), "MySQL hash"},
		{"short mysql hash", with(3, "*ABCD"), "MySQL hash"},
		{"twice", good + "\n" + good, "listed twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseUsersFile([]byte("# comment\n\n" + tt.text + "\n"))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want an error containing %q", err, tt.msg)
			}
			line := "line 3"
			if tt.name == "twice" {
				line = "line 4"
			}
			if !strings.Contains(err.Error(), line) {
				t.Errorf("got %v, want it to name %s", err, line)
			}
		})
	}
	s, err := parseUsersFile([]byte("  # indented comment\n" + good + "\n\n"))
	if err != nil || s.Len() != 1 {
		t.Errorf("a good line among comments and blanks: got %v users, %v", s.Len(), err)
	}
}

// writeTestStoreLine is the users file line of a user alice.
func writeTestStoreLine(t *testing.T) []byte {
	t.Helper()
	s := NewStore()
	if err := s.Add("alice", "alice-pw", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(s.marshalUsers())), "\n")
	return []byte(lines[len(lines)-1])
}

// TestEditUsersFile_Concurrent checks edits from many writers at once
// (quiver user processes and a server's action) all land.
func TestEditUsersFile_Concurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := EditUsersFile(path, UserRequest{Op: OpAdd, Name: fmt.Sprintf("u%d", i), Password: "pw"}.Apply)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := ReadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != n {
		t.Errorf("users after %d concurrent adds: got %d (%v)", n, s.Len(), s.Users())
	}
}

// TestEditUsersFile_Failed checks an edit that fails leaves the file as it
// was.
func TestEditUsersFile_Failed(t *testing.T) {
	path := writeTestUsersFile(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = EditUsersFile(path, UserRequest{Op: OpAdd, Name: "alice", Password: "x"}.Apply)
	if !errors.Is(err, ErrUserExists) {
		t.Fatalf("add alice again: got %v, want %v", err, ErrUserExists)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("a failed edit changed the file")
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".users.tmp-*")); len(matches) != 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
}

func TestUserRequest_Apply(t *testing.T) {
	tests := []struct {
		name    string
		req     UserRequest
		want    string // users after, when the request succeeds
		wantErr error  // errBadRequest, a sentinel, or nil
	}{
		{"add", UserRequest{Op: OpAdd, Name: "dave", Password: "pw"}, "[{alice admin} {bob readwrite} {carol readonly} {dave readonly}]", nil},
		{"add admin", UserRequest{Op: OpAdd, Name: "dave", Password: "pw", Role: "admin"}, "[{alice admin} {bob readwrite} {carol readonly} {dave admin}]", nil},
		{"add existing", UserRequest{Op: OpAdd, Name: "bob", Password: "pw"}, "", ErrUserExists},
		{"add without password", UserRequest{Op: OpAdd, Name: "dave"}, "", errBadRequest},
		{"add bad name", UserRequest{Op: OpAdd, Name: "a:b", Password: "pw"}, "", errBadRequest},
		{"add bad role", UserRequest{Op: OpAdd, Name: "dave", Password: "pw", Role: "root"}, "", errBadRequest},
		{"passwd", UserRequest{Op: OpPasswd, Name: "bob", Password: "new"}, "[{alice admin} {bob readwrite} {carol readonly}]", nil},
		{"passwd unknown", UserRequest{Op: OpPasswd, Name: "dave", Password: "new"}, "", ErrUnknownUser},
		{"passwd empty", UserRequest{Op: OpPasswd, Name: "bob"}, "", errBadRequest},
		{"role", UserRequest{Op: OpRole, Name: "carol", Role: "rw"}, "[{alice admin} {bob readwrite} {carol readwrite}]", nil},
		{"role missing", UserRequest{Op: OpRole, Name: "carol"}, "", errBadRequest},
		{"demote the only admin", UserRequest{Op: OpRole, Name: "alice", Role: "readonly"}, "", ErrLastAdmin},
		{"del", UserRequest{Op: OpDel, Name: "carol"}, "[{alice admin} {bob readwrite}]", nil},
		{"del unknown", UserRequest{Op: OpDel, Name: "dave"}, "", ErrUnknownUser},
		{"del the only admin", UserRequest{Op: OpDel, Name: "alice"}, "", ErrLastAdmin},
		{"list", UserRequest{Op: OpList}, "[{alice admin} {bob readwrite} {carol readonly}]", nil},
		{"unknown op", UserRequest{Op: "grant", Name: "bob"}, "", errBadRequest},
	}
	base := newTestStore(t)
	clone := func() *Store {
		s := NewStore()
		s.replaceUsers(base) // accounts are immutable: sharing them is safe
		return s
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := clone()
			err := tt.req.Apply(s)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := fmt.Sprint(s.Users()); got != tt.want {
				t.Errorf("users: got %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("passwd takes effect", func(t *testing.T) {
		s := clone()
		if err := (UserRequest{Op: OpPasswd, Name: "bob", Password: "new"}).Apply(s); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Verify("bob", "bob-pw"); !errors.Is(err, ErrBadPassword) {
			t.Errorf("old password: got %v, want %v", err, ErrBadPassword)
		}
		if _, err := s.Verify("bob", "new"); err != nil {
			t.Errorf("new password: %v", err)
		}
	})
	t.Run("a second admin may be removed", func(t *testing.T) {
		s := clone()
		if err := s.SetRole("bob", RoleAdmin); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete("alice"); err != nil {
			t.Errorf("delete alice with bob an admin: %v", err)
		}
	})
}
