package auth

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
)

// scramble computes a client's mysql_native_password auth response the way
// the MySQL protocol documents it:
// SHA1(password) XOR SHA1(salt + SHA1(SHA1(password))).
func scramble(password string, salt []byte) []byte {
	stage1 := sha1.Sum([]byte(password))
	stage2 := sha1.Sum(stage1[:])
	mask := sha1.Sum(append(append([]byte{}, salt...), stage2[:]...))
	out := make([]byte, len(stage1))
	for i := range out {
		out[i] = stage1[i] ^ mask[i]
	}
	return out
}

func TestStore_NativePasswordHash(t *testing.T) {
	s := NewStore()
	if err := s.Add("root", "password", RoleAdmin); err != nil {
		t.Fatal(err)
	}
	// MySQL's PASSWORD('password') is "*" + this.
	const want = "2470c0c06dee42fd1618bb99005adca2ec9d1e19"
	got, ok := s.NativePasswordHash("root")
	if !ok || hex.EncodeToString(got) != want {
		t.Errorf("NativePasswordHash(root) = %x, %v; want %s, true", got, ok, want)
	}
	got[0] ^= 0xff // the caller's copy must not alias the store's
	if again, _ := s.NativePasswordHash("root"); hex.EncodeToString(again) != want {
		t.Errorf("NativePasswordHash after caller's write = %x, want %s", again, want)
	}
	if got, ok := s.NativePasswordHash("nobody"); ok || got != nil {
		t.Errorf("NativePasswordHash(nobody) = %x, %v; want nil, false", got, ok)
	}
}

func TestStore_VerifyNativePassword(t *testing.T) {
	s := newTestStore(t)
	salt := []byte("abcdefghij0123456789") // 20 bytes, as a server sends
	otherSalt := []byte("01234567890123456789")
	tests := []struct {
		name     string
		user     string
		salt     []byte
		response []byte
		want     User
		wantErr  error
	}{
		{name: "right", user: "bob", salt: salt, response: scramble("bob-pw", salt), want: User{Name: "bob", Role: RoleReadWrite}},
		{name: "wrong password", user: "bob", salt: salt, response: scramble("alice-pw", salt), wantErr: ErrBadPassword},
		{name: "stale salt", user: "bob", salt: otherSalt, response: scramble("bob-pw", salt), wantErr: ErrBadPassword},
		{name: "empty response", user: "bob", salt: salt, response: nil, wantErr: ErrBadPassword},
		{name: "short response", user: "bob", salt: salt, response: scramble("bob-pw", salt)[:19], wantErr: ErrBadPassword},
		{name: "unknown user", user: "mallory", salt: salt, response: scramble("bob-pw", salt), wantErr: ErrUnknownUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.VerifyNativePassword(tt.user, tt.salt, tt.response)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("VerifyNativePassword: got error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("VerifyNativePassword = %v, want %v", got, tt.want)
			}
		})
	}
}
