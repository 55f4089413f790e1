package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/peer"

	"github.com/quiverdata/quiver/auth"
)

// pipeListener hands out the server ends of in-memory connections.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { close(l.done); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// closed reports whether the server closed the connection whose client
// end is c, without waiting.
func closed(c net.Conn) bool {
	c.SetReadDeadline(time.Now())
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF || err == io.ErrClosedPipe
}

// TestConnListener: a Flight connection that has not logged in counts in
// the pending pool, where a new one closes the oldest, and is closed at
// its handshake timeout; one that logged in stays.
func TestConnListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
		lim := Limits{MaxConnections: 10, MaxHandshakes: 2, HandshakeTimeout: 5 * time.Second}
		lim.connDefaults()
		l := newConnListener(pl, lim, slog.New(slog.DiscardHandler))
		defer l.Close()
		accept := func() (client, server net.Conn) {
			c, s := net.Pipe()
			go func() { pl.conns <- s }()
			got, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			return c, got
		}
		idle1, _ := accept()
		idle2, _ := accept()
		time.Sleep(time.Second)
		user, _ := accept() // the pool is full: the oldest idle one goes
		synctest.Wait()
		if !closed(idle1) || closed(idle2) || closed(user) {
			t.Fatalf("closed after a third connection: idle1 %v, idle2 %v, new %v; want only idle1", closed(idle1), closed(idle2), closed(user))
		}
		// The newest logs in; every pipe's address is "pipe", and the
		// newest is the one registered under it.
		ctx := peer.NewContext(auth.ContextWithUser(context.Background(), auth.User{Name: "u", Role: auth.RoleReadOnly}),
			&peer.Peer{Addr: user.LocalAddr()})
		if err := l.login(ctx); err != nil {
			t.Fatalf("login: %v", err)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if !closed(idle2) || closed(user) {
			t.Errorf("after the handshake timeout: idle2 closed %v, logged-in closed %v; want true, false", closed(idle2), closed(user))
		}
		if in, pending := l.conns.Counts(); in != 1 || pending != 0 {
			t.Errorf("counts: %d logged in, %d pending; want 1, 0", in, pending)
		}
		user.Close()
	})
}

// TestConnListener_LoginInFlight: a Flight connection whose call is still
// running at the handshake timeout (a Basic login waiting for its
// Argon2id check) is given another timeout's time, not closed under it.
func TestConnListener_LoginInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
		lim := Limits{MaxConnections: 10, HandshakeTimeout: 5 * time.Second}
		lim.connDefaults()
		l := newConnListener(pl, lim, slog.New(slog.DiscardHandler))
		defer l.Close()
		c, s := net.Pipe()
		go func() { pl.conns <- s }()
		if _, err := l.Accept(); err != nil {
			t.Fatal(err)
		}
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: c.LocalAddr()})
		leave := l.enter(ctx)
		time.Sleep(8 * time.Second)
		synctest.Wait()
		if closed(c) {
			t.Fatal("closed at the handshake timeout while its login call ran")
		}
		leave() // the login failed: the call ended, no user
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !closed(c) {
			t.Error("still open a timeout after its call ended without a login")
		}
	})
}
