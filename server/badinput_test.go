package server_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// TestServer_ParametersNotUTF8: a VARCHAR parameter whose bytes are not
// UTF-8, bound over Flight (an Arrow utf8 column) or MySQL (the binary
// protocol), crashed the whole server (DuckDB makes no value of it and
// binding nothing dereferenced a null pointer). It is now an error for
// that statement, and the server goes on serving.
func TestServer_ParametersNotUTF8(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{
		DB: filepath.Join(t.TempDir(), "u.duckdb"), MySQLAddr: "127.0.0.1:0",
		Security: server.Security{Users: roleUsers},
	})
	ctx := context.Background()
	for _, u := range roleUsers {
		c := testutil.Dial(t, srv, client.Config{User: u.Name, Password: u.Password})
		pctx := c.Context(ctx)
		st, err := c.SQL().Prepare(pctx, "SELECT ?::VARCHAR AS v")
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.Append("bad \xff bytes")
		arr := b.NewArray()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{arr}, 1)
		st.SetParameters(rec)
		_, err = st.Execute(pctx)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(strings.ToLower(err.Error()), "utf") {
			t.Errorf("%s over Flight: got %v, want InvalidArgument about UTF-8", u.Name, err)
		}
		st.Close(pctx)
		rec.Release()
		arr.Release()
		b.Release()

		db := openMySQL(t, srv, u, "")
		var got string
		err = db.QueryRow("SELECT ?", "bad \xff bytes").Scan(&got)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%s over MySQL: got %q, %v; want an error about UTF-8", u.Name, got, err)
		}
		if err := db.QueryRow("SELECT ?", "good").Scan(&got); err != nil || got != "good" {
			t.Errorf("%s over MySQL afterwards: got %q, %v", u.Name, got, err)
		}
		if err := drain(c.Query(ctx, "SELECT 1")); err != nil {
			t.Errorf("%s over Flight afterwards: %v", u.Name, err)
		}
	}
	// A statement that is not UTF-8, from a user whose statements are
	// checked, is refused the same way.
	bi := openMySQL(t, srv, roleUsers[2], "")
	if _, err := bi.Exec("SELECT 1 AS \xd3"); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("readonly statement that is not UTF-8: got %v, want an error about UTF-8", err)
	}
}
