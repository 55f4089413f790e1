package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/admit"
)

// prepareRaw prepares sql with one parameter over rc and returns its id.
func prepareRaw(t *testing.T, rc *rawClient, sql string) uint32 {
	t.Helper()
	rc.send(command(0x16, sql)) // COM_STMT_PREPARE
	ok := rc.read()
	if ok[0] != 0 {
		t.Fatalf("prepare: %q", ok)
	}
	id := binary.LittleEndian.Uint32(ok[1:5])
	ncols, nparams := binary.LittleEndian.Uint16(ok[5:7]), binary.LittleEndian.Uint16(ok[7:9])
	for range int(ncols) + int(nparams) { // definitions, no EOF (CLIENT_DEPRECATE_EOF)
		rc.read()
	}
	return id
}

// longData is COM_STMT_SEND_LONG_DATA of chunk for parameter 0 of id.
func longData(id uint32, chunk []byte) []byte {
	p := make([]byte, 7, 7+len(chunk))
	p[0] = 0x18
	binary.LittleEndian.PutUint32(p[1:], id)
	return packet(0, append(p, chunk...))
}

// executeLong is COM_STMT_EXECUTE of id, whose one parameter came as
// long data.
func executeLong(id uint32) []byte {
	p := []byte{0x17, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfc, 0}
	binary.LittleEndian.PutUint32(p[1:], id)
	return packet(0, p)
}

// TestServer_LongDataBounded sends parameters with
// COM_STMT_SEND_LONG_DATA, which vitess keeps without telling the
// handler: past the bound of one statement, the execution is refused
// with error 1153 naming --max-param-bytes and the session goes on; and
// a client that floods long data without ever sending a command is
// disconnected once it has sent more than its session may bind, and
// what it held is given back.
func TestServer_LongDataBounded(t *testing.T) {
	holds := admit.NewHolds(admit.HoldLimits{ParamBytes: 4 << 20, SessionParamBytes: 8 << 20, Memory: 1 << 30})
	ts := startServer(t, Options{Holds: holds})
	chunk := bytes.Repeat([]byte("y"), 1<<20)

	t.Run("past one statement's bound", func(t *testing.T) {
		rc := dialRaw(t, ts)
		id := prepareRaw(t, rc, "SELECT length(?)")
		for range 5 {
			rc.send(longData(id, chunk))
		}
		rc.send(executeLong(id))
		_, end := rc.readResult()
		if errNumber(end) != 1153 || !strings.Contains(string(end), "--max-param-bytes") {
			t.Fatalf("execute with 5 MiB of long data: %q, want error 1153 naming --max-param-bytes", end)
		}
		rc.send(longData(id, bytes.Repeat([]byte("z"), 3<<20)))
		rc.send(executeLong(id))
		if rows, end := rc.readResult(); len(rows) != 1 || end[0] == 0xff {
			t.Fatalf("execute with 3 MiB of long data: %d rows, %q", len(rows), end)
		}
	})
	t.Run("a flood without a command", func(t *testing.T) {
		rc := dialRaw(t, ts)
		id := prepareRaw(t, rc, "SELECT length(?)")
		rc.send(command(0x03, "SELECT 1")) // a command, so the meter is set
		rc.readResult()
		before := holds.Bytes()
		// 64 MiB, far past the 8 MiB the session may bind and one packet.
		rc.c.SetDeadline(time.Now().Add(20 * time.Second))
		var werr error
		for i := 0; i < 64 && werr == nil; i++ {
			_, werr = rc.c.Write(longData(id, chunk))
		}
		rc.c.Write(command(0x0e, "")) // COM_PING
		p, err := readPacket(rc.c)
		if err == nil {
			t.Fatalf("after a 64 MiB flood of long data the connection is still open (answered %q)", p)
		}
		t.Logf("connection closed: write %v, read %v", werr, err)
		waitFor(t, 5*time.Second, "the flood's charge to go", func() bool { return holds.Bytes() < before })
		if got := holds.Bytes(); got != 0 && got >= before {
			t.Errorf("held %d bytes after the connection closed", got)
		}
	})
}
