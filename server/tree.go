package server

import (
	"context"
	"fmt"

	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// syntaxTree returns DuckDB's syntax tree of sql for the admission
// classifier (admit.Classifier.Parse), read on a pooled connection:
// parsing runs nothing of sql's, and reads no table.
func (s *Server) syntaxTree(ctx context.Context, sql string) (*duckdbsql.Tree, error) {
	c, err := s.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	tree, err := c.SyntaxTree(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("parse for admission: %w", err)
	}
	return tree, nil
}
