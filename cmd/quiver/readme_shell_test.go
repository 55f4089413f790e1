package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// TestReadme_ShellAsWritten runs the docs' quiver shell commands exactly
// as written, as processes, in a scratch directory, against a server with
// an orders table: stdin is the file a `<` names (report.sql, which the
// test writes), or else a short script of its own; stdout goes to the
// file a `>` names. Each run must succeed and print the orders.
func TestReadme_ShellAsWritten(t *testing.T) {
	cmds := readme.Commands(t, "quiver shell")
	if len(cmds) == 0 {
		t.Fatal("the docs show no quiver shell command")
	}
	srv := testutil.StartServer(t, server.Config{})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), "CREATE TABLE orders AS SELECT i AS id, ['new', 'paid', 'shipped'][i % 3 + 1] AS status FROM range(10000) t(i)"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("QUIVER_SERVER", srv.FlightAddr)
	t.Chdir(t.TempDir())
	if err := os.WriteFile("report.sql", []byte("SELECT status, count(*) AS orders\nFROM orders\nGROUP BY status ORDER BY status;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range cmds {
		t.Logf("docs: %s", line)
		var args []string
		stdin, want := ".tables\nSELECT count(*) AS n FROM orders;\n", []string{"orders", "10000"}
		stdout := ""
		words := readme.ShellWords(t, line)
		for i := 1; i < len(words); i++ {
			switch {
			case words[i] == "<" && i+1 < len(words):
				b, err := os.ReadFile(words[i+1])
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				stdin, want = string(b), []string{"new", "3334", "paid", "shipped", "3333"}
				i++
			case words[i] == ">" && i+1 < len(words):
				stdout = words[i+1]
				i++
			default:
				args = append(args, words[i])
			}
		}
		code, out, errOut := runCLI(t, stdin, args...)
		if code != 0 {
			t.Errorf("%s: exit status %d: %s", line, code, errOut)
			continue
		}
		for _, want := range want {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", line, want, out)
			}
		}
		if stdout == "" {
			continue
		}
		if err := os.WriteFile(stdout, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "--mode csv") && !strings.HasPrefix(out, "status,orders\n") {
			t.Errorf("%s: %s starts %q, want the CSV header status,orders", line, stdout, out[:min(len(out), 40)])
		}
	}
}
