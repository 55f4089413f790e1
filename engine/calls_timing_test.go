package engine_test

import (
	"context"
	"testing"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// BenchmarkStmt_Authorize is what a small statement costs to prepare and
// authorize, by role: a non-admin's is planned again by DuckDB for the
// function check (json_serialize_plan and json_serialize_sql), an
// admin's is not.
func BenchmarkStmt_Authorize(b *testing.B) {
	db := openTest(b, engine.Options{})
	ctx := context.Background()
	setup, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := setup.Exec(ctx, "CREATE TABLE t AS SELECT range AS id, range::VARCHAR AS s FROM range(100000)"); err != nil {
		b.Fatal(err)
	}
	setup.Release()
	c := testConn(b, db)
	for _, u := range []auth.User{admin, ro} {
		b.Run(u.Role.String(), func(b *testing.B) {
			// The first check fills the plan cache; the loop measures the
			// checks that find it there, as a repeated statement does.
			for b.Loop() {
				st, err := c.Prepare(ctx, "SELECT id, s FROM t WHERE id = ?")
				if err != nil {
					b.Fatal(err)
				}
				if err := st.Authorize(ctx, u); err != nil {
					b.Fatal(err)
				}
				st.Close()
			}
		})
	}
}
