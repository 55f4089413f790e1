//go:build !unix

package mysqlwire

import "net"

// watchPeerClose is a no-op where the socket cannot be peeked at: a
// statement then learns that its client left when it writes a result.
func watchPeerClose(net.Conn, func()) (stop func()) { return func() {} }
