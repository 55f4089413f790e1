package mysqlwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/quiverdata/quiver/mysqlwire/mysqlvalue"
)

// Client capability flags used by the fuzzer's login.
const (
	capLongPassword    = 1 << 0
	capProtocol41      = 1 << 9
	capTransactions    = 1 << 13
	capSecureConn      = 1 << 15
	capMultiStatements = 1 << 16
	capMultiResults    = 1 << 17
	capPluginAuth      = 1 << 19
	capDeprecateEOF    = 1 << 24
)

// packet frames payload as one MySQL packet with sequence number seq.
func packet(seq byte, payload []byte) []byte {
	out := make([]byte, 4, 4+len(payload))
	out[0], out[1], out[2], out[3] = byte(len(payload)), byte(len(payload)>>8), byte(len(payload)>>16), seq
	return append(out, payload...)
}

// loginPacket is a HandshakeResponse41 for user "fuzz". The server runs
// without users, so any scramble logs in.
func loginPacket() []byte {
	var b bytes.Buffer
	caps := uint32(capLongPassword | capProtocol41 | capTransactions | capSecureConn | capMultiStatements |
		capMultiResults | capPluginAuth | capDeprecateEOF)
	binary.Write(&b, binary.LittleEndian, caps)
	binary.Write(&b, binary.LittleEndian, uint32(1<<24))
	b.WriteByte(mysqlvalue.CharsetUTF8MB4)
	b.Write(make([]byte, 23))
	b.WriteString("fuzz\x00")
	b.WriteByte(20)
	b.Write(bytes.Repeat([]byte{7}, 20))
	b.WriteString("mysql_native_password\x00")
	return packet(1, b.Bytes())
}

// readPacket reads one packet's payload.
func readPacket(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return p, err
}

func command(cmd byte, payload string) []byte {
	return packet(0, append([]byte{cmd}, payload...))
}

// FuzzServer_Packets throws broken and truncated packets at a live server
// over raw TCP: in place of the login (mode 0), as raw bytes after a good
// login (mode 1), or as the payload of one command packet after a good
// login (mode 2). The server must answer with an error or close that
// connection, never panic in the handler or hang, and keep serving a
// normal client.
func FuzzServer_Packets(f *testing.F) {
	ts := startServer(f, Options{HandshakeTimeout: 2 * time.Second})
	normal := ts.open(f, "")
	normal.SetMaxOpenConns(1)
	panicsBefore := promtestutil.ToFloat64(handlerPanics)

	stmtExecute := func(id uint32, tail ...byte) []byte {
		p := []byte{0x17, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24), 0, 1, 0, 0, 0}
		return packet(0, append(p, tail...))
	}
	f.Add(byte(0), []byte{})
	f.Add(byte(0), []byte("\x00\x00\x00\x01"))
	f.Add(byte(0), loginPacket()[:20])
	f.Add(byte(0), packet(1, []byte{0, 0, 0, 0, 1, 2, 3}))
	f.Add(byte(0), []byte("\xff\xff\xff\x01garbage"))
	f.Add(byte(1), command(0x03, "SELECT 1"))
	f.Add(byte(1), command(0x03, "SELECT 1; SELECT 'a' || 'b'; SELEC 2"))
	f.Add(byte(1), command(0x03, "SHOW VARIABLES WHERE 1 = ")[:15])
	f.Add(byte(1), []byte{0, 0, 0, 0})
	f.Add(byte(1), []byte{1, 0, 0, 7, 0x0e})
	f.Add(byte(1), append(command(0x16, "SELECT ? + ?"), stmtExecute(1, 0, 1, 8, 0, 8, 0, 1, 2, 3)...))
	f.Add(byte(1), stmtExecute(99))
	f.Add(byte(1), append(command(0x16, "SELECT ?"), stmtExecute(1, 0, 1, 0x0c, 0, 0x0b, 1, 2)...))
	f.Add(byte(1), append(command(0x16, "SELECT ?"), packet(0, []byte{0x18, 1, 0, 0, 0, 5, 0, 'x'})...))
	f.Add(byte(1), command(0x02, "no_such_db"))
	f.Add(byte(1), command(0x04, "t\x00"))
	f.Add(byte(1), command(0x1c, "\x01\x00\x00\x00\x05\x00\x00\x00"))
	f.Add(byte(1), command(0x1b, "\x09"))
	f.Add(byte(1), command(0x1f, ""))
	f.Add(byte(1), command(0x01, ""))
	f.Add(byte(1), command(0x0e, ""))
	f.Add(byte(1), command(0x99, "unknown"))
	f.Add(byte(1), []byte("\xff\xff\xff\x00\x03SELECT"))
	f.Add(byte(2), []byte("\x03KILL 1"))
	f.Add(byte(2), []byte("\x03SET NAMES"))
	f.Add(byte(2), []byte("\x03SELECT @@"))
	f.Add(byte(2), []byte("\x16"))
	f.Add(byte(2), []byte("\x17\x01"))
	f.Add(byte(2), []byte("\x03\x00\xff\xfe"))

	f.Fuzz(func(t *testing.T, mode byte, data []byte) {
		start := time.Now()
		c, err := net.DialTimeout("tcp", ts.addr, 2*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := readPacket(c); err != nil {
			t.Fatalf("read greeting: %v", err)
		}
		switch mode % 3 {
		case 0:
			c.Write(data)
		case 1, 2:
			if _, err := c.Write(loginPacket()); err != nil {
				t.Fatalf("write login: %v", err)
			}
			ok, err := readPacket(c)
			if err != nil || len(ok) == 0 || ok[0] != 0 {
				t.Fatalf("login: %q, %v", ok, err)
			}
			if mode%3 == 1 {
				c.Write(data)
			} else {
				c.Write(packet(0, data))
			}
		}
		// Read what the server answers until it hangs up or goes quiet.
		buf := make([]byte, 64<<10)
		for {
			c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		c.Close()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var got int
		if err := normal.QueryRowContext(ctx, "SELECT 41 + 1").Scan(&got); err != nil || got != 42 {
			t.Fatalf("normal client after the input: %d, %v", got, err)
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("the input took %v", d)
		}
		if p := promtestutil.ToFloat64(handlerPanics); p != panicsBefore {
			t.Fatalf("the handler panicked on the input (%v panics)", p-panicsBefore)
		}
	})
}
