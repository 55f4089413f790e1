package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// CancelFlightInfo stops the fetches of a FlightInfo that are running and
// drops any statement held for it: the caller's own only. A ticket that is
// not the caller's is refused with PermissionDenied.
func (s *Server) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	st := flight.CancelStatusNotCancellable
	for _, ep := range req.GetInfo().GetEndpoint() {
		tkt := ep.GetTicket().GetTicket()
		id, err := s.heldID(ctx, tkt)
		if err != nil {
			return flight.CancelFlightInfoResult{Status: flight.CancelStatusUnspecified}, err
		}
		var hq *heldQuery
		if id != "" {
			if hq, err = s.takeHeld(ctx, id); err != nil {
				return flight.CancelFlightInfoResult{Status: flight.CancelStatusUnspecified}, err
			}
		}
		s.mu.Lock()
		cancel := s.running[runningKey(ctx, tkt)]
		s.mu.Unlock()
		if cancel != nil {
			cancel()
			st = flight.CancelStatusCancelled
		}
		if hq != nil {
			hq.close()
			st = flight.CancelStatusCancelled
		}
	}
	return flight.CancelFlightInfoResult{Status: st}, nil
}

// heldID is the held statement a statement ticket names, or "" for any
// other ticket. A statement ticket that is not the caller's is an error.
func (s *Server) heldID(ctx context.Context, tkt []byte) (string, error) {
	var a anypb.Any
	if proto.Unmarshal(tkt, &a) != nil {
		return "", nil
	}
	var t pb.TicketStatementQuery
	if a.UnmarshalTo(&t) != nil {
		return "", nil
	}
	h, err := s.openTicket(ctx, t.GetStatementHandle())
	if err != nil {
		return "", err
	}
	return h.Held, nil
}
