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

// Access is what running a statement needs. Accesses are ordered like
// roles: a role may run statements up to its own level.
type Access uint8

// The accesses, from least to most.
const (
	// AccessRead reads data and changes nothing: SELECT, EXPLAIN, SHOW,
	// transaction control.
	AccessRead Access = iota + 1
	// AccessWrite changes data or schema: INSERT, UPDATE, DELETE, MERGE,
	// CREATE, DROP, ALTER, VACUUM, EXPLAIN ANALYZE.
	AccessWrite
	// AccessAdmin changes the server's settings, attaches or reaches
	// files, or loads code: SET, ATTACH, DETACH, COPY, EXPORT, LOAD,
	// PRAGMA, CALL, SQL-level PREPARE and EXECUTE.
	AccessAdmin
)

// String names the least role that has the access.
func (a Access) String() string {
	switch a {
	case AccessRead:
		return "readonly"
	case AccessWrite:
		return "readwrite"
	case AccessAdmin:
		return "admin"
	}
	return fmt.Sprintf("Access(%d)", uint8(a))
}

// Permits reports whether r may run a statement that needs a. An invalid
// role or access permits nothing.
func (r Role) Permits(a Access) bool {
	return r.Valid() && a >= AccessRead && a <= AccessAdmin && uint8(r) >= uint8(a)
}

// DeniedError is a statement the user's role may not run: a kind of
// statement, or a function the statement would call.
type DeniedError struct {
	User User
	// Statement names the kind of statement, e.g. "INSERT".
	Statement string
	Need      Access
	// Function, when set, is the function the statement would call that
	// the role may not, and Why what it does.
	Function, Why string
}

func (e *DeniedError) Error() string {
	what := "is read-only"
	if e.User.Role != RoleReadOnly {
		what = "has the " + e.User.Role.String() + " role"
	}
	if e.Function != "" {
		return fmt.Sprintf("user %s %s and may not call %s: it %s (it needs the %s role)",
			e.User.Name, what, e.Function, e.Why, e.Need)
	}
	if e.Why != "" {
		return fmt.Sprintf("user %s %s and may not run this %s statement: %s (it needs the %s role)",
			e.User.Name, what, e.Statement, e.Why, e.Need)
	}
	return fmt.Sprintf("user %s %s and may not run %s statements (they need the %s role)",
		e.User.Name, what, e.Statement, e.Need)
}

// Authorize returns a *DeniedError unless u's role permits a statement of
// the named kind that needs a. Every path by which a statement reaches the
// engine (Flight SQL statements, prepared statements, ingest, MySQL
// queries, prepared statements and scripts) asks it.
func (u User) Authorize(statement string, a Access) error {
	if u.Role.Permits(a) {
		return nil
	}
	return &DeniedError{User: u, Statement: statement, Need: a}
}
