package auth

import (
	"fmt"
	"strings"
)

// Role is what a user may do. The zero Role is invalid. Roles are ordered:
// each one may do everything the one before it may.
type Role uint8

// The roles, from least to most privileged.
const (
	// RoleReadOnly may run queries but change nothing.
	RoleReadOnly Role = iota + 1
	// RoleReadWrite may also insert, update, delete and ingest.
	RoleReadWrite
	// RoleAdmin may also change configuration and reach the file system.
	RoleAdmin
)

// Valid reports whether r is one of the defined roles.
func (r Role) Valid() bool { return r >= RoleReadOnly && r <= RoleAdmin }

// CanWrite reports whether r may change data.
func (r Role) CanWrite() bool { return r == RoleReadWrite || r == RoleAdmin }

// IsAdmin reports whether r is RoleAdmin.
func (r Role) IsAdmin() bool { return r == RoleAdmin }

// String returns the role's name as ParseRole accepts it.
func (r Role) String() string {
	switch r {
	case RoleReadOnly:
		return "readonly"
	case RoleReadWrite:
		return "readwrite"
	case RoleAdmin:
		return "admin"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// ParseRole parses a role name, case-insensitively: "admin", "readwrite"
// (or "read-write", "rw") and "readonly" (or "read-only", "ro").
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "admin":
		return RoleAdmin, nil
	case "readwrite", "read-write", "rw":
		return RoleReadWrite, nil
	case "readonly", "read-only", "ro":
		return RoleReadOnly, nil
	}
	return 0, fmt.Errorf("parse role %q: want admin, readwrite or readonly", s)
}

// User is an authenticated caller.
type User struct {
	Name string
	Role Role
}

// AnonymousName is the name of the user every call gets when authentication
// is disabled. That user has RoleAdmin.
const AnonymousName = "anonymous"
