package mysqlwire

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/quiverdata/quiver/admit"
)

// A session's prepared statements, and the parameters bound to them, are
// charged to the server's Holds (Options.Holds), as Flight's are: each
// statement when it is prepared, its parameters when a command sees them.
// vitess keeps COM_STMT_SEND_LONG_DATA's chunks itself, appending each to
// the statement's parameter without telling the handler, so a client could
// send gigabytes between two commands; the connection's reads are metered
// (meteredConn), and one that sends more than the session may still bind,
// plus one packet, before its next command is closed. Each command
// charges what long data the statements hold (startCommand), and drops a
// statement's long data that passes a bound: its execution is then
// refused, as MySQL refuses data past max_allowed_packet.

// packetSlack is what a connection may read between two commands on top
// of the parameters it may still bind: one whole packet, the command
// itself.
const packetSlack = mysql.MaxPacketSize + 1<<10

var paramFloods = promauto.NewCounter(prometheus.CounterOpts{
	Name: "quiver_mysql_param_floods_total",
	Help: "MySQL connections closed for sending more long parameter data between two commands than the session may bind (--max-session-param-bytes).",
})

// meteredConn counts what a client sends between two commands (see
// above); the acceptor gives it to every connection.
type meteredConn struct {
	net.Conn
	read  atomic.Int64 // since the current command began
	allow atomic.Int64 // 0: no bound (before login)
}

func (c *meteredConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if lim := c.allow.Load(); lim > 0 && c.read.Add(int64(n)) > lim {
		paramFloods.Inc()
		return n, fmt.Errorf("the client sent more than %d bytes without a command, past what the session may bind (--max-session-param-bytes) and one packet; closing the connection", lim)
	}
	return n, err
}

// SyscallConn is the socket's, so that watchPeerClose sees through the
// meter.
func (c *meteredConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("not a socket")
}

// meter returns the session's meteredConn, or nil.
func (s *session) meter() *meteredConn {
	if s.tc == nil {
		return nil
	}
	m, _ := s.tc.Conn.(*meteredConn)
	return m
}

// startCommand begins a handler command: it reads the user again
// (refreshUser), charges the parameters vitess holds for the session's
// statements, and meters what the client may send before its next one.
func (s *session) startCommand() error {
	if err := s.refreshUser(); err != nil {
		return err
	}
	s.sweepStatements()
	var held int64
	for id, p := range s.stmts {
		pd := s.c.PrepareData[id]
		if pd == nil {
			continue
		}
		n := bindBytes(pd)
		if err := p.lease.SetParams(n); err != nil {
			// Dropped, as MySQL drops long data past max_allowed_packet;
			// the statement's next execution says why.
			for k := range pd.BindVars {
				delete(pd.BindVars, k)
			}
			p.lease.SetParams(0)
			p.paramErr = err
			s.log.Info("mysql long parameter data dropped", logErr, err)
			continue
		}
		held += n
	}
	if m := s.meter(); m != nil && s.srv.opts.Holds != nil {
		lim := s.srv.opts.Holds.Limits().SessionParamBytes
		m.read.Store(0)
		m.allow.Store(max(lim-held, 0) + packetSlack)
	}
	return nil
}

// bindBytes is the size of the parameter values vitess holds for pd.
func bindBytes(pd *mysql.PrepareData) int64 {
	var n int64
	for _, bv := range pd.BindVars {
		if bv != nil {
			n += int64(len(bv.Value))
			for _, v := range bv.Values {
				n += int64(len(v.Value))
			}
		}
	}
	return n
}

// holdError turns a bound of Holds passed into the error a MySQL client
// gets: 1461 for too many prepared statements (max_prepared_stmt_count's),
// 1153 for parameters too large (max_allowed_packet's), 1041 for the
// server's memory share.
func holdError(err error) error {
	var le *admit.LimitError
	if !errors.As(err, &le) {
		return err
	}
	num := mysql.ERNetPacketTooLarge
	switch {
	case strings.Contains(le.Flag, "prepared"):
		num = erMaxPreparedStmtCount
	case strings.Contains(le.Flag, "--memory"):
		num = erOutOfResources
	}
	return errorf(num, mysql.SSUnknownSQLState, "%s", le.Error())
}
