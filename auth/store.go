package auth

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxNameLen bounds user names; MySQL itself allows 32 characters.
const maxNameLen = 128

// account is one stored user. It is immutable once in the Store: a
// password or role change replaces it.
type account struct {
	user   User
	pw     passwordHash
	native [nativeHashLen]byte // SHA1(SHA1(password)) for mysql_native_password
}

// Store is an in-memory set of users with their password hashes. It is safe
// for concurrent use.
//
// A Store keeps only a salted Argon2id hash of each password, plus the
// SHA1(SHA1(password)) that mysql_native_password needs. That second hash is
// unsalted and fast to attack; it is what the MySQL protocol requires.
//
// Password checks are expensive on purpose (tens of milliseconds and 19 MiB
// each), so the Store runs at most GOMAXPROCS of them at once to keep memory
// bounded when many clients log in together.
type Store struct {
	mu    sync.RWMutex
	users map[string]*account

	guard *Guard
	sem   chan struct{}
	dummy func() passwordHash // hashed against for unknown users
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithGuard makes every endpoint that checks passwords against the Store
// rate-limit and audit its logins through g (see Store.Guard).
func WithGuard(g *Guard) StoreOption { return func(s *Store) { s.guard = g } }

// NewStore returns an empty Store.
func NewStore(opts ...StoreOption) *Store {
	s := &Store{
		users: make(map[string]*account),
		sem:   make(chan struct{}, runtime.GOMAXPROCS(0)),
		dummy: sync.OnceValue(func() passwordHash {
			h, err := newPasswordHash("quiver-unknown-user", defaultArgon)
			if err != nil {
				// Without randomness no password can be added either;
				// an unsalted dummy is still a fine timing decoy.
				return passwordHash{params: defaultArgon, salt: make([]byte, saltLen), key: make([]byte, defaultArgon.keyLen)}
			}
			return h
		}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Guard returns the login guard that endpoints ask before checking a
// password and tell the outcome after, or nil when logins are neither
// limited nor audited.
func (s *Store) Guard() *Guard { return s.guard }

// Add adds a user. The name must be non-empty, at most 128 bytes of
// printable UTF-8, and contain no ':' (HTTP Basic credentials split on the
// first ':'). The password must be non-empty. Adding a name that exists
// returns ErrUserExists.
func (s *Store) Add(name, password string, role Role) error {
	if err := validateName(name); err != nil {
		return fmt.Errorf("add user: %w", err)
	}
	if !role.Valid() {
		return fmt.Errorf("add user %q: invalid role %v", name, role)
	}
	acc, err := newAccount(User{Name: name, Role: role}, password)
	if err != nil {
		return fmt.Errorf("add user %q: %w", name, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[name]; ok {
		return fmt.Errorf("add user %q: %w", name, ErrUserExists)
	}
	s.users[name] = acc
	return nil
}

// newAccount hashes password for u.
func newAccount(u User, password string) (*account, error) {
	if password == "" {
		return nil, ErrEmptyPassword
	}
	pw, err := newPasswordHash(password, defaultArgon)
	if err != nil {
		return nil, err
	}
	return &account{user: u, pw: pw, native: nativeStage2(password)}, nil
}

// SetPassword changes a user's password. Bearer tokens issued before stop
// verifying (see Tokens.Verify). It returns ErrUnknownUser for a name not
// in the Store.
func (s *Store) SetPassword(name, password string) error {
	acc := s.account(name)
	if acc == nil {
		return fmt.Errorf("change password of %q: %w", name, ErrUnknownUser)
	}
	next, err := newAccount(acc.user, password)
	if err != nil {
		return fmt.Errorf("change password of %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[name] == nil {
		return fmt.Errorf("change password of %q: %w", name, ErrUnknownUser)
	}
	s.users[name] = next
	return nil
}

// SetRole changes a user's role; it takes effect on the user's next call.
// It returns ErrUnknownUser for a name not in the Store, and ErrLastAdmin
// rather than leave the Store without an admin.
func (s *Store) SetRole(name string, role Role) error {
	if !role.Valid() {
		return fmt.Errorf("set role of %q: invalid role %v", name, role)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acc := s.users[name]
	switch {
	case acc == nil:
		return fmt.Errorf("set role of %q: %w", name, ErrUnknownUser)
	case acc.user.Role.IsAdmin() && !role.IsAdmin() && s.admins() == 1:
		return fmt.Errorf("make %q %s: %w", name, role, ErrLastAdmin)
	}
	next := *acc
	next.user.Role = role
	s.users[name] = &next
	return nil
}

// Delete removes a user. Bearer tokens already issued to the user stop
// verifying. It returns ErrUnknownUser for a name not in the Store, and
// ErrLastAdmin rather than remove the only admin.
func (s *Store) Delete(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc := s.users[name]
	switch {
	case acc == nil:
		return fmt.Errorf("delete user %q: %w", name, ErrUnknownUser)
	case acc.user.Role.IsAdmin() && s.admins() == 1:
		return fmt.Errorf("delete user %q: %w", name, ErrLastAdmin)
	}
	delete(s.users, name)
	return nil
}

// admins counts the admins. The caller holds s.mu.
func (s *Store) admins() int {
	n := 0
	for _, acc := range s.users {
		if acc.user.Role.IsAdmin() {
			n++
		}
	}
	return n
}

// Users returns every user, sorted by name.
func (s *Store) Users() []User {
	s.mu.RLock()
	out := make([]User, 0, len(s.users))
	for _, acc := range s.users {
		out = append(out, acc.user)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b User) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// replaceUsers makes s hold exactly the users of from, atomically: a call
// sees the old set or the new one. Tokens of users still there keep
// verifying, so a reload drops no session.
func (s *Store) replaceUsers(from *Store) {
	from.mu.RLock()
	users := make(map[string]*account, len(from.users))
	for name, acc := range from.users {
		users[name] = acc
	}
	from.mu.RUnlock()
	s.mu.Lock()
	s.users = users
	s.mu.Unlock()
}

// Remove deletes a user and reports whether it existed. Bearer tokens
// already issued to the user stop verifying.
func (s *Store) Remove(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.users[name]
	delete(s.users, name)
	return ok
}

// Lookup returns the user with the given name.
func (s *Store) Lookup(name string) (User, bool) {
	acc := s.account(name)
	if acc == nil {
		return User{}, false
	}
	return acc.user, true
}

// Len returns the number of users.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.users)
}

// Verify checks a user's password. It returns ErrUnknownUser or
// ErrBadPassword on failure; both take about as long as a success, so
// timing does not reveal which names exist.
func (s *Store) Verify(name, password string) (User, error) {
	acc := s.account(name)

	s.sem <- struct{}{}
	defer func() { <-s.sem }()

	if acc == nil {
		s.dummy().matches(password)
		return User{}, ErrUnknownUser
	}
	if !acc.pw.matches(password) {
		return User{}, ErrBadPassword
	}
	return acc.user, nil
}

// Login is Verify for a login from addr on endpoint proto ("flight",
// "http"): it asks the Store's Guard first, when it has one, and tells it
// the outcome, so failed logins count against the same lockout on every
// endpoint.
func (s *Store) Login(proto, name, password, addr string) (User, error) {
	g := s.guard
	if g == nil {
		return s.Verify(name, password)
	}
	if err := g.Allow(proto, name, addr); err != nil {
		return User{}, err
	}
	u, err := s.Verify(name, password)
	if err != nil {
		g.Failed(proto, name, addr, err)
		return User{}, err
	}
	g.Succeeded(proto, u.Name, addr)
	return u, nil
}

func (s *Store) account(name string) *account {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.users[name]
}

func validateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty user name")
	case len(name) > maxNameLen:
		return fmt.Errorf("user name longer than %d bytes", maxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("user name %q is not valid UTF-8", name)
	}
	for _, r := range name {
		if r == ':' {
			return fmt.Errorf("user name %q contains ':'", name)
		}
		if !unicode.IsPrint(r) {
			return fmt.Errorf("user name %q contains a non-printable character", name)
		}
	}
	return nil
}
