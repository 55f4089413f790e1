package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/readme"
)

// readmeBackups is the backup location docs/backups.md names.
const readmeBackups = "/tmp/quiver-backups"

// TestReadme_BackupsAsWritten runs the commands of docs/backups.md
// exactly as written, in order, in a scratch directory: the server, the
// table, a backup, list, verify and restore, then opens the restored
// database.
func TestReadme_BackupsAsWritten(t *testing.T) {
	var cmds []string
	for _, c := range readme.Commands(t, "quiver ") {
		if strings.HasPrefix(c, "quiver backup ") || strings.HasPrefix(c, "quiver restore ") ||
			strings.Contains(c, "127.0.0.1:31381") {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) != 6 {
		t.Fatalf("found %d commands of the backups page, want 6: %q", len(cmds), cmds)
	}
	os.RemoveAll(readmeBackups)
	t.Cleanup(func() { os.RemoveAll(readmeBackups) })
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, line := range cmds {
		t.Logf("docs: %s", line)
		args := readme.ShellWords(t, line)[1:]
		if args[0] == "serve" {
			_, stop := startServe(t, args[1:]...)
			t.Cleanup(stop)
			continue
		}
		code, out, errOut := runQuiver(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", line, code, errOut)
		}
		switch {
		case strings.HasPrefix(line, "quiver backup --server"):
			id = strings.Fields(out)[1]
		case strings.HasPrefix(line, "quiver backup list"):
			if id == "" || !strings.Contains(out, id) {
				t.Errorf("%s: backup %q not in\n%s", line, id, out)
			}
		case strings.HasPrefix(line, "quiver restore"):
			if !strings.Contains(out, "main.orders: 100,000 rows") {
				t.Errorf("%s: printed\n%s", line, out)
			}
		}
	}
	db, err := engine.Open(context.Background(), engine.Options{Path: "restored/shop.duckdb"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := c.QueryInt64(context.Background(), "SELECT count(*) FROM orders"); err != nil || n != 100000 {
		t.Errorf("restored orders: got %d rows, %v; want 100000", n, err)
	}
}
