package flightsql

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/auth"
)

// What a signature covers. A statement ticket and a prepared statement's
// handle are signed under different names, so that one never passes for
// the other.
const (
	kindTicket   = "statement ticket"
	kindPrepared = "prepared statement handle"
)

// envelope is what a client holds for a statement ticket or a prepared
// statement's handle: the handle's JSON, the user it was issued to, and an
// HMAC-SHA256 over both under the server's ticket key
// (Options.TicketKey). Replicas that share the key run each other's
// tickets; nobody without it can make or alter one, and a ticket issued to
// one user is refused to every other.
type envelope struct {
	User string          `json:"u"`
	Data json.RawMessage `json:"d"`
	MAC  []byte          `json:"m"`
}

// signer seals and opens envelopes.
type signer struct{ key []byte }

// mac is the signature of data, of the given kind, issued to user. User
// names hold no NUL (auth refuses non-printable names), so the fields
// cannot be shifted into one another.
func (s signer) mac(kind, user string, data []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("quiver\x00"))
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write(data)
	return m.Sum(nil)
}

// seal signs data, a handle's JSON, for user.
func (s signer) seal(kind, user string, data []byte) ([]byte, error) {
	// The MAC covers data as the envelope will hold it: encoding/json
	// compacts (and HTML-escapes) a RawMessage it writes.
	canon, err := json.Marshal(json.RawMessage(data))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode %s: %v", kind, err)
	}
	b, err := json.Marshal(envelope{User: user, Data: canon, MAC: s.mac(kind, user, canon)})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode %s: %v", kind, err)
	}
	return b, nil
}

// open checks that raw is an envelope this server's key signed for user,
// and returns the handle's JSON. Anything else is refused with
// PermissionDenied before any of it is used: an envelope that does not
// parse, a signature that does not match (forged, altered, or signed with
// another key), or one issued to another user.
func (s signer) open(kind, user string, raw []byte) ([]byte, error) {
	var env envelope
	if err := strictJSON(raw, &env); err != nil || env.Data == nil || env.MAC == nil {
		return nil, status.Errorf(codes.PermissionDenied, "%s is not one this server issued: it is not a signed envelope", kind)
	}
	if !hmac.Equal(env.MAC, s.mac(kind, env.User, env.Data)) {
		return nil, status.Errorf(codes.PermissionDenied, "%s does not carry this server's signature: it was forged or altered, or signed with another key (replicas must share --token-key-file)", kind)
	}
	if env.User != user {
		return nil, status.Errorf(codes.PermissionDenied, "%s was issued to another user", kind)
	}
	return env.Data, nil
}

// owner is the name that the handles, transactions and held results made
// by ctx's caller belong to: the authenticated user, or
// auth.AnonymousName when the server runs without authentication (every
// caller is then the same owner).
func owner(ctx context.Context) string {
	if u, ok := auth.UserFromContext(ctx); ok && u.Name != "" {
		return u.Name
	}
	return auth.AnonymousName
}

// errNotOwner refuses a transaction, prepared statement or held result
// to a caller who did not create it.
func errNotOwner(what, id string) error {
	return status.Error(codes.PermissionDenied, fmt.Sprintf("%s %s belongs to another user", what, id))
}
