package engine

import (
	"context"
	"errors"
)

// ExplainJSON returns DuckDB's EXPLAIN (FORMAT json) of sql, one statement
// without parameters (a script is refused with ErrScript): the physical plan, each operator with its estimated
// cardinality. The prepare hook does not run for it.
func (c *Conn) ExplainJSON(ctx context.Context, sql string) ([]byte, error) {
	var plan []byte
	err := c.WithoutHook(func() error {
		// Prepared as one statement: the EXPLAIN of a script would run
		// the statements before its last.
		st, err := c.Prepare(ctx, "EXPLAIN (FORMAT json) "+sql)
		if err != nil {
			return err
		}
		defer st.Close()
		rows, err := st.Query(ctx)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() || rows.RecordBatch().NumCols() < 2 {
			return errors.New("explain: no plan")
		}
		plan = []byte(rows.RecordBatch().Column(1).ValueStr(0))
		return rows.Err()
	})
	return plan, err
}
