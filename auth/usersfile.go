package auth

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/quiverdata/quiver/internal/durable"
)

// The users file holds one user a line, like /etc/shadow:
//
//	NAME:ROLE:ARGON2ID:MYSQL_NATIVE
//	alice:admin:$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>:*<40 hex digits>
//
// ARGON2ID is the password's Argon2id hash in the PHC string format (salt
// and hash in unpadded base64), as Verify checks it. MYSQL_NATIVE is
// SHA1(SHA1(password)) in MySQL's own notation, which the MySQL protocol's
// mysql_native_password needs; it is unsalted, which is one more reason the
// file must stay private. Blank lines and lines starting with # are
// ignored. Names cannot hold ':' (Store.Add refuses them), and neither
// hash can, so the fields split unambiguously.
//
// The file has mode 0600, like the token key: ReadUsersFile refuses one
// that other users may read or write. EditUsersFile rewrites it
// atomically (a temporary file, synced, renamed into place) under an
// advisory lock on PATH.lock, so that quiver user and a running server's
// quiver.user action never lose each other's changes.

const usersFileHeader = `# quiver users: NAME:ROLE:ARGON2ID:MYSQL_NATIVE, one user a line.
# Edit with "quiver user"; keep this file mode 0600 (the MySQL hash is unsalted).
`

// Bounds on the Argon2id parameters a users file may ask for, so that a
// damaged file cannot make one login take minutes or gigabytes.
const (
	maxArgonTime    = 64
	maxArgonMemory  = 1 << 20 // KiB: 1 GiB
	maxArgonThreads = 16
)

// ReadUsersFile loads the users file at path into a new Store (without a
// Guard). It refuses a file that other users may read or write.
func ReadUsersFile(path string) (*Store, error) {
	b, err := readPrivateFile(path)
	if err != nil {
		return nil, err
	}
	s, err := parseUsersFile(b)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return s, nil
}

// readPrivateFile reads a regular file of mode 0600 or stricter.
func readPrivateFile(path string) ([]byte, error) {
	f, err := openPrivate(path, "users file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read users file %s: %w", path, err)
	}
	return b, nil
}

// EditUsersFile changes the users file at path: under its lock, it loads
// the file (an empty Store when there is none yet), calls edit, and, if
// edit returns nil, writes the result back atomically with mode 0600. It
// returns the Store as written.
func EditUsersFile(path string, edit func(*Store) error) (*Store, error) {
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("lock users file %s: %w", path, err)
	}
	defer unlock()
	s, err := ReadUsersFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s = NewStore()
	case err != nil:
		return nil, err
	}
	if err := edit(s); err != nil {
		return nil, err
	}
	if err := durable.WriteFile(path, s.marshalUsers(), 0o600); err != nil {
		return nil, fmt.Errorf("write users file %s: %w", path, err)
	}
	return s, nil
}

// marshalUsers encodes the Store as a users file, users sorted by name.
func (s *Store) marshalUsers() []byte {
	var b bytes.Buffer
	b.WriteString(usersFileHeader)
	for _, u := range s.Users() {
		acc := s.account(u.Name)
		if acc == nil {
			continue
		}
		fmt.Fprintf(&b, "%s:%s:%s:*%X\n", acc.user.Name, acc.user.Role, acc.pw.phc(), acc.native[:])
	}
	return b.Bytes()
}

// parseUsersFile decodes a users file into a new Store.
func parseUsersFile(b []byte) (*Store, error) {
	s := NewStore()
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		acc, err := parseUserLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, ok := s.users[acc.user.Name]; ok {
			return nil, fmt.Errorf("line %d: user %q is listed twice", n, acc.user.Name)
		}
		s.users[acc.user.Name] = acc
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseUserLine decodes NAME:ROLE:ARGON2ID:MYSQL_NATIVE.
func parseUserLine(line string) (*account, error) {
	f := strings.Split(line, ":")
	if len(f) != 4 {
		return nil, fmt.Errorf("want NAME:ROLE:ARGON2ID:MYSQL_NATIVE, got %d fields", len(f))
	}
	if err := validateName(f[0]); err != nil {
		return nil, err
	}
	role, err := ParseRole(f[1])
	if err != nil {
		return nil, fmt.Errorf("user %q: %w", f[0], err)
	}
	pw, err := parsePHC(f[2])
	if err != nil {
		return nil, fmt.Errorf("user %q: password hash: %w", f[0], err)
	}
	acc := &account{user: User{Name: f[0], Role: role}, pw: pw}
	native, ok := strings.CutPrefix(f[3], "*")
	if !ok || len(native) != 2*nativeHashLen {
		return nil, fmt.Errorf("user %q: MySQL hash: want * and %d hex digits", f[0], 2*nativeHashLen)
	}
	if _, err := hex.Decode(acc.native[:], []byte(native)); err != nil {
		return nil, fmt.Errorf("user %q: MySQL hash: %w", f[0], err)
	}
	return acc, nil
}

// phc encodes the hash as a PHC string:
// $argon2id$v=19$m=MEMORY,t=TIME,p=THREADS$SALT$HASH.
func (h passwordHash) phc() string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version,
		h.params.memory, h.params.time, h.params.threads,
		base64.RawStdEncoding.EncodeToString(h.salt), base64.RawStdEncoding.EncodeToString(h.key))
}

// parsePHC decodes what phc encodes, within the bounds above.
func parsePHC(s string) (passwordHash, error) {
	f := strings.Split(s, "$")
	if len(f) != 6 || f[0] != "" || f[1] != "argon2id" {
		return passwordHash{}, errors.New("want $argon2id$v=19$m=…,t=…,p=…$SALT$HASH")
	}
	if f[2] != "v="+strconv.Itoa(argon2.Version) {
		return passwordHash{}, fmt.Errorf("Argon2 version %q, want v=%d", f[2], argon2.Version)
	}
	var h passwordHash
	var m, t, p uint64
	for _, kv := range strings.Split(f[3], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return passwordHash{}, fmt.Errorf("parameter %q: %w", kv, err)
		}
		switch k {
		case "m":
			m = n
		case "t":
			t = n
		case "p":
			p = n
		default:
			return passwordHash{}, fmt.Errorf("unknown parameter %q", k)
		}
	}
	switch {
	case t < 1 || t > maxArgonTime:
		return passwordHash{}, fmt.Errorf("t=%d, want 1 to %d", t, maxArgonTime)
	case p < 1 || p > maxArgonThreads:
		return passwordHash{}, fmt.Errorf("p=%d, want 1 to %d", p, maxArgonThreads)
	case m < 8*p || m > maxArgonMemory:
		return passwordHash{}, fmt.Errorf("m=%d, want %d to %d", m, 8*p, maxArgonMemory)
	}
	var err error
	if h.salt, err = base64.RawStdEncoding.DecodeString(f[4]); err != nil || len(h.salt) < 8 || len(h.salt) > 64 {
		return passwordHash{}, errors.New("salt: want 8 to 64 bytes of unpadded base64")
	}
	if h.key, err = base64.RawStdEncoding.DecodeString(f[5]); err != nil || len(h.key) < 16 || len(h.key) > 64 {
		return passwordHash{}, errors.New("hash: want 16 to 64 bytes of unpadded base64")
	}
	h.params = argonParams{time: uint32(t), memory: uint32(m), threads: uint8(p), keyLen: uint32(len(h.key))}
	return h, nil
}
