package server

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// syntaxTree returns DuckDB's syntax tree of sql (json_serialize_sql) for
// the admission classifier (admit.Classifier.Parse), read on a pooled
// connection: parsing runs nothing of sql's, and reads no table.
func (s *Server) syntaxTree(ctx context.Context, sql string) ([]byte, error) {
	c, err := s.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	var tree []byte
	// The prepare hook (the lake's) has nothing to do for a parse.
	err = c.WithoutHook(func() error {
		rows, err := c.Query(ctx, "SELECT json_serialize_sql(?::VARCHAR)", sql)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return fmt.Errorf("no tree: %v", rows.Err())
		}
		col, ok := rows.RecordBatch().Column(0).(*array.String)
		if !ok || col.Len() != 1 {
			return fmt.Errorf("json_serialize_sql returned %s", rows.RecordBatch().Column(0).DataType())
		}
		tree = []byte(col.Value(0))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse for admission: %w", err)
	}
	return tree, nil
}
