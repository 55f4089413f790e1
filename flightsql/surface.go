package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The rest of the Flight SQL surface that clients call. What quiver does
// not support answers Unimplemented with a message saying what to do
// instead, and GetSqlInfo says the same (FLIGHT_SQL_SERVER_SUBSTRAIT is
// false, FLIGHT_SQL_SERVER_TRANSACTION has no savepoints).
//
// Not here, and Unimplemented from arrow-go's base server: ListFlights
// (there is no catalogue of ready-made flights; every flight is a
// command) and DoExchange (Flight SQL defines no use of it).

// Server implements all of arrow-go's Flight SQL server interface.
var _ flightsql.Server = (*Server)(nil)

// errSubstrait refuses Substrait plans.
var errSubstrait = status.Error(codes.Unimplemented,
	"Substrait plans are not supported (FLIGHT_SQL_SERVER_SUBSTRAIT is false): send the query as SQL")

// GetFlightInfoSubstraitPlan is refused; see errSubstrait.
func (s *Server) GetFlightInfoSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan, *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, errSubstrait
}

// GetSchemaSubstraitPlan is refused; see errSubstrait.
func (s *Server) GetSchemaSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan, *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return nil, errSubstrait
}

// DoPutCommandSubstraitPlan is refused; see errSubstrait.
func (s *Server) DoPutCommandSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan) (int64, error) {
	return 0, errSubstrait
}

// CreatePreparedSubstraitPlan is refused; see errSubstrait.
func (s *Server) CreatePreparedSubstraitPlan(context.Context, flightsql.ActionCreatePreparedSubstraitPlanRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	return flightsql.ActionCreatePreparedStatementResult{}, errSubstrait
}

// PollFlightInfoSubstraitPlan is refused; see errSubstrait.
func (s *Server) PollFlightInfoSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan, *flight.FlightDescriptor) (*flight.PollInfo, error) {
	return nil, errSubstrait
}

// PollFlightInfo answers PollFlightInfo for every command that is not a
// statement (those have their own methods): metadata requests are
// planned at once, so the poll is complete with the FlightInfo.
func (s *Server) PollFlightInfo(ctx context.Context, desc *flight.FlightDescriptor) (*flight.PollInfo, error) {
	info, err := s.inner.GetFlightInfo(ctx, desc)
	if err != nil {
		return nil, err
	}
	return &flight.PollInfo{Info: info, Progress: proto1()}, nil
}

// RenewFlightEndpoint returns the endpoint unchanged. quiver's endpoints
// carry no expiration time: a query ticket holds its SQL and runs again
// whenever it is fetched. The exception, the held last statement of a
// script, is kept until fetched or until the idle timeout, which
// renewing cannot extend.
func (s *Server) RenewFlightEndpoint(_ context.Context, req *flight.RenewFlightEndpointRequest) (*flight.FlightEndpoint, error) {
	ep := req.GetEndpoint()
	if ep == nil || ep.GetTicket() == nil {
		return nil, invalidf("renew flight endpoint: no endpoint given")
	}
	return ep, nil
}
