package flightsql

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/status"
)

// DoAction serves the actions of Options.Actions and hands every other
// to arrow-go's Flight SQL router.
func (v *service) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	act, ok := v.s.opts.Actions[a.GetType()]
	if !ok || act.Do == nil {
		return v.FlightServer.DoAction(a, stream)
	}
	out, err := act.Do(stream.Context(), a.GetBody())
	if err != nil {
		if _, ok := status.FromError(err); !ok {
			err = toStatus(fmt.Errorf("%s: %w", a.GetType(), err))
		}
		return err
	}
	return stream.Send(&flight.Result{Body: out})
}

// ListActions lists Flight SQL's actions, then the server's own.
func (v *service) ListActions(e *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	if err := v.FlightServer.ListActions(e, stream); err != nil {
		return err
	}
	names := make([]string, 0, len(v.s.opts.Actions))
	for name := range v.s.opts.Actions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := stream.Send(&flight.ActionType{Type: name, Description: v.s.opts.Actions[name].Description}); err != nil {
			return err
		}
	}
	return nil
}
