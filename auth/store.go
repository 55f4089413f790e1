package auth

import (
	"fmt"
	"runtime"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxNameLen bounds user names; MySQL itself allows 32 characters.
const maxNameLen = 128

// account is one stored user. It is immutable once in the Store.
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

	sem   chan struct{}
	dummy func() passwordHash // hashed against for unknown users
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{
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
}

// Add adds a user. The name must be non-empty, at most 128 bytes of
// printable UTF-8, and contain no ':' (HTTP Basic credentials split on the
// first ':'). The password must be non-empty. Adding a name that exists
// returns ErrUserExists.
func (s *Store) Add(name, password string, role Role) error {
	if err := validateName(name); err != nil {
		return fmt.Errorf("add user: %w", err)
	}
	if password == "" {
		return fmt.Errorf("add user %q: empty password", name)
	}
	if !role.Valid() {
		return fmt.Errorf("add user %q: invalid role %v", name, role)
	}
	pw, err := newPasswordHash(password, defaultArgon)
	if err != nil {
		return fmt.Errorf("add user %q: %w", name, err)
	}
	acc := &account{user: User{Name: name, Role: role}, pw: pw, native: nativeStage2(password)}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[name]; ok {
		return fmt.Errorf("add user %q: %w", name, ErrUserExists)
	}
	s.users[name] = acc
	return nil
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
