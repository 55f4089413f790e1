package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/quiverdata/quiver/internal/durable"
)

// KeyLen is the length in bytes of a generated token signing key.
const KeyLen = 32

// NewKey returns KeyLen random bytes for signing tokens. Use it when there
// is nowhere to keep a key, such as for an in-memory database; tokens then
// die with the process.
func NewKey() ([]byte, error) {
	key := make([]byte, KeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("read random key: %w", err)
	}
	return key, nil
}

// DeriveKey returns a KeyLen-byte key for purpose, derived from key with
// HMAC-SHA256, so that one configured key (the token key) can sign several
// kinds of thing without a signature of one kind ever passing for another.
// Every process given the same key derives the same keys.
func DeriveKey(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("quiver derived key\x00"))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// ParseKey decodes a signing key given as hex, for example from a flag. The
// key must be at least KeyLen bytes (2*KeyLen hex characters).
func ParseKey(hexKey string) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(hexKey))
	if err != nil {
		return nil, fmt.Errorf("parse token key: not hex: %w", err)
	}
	if len(key) < KeyLen {
		return nil, fmt.Errorf("parse token key: %d bytes, want at least %d (%d hex characters)", len(key), KeyLen, 2*KeyLen)
	}
	return key, nil
}

// KeyFileFor returns the path of the token key file that belongs to the
// database at dbPath: dbPath + ".tokenkey". It returns "" for an in-memory
// database (":memory:" or ""), which has nowhere to keep one.
func KeyFileFor(dbPath string) string {
	if dbPath == "" || dbPath == ":memory:" {
		return ""
	}
	return dbPath + ".tokenkey"
}

// LoadOrCreateKey returns the token signing key kept at path, creating the
// file with a new random key if it does not exist.
//
// The file holds the key as 64 hex characters and a newline (32 raw bytes
// are accepted too) and has mode 0600. It is created atomically: written to
// a temporary file in the same directory, synced, then linked into place, so
// a crash leaves either no key file or a whole one, and two processes racing
// to create it end up with the same key.
//
// A file that exists but does not hold a key is an error, never replaced:
// replacing it would invalidate every issued token. So is a key file that
// other users may read or write.
func LoadOrCreateKey(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("load token key: empty path")
	}
	key, err := readKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key, err = NewKey()
	if err != nil {
		return nil, fmt.Errorf("create token key %s: %w", path, err)
	}
	switch err := createKeyFile(path, key); {
	case errors.Is(err, fs.ErrExist):
		// Another process created it first; use theirs.
		return readKeyFile(path)
	case err != nil:
		return nil, fmt.Errorf("create token key %s: %w", path, err)
	}
	return key, nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := openPrivate(path, "token key")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read a little more than a hex key, to tell "too long" from "right".
	buf, err := io.ReadAll(io.LimitReader(f, 4*KeyLen))
	if err != nil {
		return nil, fmt.Errorf("read token key %s: %w", path, err)
	}
	key, err := decodeKeyFile(buf)
	if err != nil {
		return nil, fmt.Errorf("token key %s is corrupt (%w); restore it from a backup, or delete it to make a new key, which invalidates every issued token", path, err)
	}
	return key, nil
}

func decodeKeyFile(b []byte) ([]byte, error) {
	if len(b) == KeyLen {
		return bytes.Clone(b), nil
	}
	text := bytes.TrimSpace(b)
	if len(text) != 2*KeyLen {
		return nil, fmt.Errorf("%d bytes, want %d hex characters", len(b), 2*KeyLen)
	}
	key := make([]byte, KeyLen)
	if _, err := hex.Decode(key, text); err != nil {
		return nil, fmt.Errorf("not hex: %w", err)
	}
	return key, nil
}

// createKeyFile writes key to path, mode 0600, without ever exposing a
// partial file. It returns an error wrapping fs.ErrExist if path already
// exists.
func createKeyFile(path string, key []byte) error {
	text := make([]byte, 0, 2*len(key)+1)
	text = hex.AppendEncode(text, key)
	text = append(text, '\n')
	return durable.CreateFile(path, text, 0o600)
}

// openPrivate opens a regular file that only its owner may read (mode 0600
// or stricter; not checked on Windows). what names it in errors.
func openPrivate(path, what string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s %s is not a regular file", what, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		f.Close()
		return nil, fmt.Errorf("%s %s has mode %#o; other users must not read it: chmod 600 %s", what, path, perm, path)
	}
	return f, nil
}
