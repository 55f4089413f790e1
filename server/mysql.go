package server

import "context"

// startMySQL starts the MySQL-protocol endpoint.
func (s *Server) startMySQL(ctx context.Context, sec *security) error {
	return nil
}
