package mysqlwire

import (
	"testing"

	"github.com/quiverdata/quiver/engine"
)

// StartTestServer starts a server on 127.0.0.1:0 over a new in-memory
// database, for the package's external tests (dump_test.go), which need
// package server and so cannot be in this package: server imports it. The
// server and the database are closed with t.
func StartTestServer(t testing.TB) (addr string, db *engine.DB) {
	t.Helper()
	ts := startServer(t, Options{})
	return ts.addr, ts.db
}
