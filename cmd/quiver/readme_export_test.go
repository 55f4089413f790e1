package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/server"
	"io"
)

// readmeExportRoot is the export root the README's example names.
const readmeExportRoot = "/tmp/quiver-exports"

// TestReadme_ExportAsWritten runs the README's export example exactly as
// written, on the ports it names, in a scratch directory: the server
// creates the export root, the COPY writes one Parquet file under it, and
// the query reads it back. The file is then read without quiver: a row a
// status, and every order counted once.
func TestReadme_ExportAsWritten(t *testing.T) {
	var serve string
	for _, c := range readme.Commands(t, "quiver serve") {
		if strings.Contains(c, "--export-root") {
			serve = c
		}
	}
	queries := readme.Commands(t, "quiver query --server 127.0.0.1:31361")
	if serve == "" || len(queries) != 2 {
		t.Fatalf("the README shows serve %q and %d queries of it, want a serve with --export-root and 2 queries", serve, len(queries))
	}
	if !strings.Contains(serve, "--export-root "+readmeExportRoot) {
		t.Fatalf("the README's export root is not %s: %s", readmeExportRoot, serve)
	}
	os.RemoveAll(readmeExportRoot)
	t.Cleanup(func() { os.RemoveAll(readmeExportRoot) })
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("README: %s", serve)
	_, stop := startServe(t, strings.Fields(serve)[2:]...)
	defer stop()

	var out bytes.Buffer
	ctx := context.Background()
	for _, q := range queries {
		t.Logf("README: %s", q)
		out.Reset()
		if err := (queryCmd{}).Run(ctx, cli.Stdio{In: strings.NewReader(""), Out: &out, Err: io.Discard}, readme.ShellWords(t, q)[2:]); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, status := range []string{"paid", "shipped"} {
		if !strings.Contains(out.String(), status) {
			t.Errorf("reading the export back printed %q, want the status %s in it", out.String(), status)
		}
	}

	file := filepath.Join(readmeExportRoot, "daily", "status.parquet")
	db, err := engine.Open(ctx, engine.Options{ExternalAccess: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if n, err := conn.QueryInt64(ctx, "SELECT sum(orders)::BIGINT FROM read_parquet(?) HAVING count(*) = count(DISTINCT status) AND count(*) >= 3", file); err != nil || n != server.DemoOrders {
		t.Errorf("%s: %d orders, %v; want %d, one row a status", file, n, err, server.DemoOrders)
	}
}
