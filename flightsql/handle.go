package flightsql

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// preparedHandle is what a prepared statement's handle carries: all any
// replica needs to run it. ID keys what the server that saw the handle
// caches for it: the statement's schemas and the parameters bound there.
//
// A handle comes back from the client, so it is parsed strictly
// (parsePreparedHandle) and its SQL is authorized again wherever it is
// prepared again.
type preparedHandle struct {
	ID    string `json:"i"`
	Query string `json:"q"`
	Txn   string `json:"t,omitempty"`
	// Params are the parameter rows bound to the statement, an Arrow IPC
	// stream (base64 in the JSON), when they are at most maxTicketParams
	// bytes: DoPut returns a handle that carries them.
	Params []byte `json:"b,omitempty"`
}

// parsePreparedHandle decodes and checks a prepared statement's handle.
func parsePreparedHandle(raw []byte) (preparedHandle, error) {
	var h preparedHandle
	if err := strictJSON(raw, &h); err != nil {
		return preparedHandle{}, invalidf("malformed prepared statement handle: %v", err)
	}
	switch {
	case !isID(h.ID):
		return preparedHandle{}, invalidf("malformed prepared statement handle: bad id")
	case h.Query == "":
		return preparedHandle{}, invalidf("malformed prepared statement handle: no query")
	case len(h.Params) > maxTicketParams:
		return preparedHandle{}, invalidf("malformed prepared statement handle: parameters over %d bytes", maxTicketParams)
	}
	return h, nil
}

// matches reports whether h is a handle of p's.
func (p *prepared) matches(h preparedHandle) bool {
	return p.sql == h.Query && string(p.txn) == h.Txn
}

// lookupPrepared returns the statement a client's handle names: from this
// server's cache, or prepared (and authorized) again from the handle's SQL
// when it was created on another replica, or reaped, or the server
// restarted. A handle that reuses a cached id for other SQL is refused.
func (s *Server) lookupPrepared(ctx context.Context, raw []byte) (*prepared, preparedHandle, error) {
	h, err := parsePreparedHandle(raw)
	if err != nil {
		return nil, h, err
	}
	s.mu.Lock()
	p := s.prepared[h.ID]
	s.mu.Unlock()
	if p == nil {
		if p, err = s.newPrepared(ctx, h.ID, h.Query, []byte(h.Txn)); err != nil {
			if status.Code(err) == codes.Unimplemented {
				// What CreatePreparedStatement answers a script, for
				// ADBC's sake; no server made this handle.
				return nil, h, invalidf("prepared statement handle holds a script")
			}
			return nil, h, err
		}
		p = s.cachePrepared(p)
	}
	if !p.matches(h) {
		return nil, h, status.Errorf(codes.InvalidArgument, "prepared statement handle %s does not match the statement of that id", h.ID)
	}
	return p, h, nil
}

// cachePrepared keeps p for its id and returns it, or the statement
// another call cached for that id first.
func (s *Server) cachePrepared(p *prepared) *prepared {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.prepared[p.id]; q != nil {
		return q
	}
	s.prepared[p.id] = p
	preparedOpen.Inc()
	return p
}

// encodeHandle is the handle of p carrying params (nil: none).
func encodeHandle(p *prepared, params []byte) ([]byte, error) {
	return json.Marshal(preparedHandle{ID: p.id, Query: p.sql, Txn: string(p.txn), Params: params})
}
