package main

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/readme"
)

// TestReadme_LimitsAsWritten runs the README's serve example for many
// clients exactly as written (on the ports it names, in a scratch
// directory) and checks each limit took effect.
func TestReadme_LimitsAsWritten(t *testing.T) {
	var line string
	for _, c := range readme.Commands(t, "quiver serve") {
		if strings.Contains(c, "--max-running") {
			line = c
		}
	}
	if line == "" {
		t.Fatal("the README shows no serve command with --max-running")
	}
	t.Logf("README: %s", line)
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("data", 0o755); err != nil {
		t.Fatal(err)
	}
	srv, stop := startServe(t, strings.Fields(line)[2:]...)
	defer stop()

	cfg := srv.Admission.Config()
	if cfg.Running != 8 || cfg.Reserved != 4 || cfg.Timeout != 10*time.Second {
		t.Errorf("admission %+v, want 8 running, 4 kept for small statements, a 10s queue timeout", cfg)
	}
	if srv.Budget.Total != 4e9 {
		t.Errorf("budget %v, want 4GB", srv.Budget)
	}
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Config{Addr: srv.FlightAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Query(ctx, "SELECT current_setting('memory_limit')")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	// 40% of 4 GB is 1.49 GiB; DuckDB rounds it as it prints it.
	if got := r.RecordBatch().Column(0).ValueStr(0); !strings.HasPrefix(got, "1.4") && !strings.HasPrefix(got, "1.5") || !strings.HasSuffix(got, "GiB") {
		t.Errorf("DuckDB memory_limit %q, want 1.5 GiB, 40%% of the 4 GB budget", got)
	}
	r.Release()

	db, err := sql.Open("mysql", "root@tcp("+srv.MySQLAddr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var wait, maxConns int
	if err := db.QueryRow("SELECT @@wait_timeout, @@max_connections").Scan(&wait, &maxConns); err != nil || wait != 600 || maxConns != 2000 {
		t.Errorf("wait_timeout %d, max_connections %d, %v; want 600 (--idle-timeout 10m) and 2000", wait, maxConns, err)
	}
}
