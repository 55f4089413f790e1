package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"runtime"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
)

// argonParams are the Argon2id cost parameters of one stored hash. They are
// kept with the hash so that the defaults can change without invalidating
// stored passwords.
type argonParams struct {
	time    uint32
	memory  uint32 // KiB
	threads uint8
	keyLen  uint32
}

// defaultArgon follows OWASP's minimum for Argon2id: 19 MiB, 2 passes,
// 1 lane. One verification takes tens of milliseconds.
var defaultArgon = argonParams{time: 2, memory: 19 * 1024, threads: 1, keyLen: 32}

const saltLen = 16

// passwordHash is a salted Argon2id hash of a password.
type passwordHash struct {
	params argonParams
	salt   []byte
	key    []byte
}

// newPasswordHash hashes password with a fresh random salt.
func newPasswordHash(password string, p argonParams) (passwordHash, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return passwordHash{}, fmt.Errorf("read salt: %w", err)
	}
	return passwordHash{params: p, salt: salt, key: p.derive(password, salt)}, nil
}

// argonSlots bounds the Argon2id derivations running at once: each holds
// its memory parameter (19 MiB by default) for tens of milliseconds of
// CPU, so a storm of logins (a thousand clients starting at once) would
// otherwise take gigabytes and gain nothing past the CPUs. Logins beyond
// it wait their turn.
var argonSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// argonRunning and argonPeak count derivations in progress, for tests.
var argonRunning, argonPeak atomic.Int64

func (p argonParams) derive(password string, salt []byte) []byte {
	argonSlots <- struct{}{}
	defer func() { <-argonSlots }()
	n := argonRunning.Add(1)
	defer argonRunning.Add(-1)
	for {
		peak := argonPeak.Load()
		if n <= peak || argonPeak.CompareAndSwap(peak, n) {
			break
		}
	}
	return argon2.IDKey([]byte(password), salt, p.time, p.memory, p.threads, p.keyLen)
}

// matches reports whether password hashes to h, comparing in constant time.
func (h passwordHash) matches(password string) bool {
	return subtle.ConstantTimeCompare(h.params.derive(password, h.salt), h.key) == 1
}
