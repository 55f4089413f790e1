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
// The client holds it sealed (signer.seal) for the user who prepared the
// statement: a handle that does not verify, or that another user
// presents, is refused before it is parsed. It is then parsed strictly
// (parsePreparedHandle), and its SQL is authorized again wherever it is
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

// openPrepared checks a prepared statement's handle was signed for the
// caller and decodes it.
//
// Opening a handle is a pure function of its bytes and its caller, and a
// client sends the same handle with every execution: checking its
// signature and decoding its JSON again took 0.05 to 0.13 ms of CPU per
// single-row prepared INSERT (up to 15% of the DoPut's, once the
// statement was no longer prepared again). So handles that carry no
// parameters (which change with every bind) are kept opened, by bytes and
// caller; a handle another user presents is opened, and refused, as
// before.
func (s *Server) openPrepared(ctx context.Context, raw []byte) (preparedHandle, error) {
	user := owner(ctx)
	var key openedKey
	if len(raw) <= maxOpenedBytes {
		key = openedKey{user: user, raw: string(raw)}
		s.mu.Lock()
		h, ok := s.opened[key]
		s.mu.Unlock()
		if ok {
			return h, nil
		}
	}
	data, err := s.sign.open(kindPrepared, user, raw)
	if err != nil {
		return preparedHandle{}, err
	}
	h, err := parsePreparedHandle(data)
	if err != nil || h.Params != nil || key.raw == "" {
		return h, err
	}
	s.mu.Lock()
	if s.opened == nil || len(s.opened) >= maxOpened {
		s.opened = make(map[openedKey]preparedHandle)
	}
	s.opened[key] = h
	s.mu.Unlock()
	return h, nil
}

// openedKey is what an opened handle is kept by: its bytes and the caller
// it was opened for.
type openedKey struct{ user, raw string }

// maxOpened bounds the handles kept opened: the map is emptied when full,
// which a working set of that many distinct statements would do anyway;
// maxOpenedBytes is the longest handle kept. Together they bound the map
// near 4 MiB.
const (
	maxOpened      = 1024
	maxOpenedBytes = 4096
)

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
// restarted. A handle that is not the caller's, or reuses a cached id for
// other SQL, is refused; the cache holds each user's statements apart.
func (s *Server) lookupPrepared(ctx context.Context, raw []byte) (*prepared, preparedHandle, error) {
	h, err := s.openPrepared(ctx, raw)
	if err != nil {
		return nil, h, err
	}
	s.mu.Lock()
	p := s.prepared[preparedKey(owner(ctx), h.ID)]
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

// preparedKey is what the prepared cache keys a statement by: its owner
// and its id, so that one user's handles can never reach, or displace,
// another's statement, whatever id they name.
func preparedKey(owner, id string) string { return owner + "\x00" + id }

// cachePrepared keeps p for its owner and id and returns it, or the
// statement another call cached for them first. The connection p was
// made over drops it when it ends.
func (s *Server) cachePrepared(p *prepared) *prepared {
	key := preparedKey(p.owner, p.id)
	s.mu.Lock()
	if q := s.prepared[key]; q != nil {
		s.mu.Unlock()
		p.close()
		return q
	}
	s.prepared[key] = p
	preparedOpen.Inc()
	s.mu.Unlock()
	if !p.conn.onEnd(p, func() { s.dropPrepared(key, p) }) {
		s.dropPrepared(key, p)
	}
	return p
}

// dropPrepared forgets and closes p, cached under key, unless it is gone
// already.
func (s *Server) dropPrepared(key string, p *prepared) {
	s.mu.Lock()
	mine := s.prepared[key] == p
	if mine {
		delete(s.prepared, key)
	}
	s.mu.Unlock()
	if mine {
		preparedOpen.Dec()
		p.close()
	}
}

// encodeHandle is the handle of p carrying params (nil: none), sealed for
// p's owner.
func encodeHandle(p *prepared, params []byte) ([]byte, error) {
	b, err := json.Marshal(preparedHandle{ID: p.id, Query: p.sql, Txn: string(p.txn), Params: params})
	if err != nil {
		return nil, err
	}
	return p.sign.seal(kindPrepared, p.owner, b)
}
