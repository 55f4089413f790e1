package server

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/mysqlwire"
)

// startMySQL starts the MySQL-protocol endpoint on the same engine and
// users as Flight.
func (s *Server) startMySQL(_ context.Context, sec *security) error {
	ln, err := net.Listen("tcp", s.cfg.MySQLAddr)
	if err != nil {
		return fmt.Errorf("listen mysql on %s: %w", s.cfg.MySQLAddr, err)
	}
	lim := s.cfg.Limits
	opts := mysqlwire.Options{Logger: s.log, Users: sec.users,
		Authorize:  func(u auth.User, st *engine.Stmt) error { return sec.authorizeUser(u, st, "mysql") },
		Admission:  s.Admission,
		Classifier: s.Classifier, Holds: s.Holds, QueryTimeout: lim.QueryTimeout, IdleTimeout: lim.IdleTimeout,
		MaxConnections: lim.MaxConnections, AdminReservedConnections: lim.AdminReservedConnections,
		MaxUserConnections: lim.MaxUserConnections, MaxPendingConnections: lim.MaxHandshakes, HandshakeTimeout: lim.HandshakeTimeout}
	// MySQL clients get TLS too, a client certificate checked only when
	// one is given, and must use it unless the operator allowed
	// plaintext.
	if opts.TLSConfig = sec.passwordTLS(); opts.TLSConfig != nil {
		opts.RequireTLS = !s.cfg.Security.MySQLAllowPlaintext
	}
	my, err := mysqlwire.New(s.DB, opts)
	if err != nil {
		ln.Close()
		return fmt.Errorf("start mysql endpoint: %w", err)
	}
	s.MySQLAddr = ln.Addr().String()
	go func() {
		if err := my.Serve(ln); err != nil && !errors.Is(err, mysqlwire.ErrServerClosed) {
			s.errc <- fmt.Errorf("serve mysql: %w", err)
		}
	}()
	s.stops = append(s.stops, namedStop{"mysql", func(ctx context.Context) { my.Shutdown(ctx) }})
	s.cfg.Announce("mysql", s.MySQLAddr)
	return nil
}
