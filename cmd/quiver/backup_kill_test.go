package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/quiverdata/quiver/backup"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/serveproc"
	"github.com/quiverdata/quiver/internal/testsvc"
	"github.com/quiverdata/quiver/lake"
)

// TestBackup_KillServer kills a quiver serve process with SIGKILL at
// several moments of a backup. After each kill the server restarts on
// its database, no backup that is not complete is listed, every listed
// one verifies, the staging directory is empty, and the next backup
// succeeds.
func TestBackup_KillServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the quiver binary")
	}
	bin := testsvc.QuiverBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "served.duckdb")
	store := "file://" + filepath.Join(dir, "backups")
	start := func() *serveproc.Proc {
		t.Helper()
		p, err := serveproc.Start(context.Background(), bin, db, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	take := func(addr string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := client.Dial(ctx, client.Config{Addr: addr})
		if err != nil {
			return err
		}
		defer c.Close()
		body, _ := json.Marshal(backup.Request{To: store})
		stream, err := c.SQL().Client.DoAction(c.Context(ctx), &flight.Action{Type: backup.ActionType, Body: body})
		if err != nil {
			return err
		}
		_, err = stream.Recv()
		return err
	}

	p := start()
	c, err := client.Dial(context.Background(), client.Config{Addr: p.FlightAddr})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(context.Background(), "CREATE TABLE t AS SELECT range AS id, 'customer-' || (range % 1000) AS s FROM range(2000000)")
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := take(p.FlightAddr); err != nil {
		t.Fatal(err)
	}
	full := time.Since(began)
	t.Logf("a backup takes %v", full)

	st, err := backup.Open(context.Background(), store, lake.S3Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, frac := range []float64{0.05, 0.4, 0.8} {
		t.Run(time.Duration(frac*float64(full)).Round(time.Millisecond).String(), func(t *testing.T) {
			before, _, err := st.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- take(p.FlightAddr) }()
			time.Sleep(time.Duration(frac * float64(full)))
			p.Kill()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("the backup call did not end in a minute after the kill")
			}
			p = start()
			if ents, err := os.ReadDir(db + ".backup"); err != nil || len(ents) != 0 {
				t.Errorf("staging after the restart: got %d entries, %v; want none", len(ents), err)
			}
			list, _, err := st.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(list) < len(before) || len(list) > len(before)+1 {
				t.Errorf("got %d complete backups, want %d or %d", len(list), len(before), len(before)+1)
			}
			for _, m := range list {
				if _, err := backup.Verify(context.Background(), st, m, t.TempDir()); err != nil {
					t.Errorf("verify %s: %v", m.ID, err)
				}
			}
			if err := take(p.FlightAddr); err != nil {
				t.Errorf("a backup after the restart: %v", err)
			}
			c, err := client.Dial(context.Background(), client.Config{Addr: p.FlightAddr})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := c.Query(context.Background(), "SELECT count(*) FROM t")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Release()
			if !res.Next() {
				t.Fatalf("no row: %v", res.Err())
			}
			if got := res.RecordBatch().Column(0).ValueStr(0); got != "2000000" {
				t.Errorf("the served table after the restart: got %s rows, want 2000000", got)
			}
		})
	}
}
