package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"
)

// Metadata keys and schemes of Arrow Flight authentication.
const (
	// authorizationKey carries "Basic base64(user:pass)" or "Bearer token".
	authorizationKey = "authorization"
	// legacyTokenKey carries the token from a payload Handshake
	// (flight.ClientAuthHandler clients).
	legacyTokenKey = "auth-token-bin"
	basicScheme    = "Basic"
	bearerScheme   = "Bearer"
)

// credKind says what a call presented.
type credKind uint8

const (
	credNone credKind = iota
	credBasic
	credBearer
)

// callCreds are what a call presented, parsed but not yet checked.
type callCreds struct {
	kind     credKind
	user     string // credBasic
	password string // credBasic
	token    string // credBearer
}

// errMalformed marks credentials that could not be parsed.
var errMalformed = errors.New("malformed authorization header")

// credentialsFromMetadata reads a call's credentials: the first
// "authorization" value, or else an "auth-token-bin" token.
func credentialsFromMetadata(md metadata.MD) (callCreds, error) {
	if vals := md.Get(authorizationKey); len(vals) > 0 {
		return parseAuthorization(vals[0])
	}
	if vals := md.Get(legacyTokenKey); len(vals) > 0 && vals[0] != "" {
		return callCreds{kind: credBearer, token: vals[0]}, nil
	}
	return callCreds{}, nil
}

// parseAuthorization parses an HTTP-style authorization value. The scheme
// is case-insensitive. Basic credentials may be base64 with or without
// padding (arrow-go's client sends it without).
func parseAuthorization(v string) (callCreds, error) {
	scheme, param, _ := strings.Cut(strings.TrimSpace(v), " ")
	param = strings.TrimSpace(param)
	switch {
	case strings.EqualFold(scheme, bearerScheme):
		if param == "" {
			return callCreds{}, fmt.Errorf("%w: empty Bearer token", errMalformed)
		}
		return callCreds{kind: credBearer, token: param}, nil
	case strings.EqualFold(scheme, basicScheme):
		return parseBasic(param)
	case scheme == "":
		return callCreds{}, fmt.Errorf("%w: empty value", errMalformed)
	}
	return callCreds{}, fmt.Errorf("%w: unsupported scheme %q", errMalformed, truncate(scheme, 32))
}

func parseBasic(param string) (callCreds, error) {
	raw, err := base64.StdEncoding.DecodeString(param)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(param)
	}
	if err != nil {
		return callCreds{}, fmt.Errorf("%w: Basic credentials are not base64", errMalformed)
	}
	user, password, ok := strings.Cut(string(raw), ":")
	if !ok {
		return callCreds{}, fmt.Errorf("%w: Basic credentials have no ':'", errMalformed)
	}
	if user == "" {
		return callCreds{}, fmt.Errorf("%w: Basic credentials have an empty user name", errMalformed)
	}
	return callCreds{kind: credBasic, user: user, password: password}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
