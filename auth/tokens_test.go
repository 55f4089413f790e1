package auth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var testKey = bytes.Repeat([]byte{0x42}, KeyLen)

func newTestTokens(t testing.TB, key []byte, users UserLookup, opts ...TokenOption) *Tokens {
	t.Helper()
	tok, err := NewTokens(key, users, opts...)
	if err != nil {
		t.Fatalf("NewTokens: %v", err)
	}
	return tok
}

// signClaims signs arbitrary claims with key, for forging tokens.
func signClaims(t testing.TB, method jwt.SigningMethod, key any, claims jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s
}

func TestTokens_Issue(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tokens := newTestTokens(t, testKey, newTestStore(t), WithTTL(time.Hour), WithClock(func() time.Time { return now }))
	token, expires, err := tokens.Issue(User{Name: "bob", Role: RoleReadWrite})
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	if want := now.Add(time.Hour); !expires.Equal(want) {
		t.Errorf("expires = %v, want %v", expires, want)
	}

	var claims tokenClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		t.Fatalf("parse issued token: %v", err)
	}
	if got, want := claims.Subject, "bob"; got != want {
		t.Errorf("sub = %q, want %q", got, want)
	}
	if got, want := claims.Role, "readwrite"; got != want {
		t.Errorf("role = %q, want %q", got, want)
	}
	if got, want := claims.IssuedAt.Time, now; !got.Equal(want) {
		t.Errorf("iat = %v, want %v", got, want)
	}
	if got, want := claims.ExpiresAt.Time, now.Add(time.Hour); !got.Equal(want) {
		t.Errorf("exp = %v, want %v", got, want)
	}
	if got, want := len(claims.ID), 32; got != want {
		t.Errorf("jti length = %d, want %d", got, want)
	}

	again, _, err := tokens.Issue(User{Name: "bob", Role: RoleReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	if again == token {
		t.Errorf("two tokens issued in the same second are equal; want distinct token ids")
	}
}

func TestTokens_Verify(t *testing.T) {
	users := newTestStore(t)
	tokens := newTestTokens(t, testKey, users)
	issue := func(tok *Tokens, u User) string {
		t.Helper()
		s, _, err := tok.Issue(u)
		if err != nil {
			t.Fatalf("Issue: %v", err)
		}
		return s
	}
	bob := User{Name: "bob", Role: RoleReadWrite}
	good := issue(tokens, bob)
	past := newTestTokens(t, testKey, users, WithTTL(time.Hour), WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }))
	otherKey := newTestTokens(t, bytes.Repeat([]byte{0x43}, KeyLen), users)

	// Swap in a payload claiming admin while keeping carol's signature.
	carol := strings.Split(issue(tokens, User{Name: "carol", Role: RoleReadOnly}), ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"role":"admin","iss":"quiver","sub":"alice","exp":4102444800,"iat":1700000000}`))
	swapped := carol[0] + "." + forged + "." + carol[2]

	parts := strings.Split(good, ".")
	sig := []byte(parts[2])
	sig[0] ^= 1 // first character: all of its bits count
	badSig := parts[0] + "." + parts[1] + "." + string(sig)

	exp := jwt.NewNumericDate(time.Now().Add(time.Hour))
	tests := []struct {
		name    string
		token   string
		want    User
		wantErr error
	}{
		{name: "valid", token: good, want: bob},
		{name: "expired", token: issue(past, bob), wantErr: ErrTokenExpired},
		{name: "tampered payload", token: swapped, wantErr: ErrBadToken},
		{name: "tampered signature", token: badSig, wantErr: ErrBadToken},
		{name: "wrong key", token: issue(otherKey, bob), wantErr: ErrBadToken},
		{name: "alg none", token: signClaims(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType,
			tokenClaims{Role: "admin", RegisteredClaims: jwt.RegisteredClaims{Issuer: tokenIssuer, Subject: "alice", ExpiresAt: exp}}), wantErr: ErrBadToken},
		{name: "HS512", token: signClaims(t, jwt.SigningMethodHS512, testKey,
			tokenClaims{RegisteredClaims: jwt.RegisteredClaims{Issuer: tokenIssuer, Subject: "alice", ExpiresAt: exp}}), wantErr: ErrBadToken},
		{name: "other issuer", token: signClaims(t, jwt.SigningMethodHS256, testKey,
			tokenClaims{RegisteredClaims: jwt.RegisteredClaims{Issuer: "other", Subject: "alice", ExpiresAt: exp}}), wantErr: ErrBadToken},
		{name: "no expiry", token: signClaims(t, jwt.SigningMethodHS256, testKey,
			tokenClaims{RegisteredClaims: jwt.RegisteredClaims{Issuer: tokenIssuer, Subject: "alice"}}), wantErr: ErrBadToken},
		{name: "no subject", token: signClaims(t, jwt.SigningMethodHS256, testKey,
			tokenClaims{RegisteredClaims: jwt.RegisteredClaims{Issuer: tokenIssuer, ExpiresAt: exp}}), wantErr: ErrBadToken},
		{name: "unknown user", token: issue(tokens, User{Name: "mallory", Role: RoleAdmin}), wantErr: ErrBadToken},
		{name: "garbage", token: "not-a-token", wantErr: ErrBadToken},
		{name: "empty", token: "", wantErr: ErrBadToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tokens.Verify(tt.token)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify: got error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTokens_VerifyRemovedUser(t *testing.T) {
	users := newTestStore(t)
	tokens := newTestTokens(t, testKey, users)
	token, _, err := tokens.Issue(User{Name: "bob", Role: RoleReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	users.Remove("bob")
	if _, err := tokens.Verify(token); !errors.Is(err, ErrBadToken) {
		t.Errorf("Verify after Remove: got error %v, want %v", err, ErrBadToken)
	}
}

// TestTokens_VerifyAfterRestart issues a token, then verifies it with a
// new Store and Tokens built the way a restarted server builds them.
func TestTokens_VerifyAfterRestart(t *testing.T) {
	keyFile := KeyFileFor(filepath.Join(t.TempDir(), "q.duckdb"))
	start := func() *Tokens {
		t.Helper()
		key, err := LoadOrCreateKey(keyFile)
		if err != nil {
			t.Fatalf("LoadOrCreateKey: %v", err)
		}
		return newTestTokens(t, key, newTestStore(t))
	}

	token, _, err := start().Issue(User{Name: "alice", Role: RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	got, err := start().Verify(token)
	if want := (User{Name: "alice", Role: RoleAdmin}); err != nil || got != want {
		t.Errorf("Verify after restart = %v, %v; want %v, nil", got, err, want)
	}

	// Without the key file a restart gets a new key, and the token dies.
	fresh, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTestTokens(t, fresh, newTestStore(t)).Verify(token); !errors.Is(err, ErrBadToken) {
		t.Errorf("Verify with a new key: got error %v, want %v", err, ErrBadToken)
	}
}

func TestNewTokens(t *testing.T) {
	users := NewStore()
	tests := []struct {
		name  string
		key   []byte
		users UserLookup
		opts  []TokenOption
	}{
		{name: "short key", key: testKey[:16], users: users},
		{name: "nil users", key: testKey, users: nil},
		{name: "zero ttl", key: testKey, users: users, opts: []TokenOption{WithTTL(0)}},
		{name: "nil clock", key: testKey, users: users, opts: []TokenOption{WithClock(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewTokens(tt.key, tt.users, tt.opts...); err == nil {
				t.Fatal("NewTokens: got nil error, want one")
			}
		})
	}
	tok := newTestTokens(t, testKey, users)
	if got, want := tok.TTL(), DefaultTokenTTL; got != want {
		t.Errorf("default TTL = %v, want %v", got, want)
	}
}

// TestTokens_PasswordChange checks a password change revokes the tokens
// issued before it, and that a token verifies in every process that has
// the key and the same password, even where the password was hashed with
// another salt (users given as flags on each replica).
func TestTokens_PasswordChange(t *testing.T) {
	users := newTestStore(t)
	tokens := newTestTokens(t, testKey, users)
	token, _, err := tokens.Issue(User{Name: "bob", Role: RoleReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	replica := newTestTokens(t, testKey, newTestStore(t))
	if _, err := replica.Verify(token); err != nil {
		t.Errorf("on a replica with its own hash of the same password: %v", err)
	}
	if err := users.SetPassword("bob", "bob-new"); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Verify(token); !errors.Is(err, ErrBadToken) {
		t.Errorf("after a password change: got %v, want %v", err, ErrBadToken)
	}
	fresh, _, err := tokens.Issue(User{Name: "bob", Role: RoleReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Verify(fresh); err != nil {
		t.Errorf("a token issued after the change: %v", err)
	}
}

// TestTokens_VerifyAgain checks that a token verified once is still
// checked on every later call: it expires, it can be revoked, its user
// removed or their password changed.
func TestTokens_VerifyAgain(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tests := []struct {
		name   string
		change func(t *testing.T, users *Store, tokens *Tokens, token string)
		want   error
	}{
		{"unchanged", func(*testing.T, *Store, *Tokens, string) {}, nil},
		{"expired", func(*testing.T, *Store, *Tokens, string) { mu.Lock(); now = now.Add(2 * time.Hour); mu.Unlock() }, ErrTokenExpired},
		{"revoked", func(t *testing.T, _ *Store, tokens *Tokens, token string) {
			if err := tokens.Revoke(token); err != nil {
				t.Fatal(err)
			}
		}, ErrBadToken},
		{"user removed", func(_ *testing.T, users *Store, _ *Tokens, _ string) { users.Remove("bob") }, ErrBadToken},
		{"password changed", func(t *testing.T, users *Store, _ *Tokens, _ string) {
			if err := users.SetPassword("bob", "new-pw"); err != nil {
				t.Fatal(err)
			}
		}, ErrBadToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			users := newTestStore(t)
			tokens := newTestTokens(t, testKey, users, WithTTL(time.Hour), WithClock(clock))
			token, _, err := tokens.Issue(User{Name: "bob", Role: RoleReadWrite})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tokens.Verify(token); err != nil {
				t.Fatalf("first Verify: %v", err)
			}
			tt.change(t, users, tokens, token)
			if _, err := tokens.Verify(token); !errors.Is(err, tt.want) {
				t.Errorf("Verify again: got error %v, want %v", err, tt.want)
			}
		})
	}
}
