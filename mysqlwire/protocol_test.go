package mysqlwire

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// rawClient speaks just enough of the protocol to drive paths
// go-sql-driver never takes (server-side cursors) or to misbehave.
type rawClient struct {
	t testing.TB
	c net.Conn
}

func dialRaw(t testing.TB, ts *testServer) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", ts.addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	rc := &rawClient{t: t, c: c}
	rc.read() // greeting
	if _, err := c.Write(loginPacket()); err != nil {
		t.Fatalf("login: %v", err)
	}
	if p := rc.read(); p[0] != 0 {
		t.Fatalf("login answered %q", p)
	}
	return rc
}

func (rc *rawClient) read() []byte {
	rc.t.Helper()
	p, err := readPacket(rc.c)
	if err != nil {
		rc.t.Fatalf("read packet: %v", err)
	}
	if len(p) == 0 {
		rc.t.Fatalf("empty packet")
	}
	return p
}

func (rc *rawClient) send(p []byte) {
	rc.t.Helper()
	if _, err := rc.c.Write(p); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// isEnd reports whether p ends a result: an OK packet in EOF's clothing
// (the fuzz login sets CLIENT_DEPRECATE_EOF) or an error.
func isEnd(p []byte) bool { return (p[0] == 0xfe && len(p) < 9) || p[0] == 0xff }

// readResult reads a result set and returns its row packets and the
// packet that ended it.
func (rc *rawClient) readResult() (rows [][]byte, end []byte) {
	rc.t.Helper()
	first := rc.read()
	if first[0] == 0xff || first[0] == 0 {
		return nil, first
	}
	ncols := int(first[0])
	for range ncols {
		rc.read()
	}
	for {
		p := rc.read()
		if isEnd(p) {
			return rows, p
		}
		rows = append(rows, p)
	}
}

func errNumber(p []byte) uint16 {
	if len(p) < 3 || p[0] != 0xff {
		return 0
	}
	return binary.LittleEndian.Uint16(p[1:3])
}

func TestServer_ServerSideCursor(t *testing.T) {
	ts := startServer(t, Options{})
	rc := dialRaw(t, ts)

	rc.send(command(0x03, "CREATE TABLE cur AS SELECT range AS n FROM range(2000)"))
	if _, end := rc.readResult(); end[0] != 0 {
		t.Fatalf("create: %q", end)
	}
	rc.send(command(0x16, "SELECT n FROM cur ORDER BY n")) // COM_STMT_PREPARE
	ok := rc.read()
	if ok[0] != 0 {
		t.Fatalf("prepare: %q", ok)
	}
	id := binary.LittleEndian.Uint32(ok[1:5])
	if ncols := binary.LittleEndian.Uint16(ok[5:7]); ncols != 1 {
		t.Fatalf("prepare reports %d columns, want 1", ncols)
	}
	rc.read() // the column definition

	// COM_STMT_EXECUTE with CURSOR_TYPE_READ_ONLY: columns, then an end
	// packet saying a cursor is open.
	exec := []byte{0x17, 0, 0, 0, 0, 1, 1, 0, 0, 0}
	binary.LittleEndian.PutUint32(exec[1:], id)
	rc.send(packet(0, exec))
	rows, end := rc.readResult()
	if len(rows) != 0 || end[0] != 0xfe {
		t.Fatalf("execute with a cursor: %d rows, end %q", len(rows), end)
	}

	fetch := func(n uint32) ([][]byte, []byte) {
		p := make([]byte, 9)
		p[0] = 0x1c
		binary.LittleEndian.PutUint32(p[1:], id)
		binary.LittleEndian.PutUint32(p[5:], n)
		rc.send(packet(0, p))
		var rows [][]byte
		for {
			p := rc.read()
			if isEnd(p) {
				return rows, p
			}
			rows = append(rows, p)
		}
	}
	if rows, _ := fetch(3); len(rows) != 3 {
		t.Fatalf("first fetch: %d rows, want 3", len(rows))
	}

	// While the cursor holds the engine connection (the result is longer
	// than the chunk already handed over), a query is refused rather than
	// run beside it.
	rc.send(command(0x03, "SELECT 1"))
	if _, end := rc.readResult(); errNumber(end) != 2014 {
		t.Errorf("query during an open cursor: %q, want error 2014", end)
	}

	if rows, _ := fetch(5000); len(rows) != 1997 {
		t.Errorf("second fetch: %d rows, want the remaining 1997", len(rows))
	}
	closeStmt := []byte{0x19, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(closeStmt[1:], id)
	rc.send(packet(0, closeStmt)) // no answer

	rc.send(command(0x03, "SELECT 42"))
	if rows, end := rc.readResult(); len(rows) != 1 || end[0] != 0xfe {
		t.Errorf("query after closing the cursor: %d rows, end %q", len(rows), end)
	}
}

func TestServer_IdleTimeout(t *testing.T) {
	ts := startServer(t, Options{IdleTimeout: 200 * time.Millisecond})
	rc := dialRaw(t, ts)
	if ts.sessionCount() != 1 {
		t.Fatalf("sessions = %d, want 1", ts.sessionCount())
	}
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("idle connection: read returned %v, want EOF (the server hung up)", err)
	}
	waitFor(t, 5*time.Second, "the idle session to close", func() bool { return ts.sessionCount() == 0 })
}

func TestServer_WriteTimeout(t *testing.T) {
	ts := startServer(t, Options{WriteTimeout: 300 * time.Millisecond})
	rc := dialRaw(t, ts)
	// Ask for far more than the socket buffers hold, and never read it.
	rc.send(command(0x03, "SELECT range, repeat('x', 100) FROM range(100000000)"))
	waitFor(t, 15*time.Second, "the stalled session to close", func() bool { return ts.sessionCount() == 0 })
	other := ts.conn(t, "")
	if got := one(t, other, "SELECT 7"); got != "7" {
		t.Errorf("after a stalled client: %s", got)
	}
}
