package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceUnit_ExecStartParses: the command line of
// deploy/quiver.service is one quiver serve takes, flag for flag, and the
// unit keeps the hardening the operations docs promise.
func TestServiceUnit_ExecStartParses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "quiver.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(string(b), "\\\n", " ")
	var exec string
	keys := map[string]string{}
	for _, line := range strings.Split(unit, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		keys[k] = v
		if k == "ExecStart" {
			exec = v
		}
	}
	args := strings.Fields(exec)
	if len(args) < 2 || filepath.Base(args[0]) != "quiver" || args[1] != "serve" {
		t.Fatalf("ExecStart = %q, want quiver serve …", exec)
	}
	fs, _ := newServeFlags()
	if pos, err := parseFlags(fs, args[2:]); err != nil || len(pos) > 0 {
		t.Errorf("quiver serve does not take ExecStart's flags: %v (arguments left: %q)", err, pos)
	}
	for k, want := range map[string]string{
		"User": "quiver", "ProtectSystem": "strict", "NoNewPrivileges": "true",
		"ReadWritePaths": "/var/lib/quiver", "ExecReload": "/bin/kill -HUP $MAINPID", "KillSignal": "SIGTERM",
	} {
		if keys[k] != want {
			t.Errorf("%s = %q, want %q", k, keys[k], want)
		}
	}
}
