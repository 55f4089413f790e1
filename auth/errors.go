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
	// ErrEmptyPassword is returned for a user given an empty password.
	ErrEmptyPassword = errors.New("empty password")
	// ErrLastAdmin is returned rather than remove or demote the only
	// admin, who alone may manage users on a running server.
	ErrLastAdmin = errors.New("it is the only admin; make another user admin first")
	// ErrRateLimited means a login was refused unchecked because its user
	// or its address failed to log in too often lately (see Guard).
	ErrRateLimited = errors.New("too many failed logins")
)
