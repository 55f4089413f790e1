package flightsql

import (
	"context"
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// CancelFlightInfo stops the fetches of a FlightInfo that are running and
// drops any statement held for it.
func (s *Server) CancelFlightInfo(_ context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	st := flight.CancelStatusNotCancellable
	for _, ep := range req.GetInfo().GetEndpoint() {
		tkt := ep.GetTicket().GetTicket()
		s.mu.Lock()
		cancel := s.running[string(tkt)]
		var hq *heldQuery
		if id := heldID(tkt); id != "" {
			hq = s.held[id]
			delete(s.held, id)
		}
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

func heldID(tkt []byte) string {
	var a anypb.Any
	if proto.Unmarshal(tkt, &a) != nil {
		return ""
	}
	var t pb.TicketStatementQuery
	if a.UnmarshalTo(&t) != nil {
		return ""
	}
	var h handle
	if json.Unmarshal(t.GetStatementHandle(), &h) != nil {
		return ""
	}
	return h.Held
}
