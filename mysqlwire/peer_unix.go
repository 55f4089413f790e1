//go:build unix

package mysqlwire

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// watchPeerClose calls onGone if the client closes conn while a statement
// runs, until the returned stop is called. It peeks at the socket without
// consuming anything, so it never steals a pipelined command: bytes
// waiting to be read end the watch quietly. stop wakes the watch with a
// read deadline in the past; the connection's next read sets its own.
func watchPeerClose(conn net.Conn, onGone func()) (stop func()) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	var stopped atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		gone := false
		var buf [1]byte
		rc.Read(func(fd uintptr) bool {
			if stopped.Load() {
				return true
			}
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
				return false // nothing yet: wait until the socket is readable
			case err != nil || n == 0:
				gone = true // reset, or end of file
			}
			return true
		})
		if gone && !stopped.Load() {
			onGone()
		}
	}()
	return func() {
		stopped.Store(true)
		conn.SetReadDeadline(time.Unix(1, 0))
		<-done
	}
}
