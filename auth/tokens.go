package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultTokenTTL is how long a bearer token is valid unless WithTTL says
// otherwise.
const DefaultTokenTTL = 24 * time.Hour

// tokenIssuer is the "iss" claim of every token; tokens from anything else
// are rejected.
const tokenIssuer = "quiver"

// UserLookup finds a user by name. *Store implements it.
type UserLookup interface {
	Lookup(name string) (User, bool)
}

// Tokens issues and verifies signed bearer tokens (HS256 JWTs). A token
// carries the user's name ("sub"), role ("role"), issue time, expiry and a
// random id ("jti"). It verifies in any process that has the same key, so
// tokens survive a restart when the key is kept with LoadOrCreateKey.
// Tokens is safe for concurrent use.
type Tokens struct {
	key    []byte
	users  UserLookup
	cfg    tokenConfig
	parser *jwt.Parser

	// verified keeps the claims of tokens whose signature and claims
	// checked out, so that the next call with the same token skips
	// parsing and the HMAC: every Flight call carries its token, and a
	// prepared single-row INSERT (three calls) spent 4–6% of the
	// server's CPU verifying them. Expiry, revocation, the user and the
	// password stamp are still checked on every call.
	mu       sync.Mutex
	verified map[string]tokenClaims
}

// maxVerified bounds Tokens.verified; it is emptied when full.
const maxVerified = 4096

// TokenOption configures Tokens.
type TokenOption func(*tokenConfig)

type tokenConfig struct {
	ttl     time.Duration
	now     func() time.Time
	revoked *Revocations
}

// WithTTL sets how long issued tokens stay valid. It must be positive; the
// default is DefaultTokenTTL.
func WithTTL(d time.Duration) TokenOption { return func(c *tokenConfig) { c.ttl = d } }

// WithRevocations makes Verify refuse the tokens on r, and Revoke add
// to it. Without it, Revoke keeps a list in memory of its own.
func WithRevocations(r *Revocations) TokenOption {
	return func(c *tokenConfig) { c.revoked = r }
}

// WithClock sets the clock used to stamp and check tokens, for tests.
func WithClock(now func() time.Time) TokenOption { return func(c *tokenConfig) { c.now = now } }

func (c *tokenConfig) validate() error {
	if c.ttl <= 0 {
		return fmt.Errorf("token ttl %v is not positive", c.ttl)
	}
	if c.now == nil {
		return errors.New("nil clock")
	}
	return nil
}

// NewTokens returns a token issuer that signs with key (at least KeyLen
// bytes) and, when verifying, checks that the token's user still exists in
// users.
func NewTokens(key []byte, users UserLookup, opts ...TokenOption) (*Tokens, error) {
	if len(key) < KeyLen {
		return nil, fmt.Errorf("new tokens: key is %d bytes, want at least %d", len(key), KeyLen)
	}
	if users == nil {
		return nil, errors.New("new tokens: nil user lookup")
	}
	cfg := tokenConfig{ttl: DefaultTokenTTL, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new tokens: %w", err)
	}
	if cfg.revoked == nil {
		var err error
		if cfg.revoked, err = OpenRevocations("", WithRevocationClock(cfg.now)); err != nil {
			return nil, fmt.Errorf("new tokens: %w", err)
		}
	}
	return &Tokens{
		key:   append([]byte(nil), key...),
		users: users,
		cfg:   cfg,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithIssuer(tokenIssuer),
			jwt.WithTimeFunc(cfg.now),
		),
	}, nil
}

// TTL returns how long issued tokens stay valid.
func (t *Tokens) TTL() time.Duration { return t.cfg.ttl }

// tokenClaims is the JWT payload.
type tokenClaims struct {
	Role string `json:"role"`
	// Stamp names the user's password when the token was issued (see
	// Tokens.stamp): a token outlives no password change.
	Stamp string `json:"pw,omitempty"`
	jwt.RegisteredClaims
}

// passwordHasher is a UserLookup that can tell a user's password apart
// from the one before it (*Store can). Tokens over one are revoked by a
// password change.
type passwordHasher interface {
	NativePasswordHash(name string) ([]byte, bool)
}

// stamp names name's current password, or is "" when the UserLookup
// cannot tell: an HMAC, under the token key, of the password's unsalted
// MySQL hash, truncated. It is the same in every process that has the key
// and the password (replicas, a restarted server, users given as flags and
// hashed afresh at each start), and tells nothing of the password to whom
// does not hold the key.
func (t *Tokens) stamp(name string) string {
	ph, ok := t.users.(passwordHasher)
	if !ok {
		return ""
	}
	h, ok := ph.NativePasswordHash(name)
	if !ok {
		return ""
	}
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte("quiver password stamp\x00"))
	m.Write(h)
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// Issue returns a signed token for u and the time it expires.
func (t *Tokens) Issue(u User) (string, time.Time, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", time.Time{}, fmt.Errorf("issue token: read token id: %w", err)
	}
	now := t.cfg.now()
	expires := now.Add(t.cfg.ttl)
	claims := tokenClaims{
		Role:  u.Role.String(),
		Stamp: t.stamp(u.Name),
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    tokenIssuer,
			Subject:   u.Name,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(expires),
			ID:        hex.EncodeToString(id),
		},
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("issue token: sign: %w", err)
	}
	// The expiry is rounded to whole seconds in the token; report that.
	return signed, claims.ExpiresAt.Time, nil
}

// Verify checks a token's signature, issuer and expiry, that it was not
// revoked (Revoke), that its user still exists and, over a Store, that
// the user's password has not changed since. It returns the user as the store has it now, so a role
// change takes effect on the next call. Errors wrap ErrTokenExpired or
// ErrBadToken.
func (t *Tokens) Verify(token string) (User, error) {
	claims, err := t.parse(token)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return User{}, ErrTokenExpired
	case err != nil:
		return User{}, fmt.Errorf("%w: %w", ErrBadToken, err)
	case claims.Subject == "":
		return User{}, fmt.Errorf("%w: no subject", ErrBadToken)
	case t.cfg.revoked.Revoked(claims.ID, claims.Subject, issuedAt(claims)):
		return User{}, fmt.Errorf("%w: it was revoked (logged out)", ErrBadToken)
	}
	u, ok := t.users.Lookup(claims.Subject)
	if !ok {
		return User{}, fmt.Errorf("%w: user %q no longer exists", ErrBadToken, claims.Subject)
	}
	if stamp := t.stamp(claims.Subject); !hmac.Equal([]byte(stamp), []byte(claims.Stamp)) {
		return User{}, fmt.Errorf("%w: the password of user %q changed", ErrBadToken, claims.Subject)
	}
	return u, nil
}

// parse checks token's signature and claims, or finds it checked
// before and not expired since.
func (t *Tokens) parse(token string) (tokenClaims, error) {
	t.mu.Lock()
	claims, hit := t.verified[token]
	t.mu.Unlock()
	if hit {
		if !t.cfg.now().Before(claims.ExpiresAt.Time) {
			t.mu.Lock()
			delete(t.verified, token)
			t.mu.Unlock()
			return tokenClaims{}, jwt.ErrTokenExpired
		}
		return claims, nil
	}
	if _, err := t.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return t.key, nil }); err != nil {
		return tokenClaims{}, err
	}
	t.mu.Lock()
	if t.verified == nil || len(t.verified) >= maxVerified {
		t.verified = make(map[string]tokenClaims)
	}
	t.verified[token] = claims
	t.mu.Unlock()
	return claims, nil
}

// Revoke puts a token on the revocation list until it expires, so that
// Verify refuses it from then on: in this process at once, and in the
// replicas that share the list's file within its refresh interval (see
// Revocations). A token that does not verify, or has expired, needs no
// revoking.
func (t *Tokens) Revoke(token string) error {
	var claims tokenClaims
	if _, err := t.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return t.key, nil }); err != nil {
		return nil
	}
	if claims.ID == "" || claims.Subject == "" || claims.ExpiresAt == nil {
		return nil
	}
	return t.cfg.revoked.revoke(claims.ID, claims.Subject, claims.ExpiresAt.Time, t.cfg.ttl)
}

// issuedAt is a token's issue time; zero, which every revocation of a
// user's tokens covers, when it has none.
func issuedAt(c tokenClaims) time.Time {
	if c.IssuedAt == nil {
		return time.Time{}
	}
	return c.IssuedAt.Time
}
