package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// UserActionType is the Flight action (DoAction) by which an admin
// manages the users of a running server. Its body is a UserRequest as
// JSON, and its one result a UserReply as JSON.
const UserActionType = "quiver.user"

// The operations of a UserRequest.
const (
	OpAdd    = "add"    // add Name with Password and Role (default readonly)
	OpPasswd = "passwd" // set Name's Password
	OpDel    = "del"    // delete Name
	OpRole   = "role"   // set Name's Role
	OpList   = "list"   // list the users
)

// UserRequest is one change to the users, or a listing: what
// `quiver user` does, to a users file or through the quiver.user action.
type UserRequest struct {
	Op       string `json:"op"`
	Name     string `json:"name,omitempty"`
	Password string `json:"password,omitempty"`
	Role     string `json:"role,omitempty"`
}

// UserReply is the answer to a UserRequest: every user after it.
type UserReply struct {
	Users []UserEntry `json:"users"`
}

// UserEntry is one user of a UserReply.
type UserEntry struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// errBadRequest marks a UserRequest that cannot be applied as given.
var errBadRequest = errors.New("bad user request")

// Apply makes the change r asks of s (OpList changes nothing). Its errors
// wrap ErrUserExists, ErrUnknownUser or ErrLastAdmin, or say what is wrong
// with the request.
func (r UserRequest) Apply(s *Store) error {
	switch r.Op {
	case OpAdd, OpPasswd, OpDel, OpRole, OpList:
	default:
		return fmt.Errorf("%w: unknown operation %q: want add, passwd, del, role or list", errBadRequest, r.Op)
	}
	if r.Op != OpList {
		if err := validateName(r.Name); err != nil {
			return fmt.Errorf("%w: %w", errBadRequest, err)
		}
	}
	needPassword := func() error {
		if r.Password == "" {
			return fmt.Errorf("%w: user %q: %w", errBadRequest, r.Name, ErrEmptyPassword)
		}
		return nil
	}
	role := func(def Role) (Role, error) {
		if r.Role == "" && def != 0 {
			return def, nil
		}
		ro, err := ParseRole(r.Role)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", errBadRequest, err)
		}
		return ro, nil
	}
	switch r.Op {
	case OpList:
		return nil
	case OpAdd:
		ro, err := role(RoleReadOnly)
		if err != nil {
			return err
		}
		if err := needPassword(); err != nil {
			return err
		}
		return s.Add(r.Name, r.Password, ro)
	case OpPasswd:
		if err := needPassword(); err != nil {
			return err
		}
		return s.SetPassword(r.Name, r.Password)
	case OpDel:
		return s.Delete(r.Name)
	case OpRole:
		ro, err := role(0)
		if err != nil {
			return err
		}
		return s.SetRole(r.Name, ro)
	}
	return nil
}

// Reply lists s's users.
func Reply(s *Store) UserReply {
	users := s.Users()
	out := UserReply{Users: make([]UserEntry, len(users))}
	for i, u := range users {
		out.Users[i] = UserEntry{Name: u.Name, Role: u.Role.String()}
	}
	return out
}

// UsersFile keeps a live Store in step with a users file: Reload reads the
// file again (a server does on SIGHUP), and the quiver.user action
// (HandleAction) changes the file and the Store together. Either way the
// Store's users are replaced at once: sessions and tokens of users still
// there go on, with their new role from their next call; those of deleted
// users, or users whose password changed, stop. Every change is audited.
// UsersFile is safe for concurrent use.
type UsersFile struct {
	path  string
	users *Store
	audit *slog.Logger

	mu sync.Mutex // serializes Reload and edits
}

// LoadUsersFile loads the users file at path into users and returns the
// UsersFile that keeps them in step. A missing file, or one with no users,
// is an error: a server must not start open by accident. audit receives
// the user changes; nil discards them.
func LoadUsersFile(path string, users *Store, audit *slog.Logger) (*UsersFile, error) {
	if audit == nil {
		audit = slog.New(slog.DiscardHandler)
	}
	f := &UsersFile{path: path, users: users, audit: audit}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is the users file's path.
func (f *UsersFile) Path() string { return f.path }

// Reload reads the users file again and replaces the Store's users with
// its own. A file that cannot be read, or has no users, changes nothing.
func (f *UsersFile) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next, err := ReadUsersFile(f.path)
	if err != nil {
		return fmt.Errorf("load users: %w", err)
	}
	if next.Len() == 0 {
		return fmt.Errorf("load users: users file %s has no users; add one with: quiver user add NAME --role admin --users-file %s", f.path, f.path)
	}
	f.install(next, "users file")
	return nil
}

// install replaces the Store's users with next's and audits what changed,
// naming who changed it. The caller holds f.mu.
func (f *UsersFile) install(next *Store, by string) {
	before := map[string]*account{}
	f.users.mu.RLock()
	for name, acc := range f.users.users {
		before[name] = acc
	}
	f.users.mu.RUnlock()
	f.users.replaceUsers(next)
	next.mu.RLock()
	defer next.mu.RUnlock()
	for name, acc := range next.users {
		old := before[name]
		switch {
		case old == nil:
			f.audit.Info("user added", logKeyUser, name, logKeyRole, acc.user.Role.String(), logKeyBy, by)
		case old.user.Role != acc.user.Role:
			f.audit.Info("user role changed", logKeyUser, name, logKeyRole, acc.user.Role.String(), logKeyWas, old.user.Role.String(), logKeyBy, by)
		}
		if old != nil && !bytes.Equal(old.pw.salt, acc.pw.salt) {
			f.audit.Info("user password changed", logKeyUser, name, logKeyBy, by)
		}
	}
	for name, old := range before {
		if next.users[name] == nil {
			f.audit.Info("user deleted", logKeyUser, name, logKeyRole, old.user.Role.String(), logKeyBy, by)
		}
	}
}

// Log attribute keys of user changes.
const (
	logKeyRole = "role"
	logKeyWas  = "was"
	logKeyBy   = "by"
	logKeyOp   = "op"
)

// HandleAction serves the quiver.user action: the caller, who must be an
// admin, applies a UserRequest to the users file and the Store. Errors are
// gRPC statuses: PermissionDenied for a caller who is not an admin,
// InvalidArgument, NotFound, AlreadyExists or FailedPrecondition for a
// request that cannot be applied.
func (f *UsersFile) HandleAction(ctx context.Context, body []byte) ([]byte, error) {
	caller, ok := UserFromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, msgAuthRequired)
	}
	var req UserRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s action: body is not a user request: %v", UserActionType, err)
	}
	if !caller.Role.IsAdmin() {
		f.audit.Warn("user change refused", logKeyUser, req.Name, logKeyOp, req.Op, logKeyBy, caller.Name, logKeyReason, "not an admin")
		return nil, status.Errorf(codes.PermissionDenied, "user %s has the %s role; managing users needs the admin role", caller.Name, caller.Role)
	}
	users := f.users
	if req.Op != OpList {
		f.mu.Lock()
		next, err := EditUsersFile(f.path, req.Apply)
		if err == nil {
			f.install(next, caller.Name)
		}
		f.mu.Unlock()
		if err != nil {
			f.audit.Warn("user change failed", logKeyUser, req.Name, logKeyOp, req.Op, logKeyBy, caller.Name, logKeyReason, err)
			return nil, userStatus(err)
		}
		users = next
	}
	out, err := json.Marshal(Reply(users))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode the user list: %v", err)
	}
	return out, nil
}

// userStatus maps a failed user change to the status its caller sees.
func userStatus(err error) error {
	code := codes.Internal
	switch {
	case errors.Is(err, errBadRequest):
		code = codes.InvalidArgument
	case errors.Is(err, ErrUnknownUser):
		code = codes.NotFound
	case errors.Is(err, ErrUserExists):
		code = codes.AlreadyExists
	case errors.Is(err, ErrLastAdmin):
		code = codes.FailedPrecondition
	}
	return status.Error(code, err.Error())
}
