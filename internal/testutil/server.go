// Package testutil starts real quiver servers and clients for tests.
package testutil

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/server"
)

// StartServer starts quiver in-process on 127.0.0.1:0 with an in-memory
// database (unless cfg says otherwise) and stops it when the test ends.
// The MySQL and HTTP endpoints start only if cfg names their addresses.
func StartServer(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.DB == "" {
		cfg.DB = ":memory:"
	}
	if cfg.FlightAddr == "" {
		cfg.FlightAddr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Announce = func(proto, addr string) { t.Logf("quiver: %s listening on %s", proto, addr) }
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv
}

// Dial connects a client to srv's Flight port and closes it when the test
// ends.
func Dial(t testing.TB, srv *server.Server, cfg client.Config) *client.Client {
	t.Helper()
	cfg.Addr = srv.FlightAddr
	c, err := client.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// CountRows runs query through c and reads its whole result, returning the
// rows it held.
func CountRows(ctx context.Context, c *client.Client, query string) (int64, error) {
	r, err := c.Query(ctx, query)
	if err != nil {
		return 0, err
	}
	defer r.Release()
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	return n, r.Err()
}
