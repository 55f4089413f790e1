package auth

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// newTestStore returns a Store with one user per role:
// alice (admin), bob (readwrite) and carol (readonly), each with password
// "<name>-pw".
func newTestStore(t testing.TB) *Store {
	t.Helper()
	s := NewStore()
	for name, role := range map[string]Role{"alice": RoleAdmin, "bob": RoleReadWrite, "carol": RoleReadOnly} {
		if err := s.Add(name, name+"-pw", role); err != nil {
			t.Fatalf("Add(%q): %v", name, err)
		}
	}
	return s
}

func TestStore_Add(t *testing.T) {
	tests := []struct {
		name, user, password string
		role                 Role
		wantErr              error // nil: no error; errAny: any error
	}{
		{name: "ok", user: "dave", password: "pw", role: RoleReadOnly},
		{name: "unicode name", user: "zoë", password: "pw", role: RoleAdmin},
		{name: "colon in password", user: "erin", password: "a:b", role: RoleAdmin},
		{name: "duplicate", user: "alice", password: "pw", role: RoleAdmin, wantErr: ErrUserExists},
		{name: "empty name", user: "", password: "pw", role: RoleAdmin, wantErr: errAny},
		{name: "colon in name", user: "a:b", password: "pw", role: RoleAdmin, wantErr: errAny},
		{name: "control char", user: "a\nb", password: "pw", role: RoleAdmin, wantErr: errAny},
		{name: "too long", user: strings.Repeat("x", maxNameLen+1), password: "pw", role: RoleAdmin, wantErr: errAny},
		{name: "empty password", user: "frank", password: "", role: RoleAdmin, wantErr: errAny},
		{name: "invalid role", user: "gina", password: "pw", role: 0, wantErr: errAny},
	}
	s := newTestStore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Add(tt.user, tt.password, tt.role)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Add: got error %v, want nil", err)
			case tt.wantErr == errAny && err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Add: got error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got, ok := s.Lookup(tt.user)
			if want := (User{Name: tt.user, Role: tt.role}); !ok || got != want {
				t.Errorf("Lookup(%q) = %v, %v; want %v, true", tt.user, got, ok, want)
			}
		})
	}
}

// errAny stands for "some error" in tables of expected errors.
var errAny = errors.New("any error")

func TestStore_Verify(t *testing.T) {
	s := newTestStore(t)
	tests := []struct {
		name, user, password string
		want                 User
		wantErr              error
	}{
		{name: "right admin", user: "alice", password: "alice-pw", want: User{Name: "alice", Role: RoleAdmin}},
		{name: "right readonly", user: "carol", password: "carol-pw", want: User{Name: "carol", Role: RoleReadOnly}},
		{name: "wrong password", user: "alice", password: "bob-pw", wantErr: ErrBadPassword},
		{name: "empty password", user: "alice", password: "", wantErr: ErrBadPassword},
		{name: "password prefix", user: "alice", password: "alice-p", wantErr: ErrBadPassword},
		{name: "case matters", user: "Alice", password: "alice-pw", wantErr: ErrUnknownUser},
		{name: "unknown user", user: "mallory", password: "alice-pw", wantErr: ErrUnknownUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Verify(tt.user, tt.password)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify(%q): got error %v, want %v", tt.user, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Verify(%q) = %v, want %v", tt.user, got, tt.want)
			}
		})
	}
}

func TestStore_Remove(t *testing.T) {
	s := newTestStore(t)
	if got, want := s.Remove("bob"), true; got != want {
		t.Errorf("Remove(bob) = %v, want %v", got, want)
	}
	if got, want := s.Remove("bob"), false; got != want {
		t.Errorf("second Remove(bob) = %v, want %v", got, want)
	}
	if _, err := s.Verify("bob", "bob-pw"); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("Verify(removed bob): got error %v, want %v", err, ErrUnknownUser)
	}
	if got, want := s.Len(), 2; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
}

func TestStore_Concurrent(t *testing.T) {
	s := newTestStore(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := []string{"alice", "bob", "carol"}[i%3]
			if _, err := s.Verify(name, name+"-pw"); err != nil {
				t.Errorf("Verify(%q): %v", name, err)
			}
		})
		wg.Go(func() {
			s.Lookup("alice")
			s.NativePasswordHash("bob")
		})
	}
	wg.Go(func() {
		if err := s.Add("dave", "dave-pw", RoleReadOnly); err != nil {
			t.Errorf("Add(dave): %v", err)
		}
	})
	wg.Wait()
}
