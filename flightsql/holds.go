package flightsql

import (
	"context"

	"github.com/quiverdata/quiver/admit"
)

// holdSession is the account the caller's handles are charged to
// (Options.Holds): its user's on the connection the call came over.
func (s *Server) holdSession(ctx context.Context) *admit.HoldSession {
	return connOf(ctx).session(s.opts.Holds, owner(ctx))
}
