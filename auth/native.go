package auth

import (
	"crypto/sha1"
	"crypto/subtle"
)

// nativeHashLen is the length of a SHA-1 digest, and of every hash and
// scramble in mysql_native_password.
const nativeHashLen = sha1.Size

// nativeStage2 returns SHA1(SHA1(password)), the value a MySQL server stores
// for mysql_native_password.
func nativeStage2(password string) [nativeHashLen]byte {
	stage1 := sha1.Sum([]byte(password))
	return sha1.Sum(stage1[:])
}

// NativePasswordHash returns a copy of the user's mysql_native_password
// stage-2 hash, SHA1(SHA1(password)), for MySQL protocol libraries that
// check the scramble themselves.
func (s *Store) NativePasswordHash(name string) ([]byte, bool) {
	acc := s.account(name)
	if acc == nil {
		return nil, false
	}
	h := acc.native
	return h[:], true
}

// VerifyNativePassword checks a mysql_native_password login: salt is the
// 20-byte scramble the server sent in its handshake and authResponse is the
// client's reply, SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw))). It returns
// ErrUnknownUser or ErrBadPassword on failure.
func (s *Store) VerifyNativePassword(name string, salt, authResponse []byte) (User, error) {
	acc := s.account(name)
	if acc == nil {
		return User{}, ErrUnknownUser
	}
	if len(authResponse) != nativeHashLen {
		return User{}, ErrBadPassword
	}

	h := sha1.New()
	h.Write(salt)
	h.Write(acc.native[:])
	mask := h.Sum(nil)

	var stage1 [nativeHashLen]byte
	subtle.XORBytes(stage1[:], authResponse, mask)
	stage2 := sha1.Sum(stage1[:])
	if subtle.ConstantTimeCompare(stage2[:], acc.native[:]) != 1 {
		return User{}, ErrBadPassword
	}
	return acc.user, nil
}
