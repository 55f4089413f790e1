package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/backup"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

// TestBackup_Server takes a backup of a running server with quiver
// backup, refused to users who are not admins, then lists, verifies and
// restores it, and checks that an interrupted or tampered backup is
// neither listed nor passes verification.
func TestBackup_Server(t *testing.T) {
	noPasswordEnv(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	for _, req := range []auth.UserRequest{
		{Op: auth.OpAdd, Name: "root", Password: "root-pw", Role: "admin"},
		{Op: auth.OpAdd, Name: "etl", Password: "etl-pw", Role: "readwrite"},
		{Op: auth.OpAdd, Name: "bi", Password: "bi-pw"},
	} {
		if _, err := auth.EditUsersFile(users, req.Apply); err != nil {
			t.Fatal(err)
		}
	}
	srv := testutil.StartServer(t, server.Config{DB: filepath.Join(dir, "served.duckdb"), Security: server.Security{UsersFile: users}})
	c := testutil.Dial(t, srv, client.Config{User: "root", Password: "root-pw"})
	if _, err := c.Exec(context.Background(), "CREATE TABLE orders AS SELECT range AS id, range * 1.5 AS total FROM range(10000)"); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "backups")
	to := "file://" + store
	as := func(user, pw string, args ...string) (int, string, string) {
		t.Helper()
		t.Setenv(envPassword, pw)
		return runQuiver(t, append(args, "--server", srv.FlightAddr, "--user", user)...)
	}

	for _, u := range []struct{ name, pw string }{{"bi", "bi-pw"}, {"etl", "etl-pw"}} {
		t.Run("refused to "+u.name, func(t *testing.T) {
			code, _, errOut := as(u.name, u.pw, "backup", "--to", to)
			if code != 1 || !strings.Contains(errOut, "needs the admin role") {
				t.Errorf("got exit %d, %q; want 1 and a refusal", code, errOut)
			}
			if ents, _ := os.ReadDir(store); len(ents) != 0 {
				t.Errorf("got %d entries in the backup location, want none", len(ents))
			}
		})
	}

	code, out, errOut := as("root", "root-pw", "backup", "--to", to)
	if code != 0 || !strings.Contains(out, "1 tables, 10,000 rows") {
		t.Fatalf("backup: exit %d, %q, %s", code, out, errOut)
	}
	id := strings.Fields(out)[1]

	// The staging directory is one DuckDB may write to for backups;
	// for readonly and readwrite users it stays like any other.
	staging := filepath.Join(dir, "served.duckdb.backup")
	// An admin may write there, like anywhere DuckDB may; the others
	// may not read what is there.
	if _, err := c.Exec(context.Background(), "COPY (SELECT 42 AS secret) TO '"+staging+"/probe.csv'"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct{ name, pw string }{{"bi", "bi-pw"}, {"etl", "etl-pw"}} {
		t.Run("staging closed to "+u.name, func(t *testing.T) {
			uc := testutil.Dial(t, srv, client.Config{User: u.name, Password: u.pw})
			for _, sql := range []string{
				"COPY (SELECT 1 AS x) TO '" + staging + "/x.csv'",
				"SELECT * FROM glob('" + staging + "/*')",
				"SELECT * FROM read_csv('" + staging + "/probe.csv')",
				"ATTACH '" + staging + "/evil.duckdb' AS evil",
			} {
				if _, err := uc.Exec(context.Background(), sql); err == nil || !strings.Contains(err.Error(), "may not") {
					t.Errorf("%s as %s: got %v, want a refusal", sql, u.name, err)
				}
			}
			for _, f := range []string{"x.csv", "evil.duckdb"} {
				if _, err := os.Stat(filepath.Join(staging, f)); err == nil {
					t.Errorf("%s was written in the staging directory", f)
				}
			}
		})
	}

	t.Run("list", func(t *testing.T) {
		code, out, errOut := runQuiver(t, "backup", "list", "--from", to)
		if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "10,000") {
			t.Errorf("got exit %d, %q, %s; want %s listed", code, out, errOut, id)
		}
	})
	t.Run("verify", func(t *testing.T) {
		code, out, errOut := runQuiver(t, "backup", "verify", "--from", to)
		if code != 0 || !strings.Contains(out, "backup "+id+" is sound") {
			t.Errorf("got exit %d, %q, %s", code, out, errOut)
		}
	})
	restored := filepath.Join(dir, "restored", "shop.duckdb")
	t.Run("restore", func(t *testing.T) {
		code, out, errOut := runQuiver(t, "restore", "--from", to, "--db", restored)
		if code != 0 || !strings.Contains(out, "restored backup "+id) || !strings.Contains(out, "main.orders: 10,000 rows") {
			t.Fatalf("got exit %d, %q, %s", code, out, errOut)
		}
		for _, p := range []string{restored + ".users", auth.KeyFileFor(restored)} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("restored beside the database: %v", err)
			}
		}
		db, err := engine.Open(context.Background(), engine.Options{Path: restored})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if n, err := conn.QueryInt64(context.Background(), "SELECT count(*) FROM orders WHERE total = id * 1.5"); err != nil || n != 10000 {
			t.Errorf("got %d rows, %v; want 10000", n, err)
		}
	})
	t.Run("restore refuses to overwrite", func(t *testing.T) {
		code, _, errOut := runQuiver(t, "restore", "--from", to, "--db", restored)
		if code != 1 || !strings.Contains(errOut, "already exists") || !strings.Contains(errOut, "--force") {
			t.Errorf("got exit %d, %q; want 1 and a refusal naming --force", code, errOut)
		}
		if code, _, errOut := runQuiver(t, "restore", "--from", to, "--db", restored, "--force"); code != 0 {
			t.Errorf("with --force: got exit %d, %q", code, errOut)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		torn := filepath.Join(store, "20200101T000000.000Z")
		if err := os.MkdirAll(torn, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(torn, backup.DatabaseFile), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runQuiver(t, "backup", "list", "--from", to)
		if code != 0 || strings.Contains(out, "20200101") || !strings.Contains(errOut, "20200101T000000.000Z has no manifest") {
			t.Errorf("list: got exit %d, %q, %q", code, out, errOut)
		}
		code, _, errOut = runQuiver(t, "backup", "verify", "--from", to, "--id", "20200101T000000.000Z")
		if code != 1 || !strings.Contains(errOut, "not complete") {
			t.Errorf("verify: got exit %d, %q", code, errOut)
		}
	})
	t.Run("tampered", func(t *testing.T) {
		path := filepath.Join(store, id, backup.ManifestFile)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m backup.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		m.Tables[0].Checksum = "12345"
		data, _ = json.Marshal(m)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runQuiver(t, "backup", "verify", "--from", to, "--id", id)
		if code != 1 || !strings.Contains(errOut, "main.orders: checksum") || !strings.Contains(errOut, "failed verification") {
			t.Errorf("got exit %d, %q; want 1 and the table that differs", code, errOut)
		}
	})
}

// TestBackup_Usage checks bad command lines exit 2 with a reason.
func TestBackup_Usage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backup"}, "give --to URI"},
		{[]string{"backup", "--to", "/tmp/x"}, "use file:///absolute/dir or s3://bucket/prefix"},
		{[]string{"backup", "list"}, "--from is required"},
		{[]string{"backup", "verify", "--from", "backups"}, "use file:///absolute/dir"},
		{[]string{"restore", "--from", "file:///tmp/x"}, "--db is required"},
		{[]string{"backup", "prune", "--to", "file:///tmp/x"}, `unknown operation "prune"`},
		{[]string{"serve", "--db", ":memory:", "--backup-to", "/tmp/x"}, "--backup-to \"/tmp/x\": use file:///absolute/dir"},
		{[]string{"serve", "--db", ":memory:", "--backup-to", "file:///tmp/x", "--backup-every", "0s"}, "--backup-every must be positive"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := runQuiver(t, c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("got exit %d, %q; want 2 and %q", code, errOut, c.want)
			}
		})
	}
}

// TestServe_BackupSchedule runs quiver serve with --backup-every and
// --backup-keep: backups keep coming, keep of them stay (one more while
// the older ones wait to be removed), and an
// interrupted backup older than them is removed.
func TestServe_BackupSchedule(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "backups")
	torn := filepath.Join(store, "20200101T000000.000Z")
	if err := os.MkdirAll(torn, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(torn, backup.DatabaseFile), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, stopServe := startServe(t, "--db", filepath.Join(dir, "served.duckdb"), "--flight", "127.0.0.1:0", "--mysql", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--backup-to", "file://"+store, "--backup-every", "100ms", "--backup-keep", "2")
	stop := sync.OnceFunc(stopServe)
	t.Cleanup(stop)
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), "CREATE TABLE t AS SELECT range AS id FROM range(1000)"); err != nil {
		t.Fatal(err)
	}
	st, err := backup.Open(context.Background(), "file://"+store, lake.S3Config{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < 4 && time.Now().Before(deadline) {
		list, _, err := st.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Between a backup and the pruning after it there are three.
		if len(list) > 3 {
			t.Fatalf("got %d complete backups, want at most 3", len(list))
		}
		for _, m := range list {
			seen[m.ID] = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(seen) < 4 {
		t.Fatalf("saw %d backups in 60 s, want 4", len(seen))
	}
	stop()
	list, incomplete, err := st.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || len(incomplete) != 0 {
		t.Errorf("after the stop: got %d complete and %v incomplete, want 2 and none", len(list), incomplete)
	}
	if _, err := backup.Verify(context.Background(), st, list[len(list)-1], t.TempDir()); err != nil {
		t.Errorf("verify the newest: %v", err)
	}
}
