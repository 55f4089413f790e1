package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/internal/syncbuf"
)

// loadTestUsersFile loads writeTestUsersFile's file into a live Store and
// returns both, with the audit log.
func loadTestUsersFile(t *testing.T) (*UsersFile, *Store, *syncbuf.Buffer) {
	t.Helper()
	path := writeTestUsersFile(t)
	log := &syncbuf.Buffer{}
	users := NewStore()
	f, err := LoadUsersFile(path, users, slog.New(slog.NewTextHandler(log, nil)).With("audit", true))
	if err != nil {
		t.Fatal(err)
	}
	return f, users, log
}

// TestUsersFile_Reload checks a reload swaps the users in place: tokens
// of users still there verify, with their new role; those of deleted
// users and of changed passwords do not.
func TestUsersFile_Reload(t *testing.T) {
	f, users, log := loadTestUsersFile(t)
	tokens := newTestTokens(t, testKey, users)
	issue := func(name string) string {
		u, _ := users.Lookup(name)
		tok, _, err := tokens.Issue(u)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	aliceTok, bobTok, carolTok := issue("alice"), issue("bob"), issue("carol")

	// quiver user, in another process, edits the file.
	for _, req := range []UserRequest{
		{Op: OpDel, Name: "bob"},
		{Op: OpRole, Name: "carol", Role: "readwrite"},
		{Op: OpPasswd, Name: "alice", Password: "alice-new"},
		{Op: OpAdd, Name: "dave", Password: "dave-pw"},
	} {
		if _, err := EditUsersFile(f.Path(), req.Apply); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := users.Verify("dave", "dave-pw"); !errors.Is(err, ErrUnknownUser) {
		t.Fatalf("before the reload: dave is %v, want unknown", err)
	}
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(users.Users()); got != "[{alice admin} {carol readwrite} {dave readonly}]" {
		t.Errorf("users: got %s", got)
	}
	if u, err := tokens.Verify(carolTok); err != nil || u.Role != RoleReadWrite {
		t.Errorf("carol's token: got %v, %v; want it valid, readwrite", u, err)
	}
	if _, err := tokens.Verify(bobTok); !errors.Is(err, ErrBadToken) {
		t.Errorf("deleted bob's token: got %v, want %v", err, ErrBadToken)
	}
	if _, err := tokens.Verify(aliceTok); !errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), "password") {
		t.Errorf("alice's token after her password changed: got %v, want %v", err, ErrBadToken)
	}
	for _, want := range []string{
		`msg="user deleted" audit=true user=bob role=readwrite by="users file"`,
		`msg="user role changed" audit=true user=carol role=readwrite was=readonly`,
		`msg="user password changed" audit=true user=alice`,
		`msg="user added" audit=true user=dave role=readonly`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("audit log lacks %s:\n%s", want, log)
		}
	}

	t.Run("refused", func(t *testing.T) {
		if err := os.WriteFile(f.Path(), []byte("# nobody\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := f.Reload(); err == nil || !strings.Contains(err.Error(), "no users") {
			t.Errorf("reload an empty file: got %v", err)
		}
		if err := os.WriteFile(f.Path(), []byte("garbage\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := f.Reload(); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("reload a malformed file: got %v", err)
		}
		if runtime.GOOS != "windows" {
			if _, err := EditUsersFile(f.Path()+"2", UserRequest{Op: OpAdd, Name: "x", Password: "x"}.Apply); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(f.Path()+"2", f.Path()); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(f.Path(), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := f.Reload(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
				t.Errorf("reload a 0640 file: got %v", err)
			}
		}
		if users.Len() != 3 {
			t.Errorf("users after refused reloads: got %v, want the 3 loaded before", users.Users())
		}
	})
}

func TestLoadUsersFile_Empty(t *testing.T) {
	path := writeTestUsersFile(t)
	if err := os.WriteFile(path, []byte(usersFileHeader), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadUsersFile(path, NewStore(), nil); err == nil || !strings.Contains(err.Error(), "quiver user add") {
		t.Errorf("load a file without users: got %v, want an error saying how to add one", err)
	}
}

// TestUsersFile_HandleAction checks the quiver.user action: only an
// admin may use it, it changes the file and the live users together, and
// each refusal has its code.
func TestUsersFile_HandleAction(t *testing.T) {
	f, users, log := loadTestUsersFile(t)
	as := func(name string) context.Context {
		u, ok := users.Lookup(name)
		if !ok {
			t.Fatalf("no user %s", name)
		}
		return ContextWithUser(context.Background(), u)
	}
	do := func(ctx context.Context, req UserRequest) (UserReply, error) {
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.HandleAction(ctx, body)
		if err != nil {
			return UserReply{}, err
		}
		var reply UserReply
		if err := json.Unmarshal(out, &reply); err != nil {
			t.Fatalf("reply %q: %v", out, err)
		}
		return reply, nil
	}

	reply, err := do(as("alice"), UserRequest{Op: OpAdd, Name: "dave", Password: "dave-pw", Role: "readwrite"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(reply.Users); got != "[{alice admin} {bob readwrite} {carol readonly} {dave readwrite}]" {
		t.Errorf("reply: got %s", got)
	}
	if u, err := users.Verify("dave", "dave-pw"); err != nil || u.Role != RoleReadWrite {
		t.Errorf("dave in the live users: got %v, %v", u, err)
	}
	onDisk, err := ReadUsersFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := onDisk.Lookup("dave"); !ok {
		t.Errorf("dave is not in the file")
	}
	if !strings.Contains(log.String(), `msg="user added" audit=true user=dave role=readwrite by=alice`) {
		t.Errorf("audit log lacks dave's addition by alice:\n%s", log)
	}

	for _, tt := range []struct {
		name string
		ctx  context.Context
		req  UserRequest
		code codes.Code
		msg  string
	}{
		{"not an admin", as("bob"), UserRequest{Op: OpAdd, Name: "eve", Password: "pw", Role: "admin"}, codes.PermissionDenied, "needs the admin role"},
		{"not an admin listing", as("carol"), UserRequest{Op: OpList}, codes.PermissionDenied, "needs the admin role"},
		{"no caller", context.Background(), UserRequest{Op: OpList}, codes.Unauthenticated, ""},
		{"exists", as("alice"), UserRequest{Op: OpAdd, Name: "bob", Password: "pw"}, codes.AlreadyExists, "already exists"},
		{"unknown", as("alice"), UserRequest{Op: OpDel, Name: "zed"}, codes.NotFound, "unknown user"},
		{"last admin", as("alice"), UserRequest{Op: OpRole, Name: "alice", Role: "readonly"}, codes.FailedPrecondition, "only admin"},
		{"no password", as("alice"), UserRequest{Op: OpPasswd, Name: "bob"}, codes.InvalidArgument, "empty password"},
		{"bad op", as("alice"), UserRequest{Op: "grant"}, codes.InvalidArgument, "unknown operation"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := do(tt.ctx, tt.req)
			if st, _ := status.FromError(err); st.Code() != tt.code || !strings.Contains(st.Message(), tt.msg) {
				t.Errorf("got %v, want %v with %q", err, tt.code, tt.msg)
			}
		})
	}
	if _, err := f.HandleAction(as("alice"), []byte("not json")); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a body that is not JSON: got %v, want InvalidArgument", err)
	}
	if _, ok := users.Lookup("eve"); ok {
		t.Errorf("bob, not an admin, added eve")
	}
	if !strings.Contains(log.String(), `msg="user change refused" audit=true user=eve op=add by=bob`) {
		t.Errorf("audit log lacks bob's refused change:\n%s", log)
	}
	if reply, err := do(as("alice"), UserRequest{Op: OpList}); err != nil || len(reply.Users) != 4 {
		t.Errorf("list: got %v, %v", reply, err)
	}
}
