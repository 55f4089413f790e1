package auth

import (
	"fmt"
	"net"
	"strings"
)

// RequireLoopback returns an error unless the listen address addr
// (HOST:PORT) is on a loopback interface. A server running with
// authentication disabled must check every listener with it: nothing runs
// without authentication off loopback. An empty host, "0.0.0.0" and "::"
// listen on every interface and are refused; "localhost" is allowed.
func RequireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("check listen address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen address %q is not loopback: without users, quiver serves only on 127.0.0.1 or ::1; give it --users-file (see quiver user) to listen elsewhere", addr)
}
