package auth

import "errors"

// Sentinel errors. Callers test them with errors.Is. ErrUnknownUser and
// ErrBadPassword must reach a client as the same "authentication failed"
// message, so that user names cannot be probed.
var (
	// ErrUnknownUser means no user has the given name.
	ErrUnknownUser = errors.New("unknown user")
	// ErrBadPassword means the user exists but the password is wrong.
	ErrBadPassword = errors.New("wrong password")
	// ErrTokenExpired means a bearer token was valid but is past its expiry.
	ErrTokenExpired = errors.New("token expired")
	// ErrBadToken means a bearer token is malformed, wrongly signed, or
	// names a user that no longer exists.
	ErrBadToken = errors.New("invalid token")
	// ErrUserExists is returned by Store.Add for a name already in use.
	ErrUserExists = errors.New("user already exists")
)
