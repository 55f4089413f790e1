package flightsql_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// cacheHits reads how many statements the server's connections have
// handed back from their caches.
func cacheHits(t *testing.T) float64 {
	t.Helper()
	v, _ := testutil.Metric(t, "quiver_engine_statement_cache_hits_total", nil)
	return v
}

// execPrepared prepares sql as c, runs it as an update with one BIGINT
// parameter row per value, and closes it.
func execPrepared(t *testing.T, c *client.Client, sql string, vals ...int64) (int64, error) {
	t.Helper()
	ctx := c.Context(context.Background())
	ps, err := c.SQL().Prepare(ctx, sql)
	if err != nil {
		return 0, err
	}
	defer ps.Close(ctx)
	var total int64
	for _, v := range vals {
		ps.SetParameters(paramBatch(t, memory.NewGoAllocator(), []int64{v}))
		n, err := ps.ExecuteUpdate(ctx)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// queryPrepared prepares sql as c, runs it once and returns the first
// column of its first row as text.
func queryPrepared(t *testing.T, c *client.Client, sql string) (string, error) {
	t.Helper()
	ctx := c.Context(context.Background())
	ps, err := c.SQL().Prepare(ctx, sql)
	if err != nil {
		return "", err
	}
	defer ps.Close(ctx)
	info, err := ps.Execute(ctx)
	if err != nil {
		return "", err
	}
	r, err := c.SQL().DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return "", err
	}
	defer r.Release()
	for r.Next() {
		if r.RecordBatch().NumRows() > 0 {
			return r.RecordBatch().Column(0).ValueStr(0), nil
		}
	}
	return "", r.Err()
}

// TestServer_PreparedStatementCache checks the statements a connection
// keeps for reuse answer as fresh ones would: the same rows, the catalog
// as it is now, and every check run again for whoever executes them.
func TestServer_PreparedStatementCache(t *testing.T) {
	srv := startTxnServer(t, server.Limits{})
	admin, writer, reader := dialAs(t, srv, "admin"), dialAs(t, srv, "writer"), dialAs(t, srv, "reader")
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE k (id BIGINT, s VARCHAR)",
		"CREATE SEQUENCE seq",
		"CREATE VIEW v AS SELECT 1 AS x",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const insert = "INSERT INTO k VALUES (?, 'x')"

	t.Run("same rows", func(t *testing.T) {
		before := cacheHits(t)
		n, err := execPrepared(t, writer, insert, 1, 2, 3, 4, 5)
		if err != nil || n != 5 {
			t.Fatalf("five inserts: got %d, %v; want 5", n, err)
		}
		if got := cacheHits(t) - before; got < 4 {
			t.Errorf("statements served from the cache: got %v, want at least 4 of 5 executions (and the prepare's)", got)
		}
		got, err := queryPrepared(t, writer, "SELECT sum(id) || '/' || count(*) FROM k")
		if want := "15/5"; err != nil || got != want {
			t.Errorf("sum/count: got %q, %v; want %q", got, err, want)
		}
	})

	t.Run("read-only user refused a kept insert", func(t *testing.T) {
		if _, err := execPrepared(t, writer, insert, 6); err != nil {
			t.Fatal(err)
		}
		before := cacheHits(t)
		_, err := execPrepared(t, reader, insert, 7)
		wantCode(t, err, codes.PermissionDenied, "")
		if cacheHits(t) == before {
			t.Errorf("the reader's statement was prepared afresh; the test wants it from the cache")
		}
		got, err := queryPrepared(t, writer, "SELECT count(*) FROM k WHERE id = 7")
		if err != nil || got != "0" {
			t.Errorf("rows the reader inserted: got %q, %v; want 0", got, err)
		}
	})

	t.Run("opened handle refused to another user", func(t *testing.T) {
		wctx := writer.Context(ctx)
		ps, err := writer.SQL().Prepare(wctx, insert)
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close(wctx)
		for v := range int64(2) { // the second execution opens the handle from memory
			ps.SetParameters(paramBatch(t, memory.NewGoAllocator(), []int64{100 + v}))
			if _, err := ps.ExecuteUpdate(wctx); err != nil {
				t.Fatal(err)
			}
		}
		onReader := load(t, reader, ps)
		onReader.SetParameters(paramBatch(t, memory.NewGoAllocator(), []int64{102}))
		_, err = onReader.ExecuteUpdate(reader.Context(ctx))
		wantCode(t, err, codes.PermissionDenied, "issued to another user")
	})

	t.Run("view redefined", func(t *testing.T) {
		const q = "SELECT x FROM v"
		for range 2 {
			if got, err := queryPrepared(t, reader, q); err != nil || got != "1" {
				t.Fatalf("before: got %q, %v; want 1", got, err)
			}
		}
		if _, err := admin.Exec(ctx, "CREATE OR REPLACE VIEW v AS SELECT 2 AS x"); err != nil {
			t.Fatal(err)
		}
		if got, err := queryPrepared(t, reader, q); err != nil || got != "2" {
			t.Errorf("after a harmless redefinition: got %q, %v; want 2", got, err)
		}
		// The view now calls what a read-only user may not.
		if _, err := admin.Exec(ctx, "CREATE OR REPLACE VIEW v AS SELECT nextval('seq') AS x"); err != nil {
			t.Fatal(err)
		}
		_, err := queryPrepared(t, reader, q)
		wantCode(t, err, codes.PermissionDenied, "nextval")
	})

	t.Run("table altered", func(t *testing.T) {
		if _, err := execPrepared(t, writer, insert, 8); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(ctx, "ALTER TABLE k ADD COLUMN z INTEGER"); err != nil {
			t.Fatal(err)
		}
		_, err := execPrepared(t, writer, insert, 9)
		wantCode(t, err, codes.InvalidArgument, "3 columns but 2 values")
		if _, err := admin.Exec(ctx, "ALTER TABLE k DROP COLUMN z"); err != nil {
			t.Fatal(err)
		}
		if n, err := execPrepared(t, writer, insert, 10); err != nil || n != 1 {
			t.Errorf("after the column went again: got %d, %v; want 1", n, err)
		}
	})
}
