package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceUnit_ExecStartParses: the command line of
// deploy/quiver.service is one quiver serve takes, with deploy/quiver.toml
// as its configuration, and the unit keeps the hardening it promises.
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
	fs, f := newServeFlags()
	if pos, err := parseFlags(discard(), fs, args[2:]); err != nil || len(pos) > 0 {
		t.Fatalf("quiver serve does not take ExecStart's flags: %v (arguments left: %q)", err, pos)
	}
	// The unit's configuration is deploy/quiver.toml, installed under /etc.
	if f.conf.file != "/etc/quiver/quiver.toml" {
		t.Fatalf("--config %q, want /etc/quiver/quiver.toml", f.conf.file)
	}
	f.conf.file = filepath.Join("..", "..", "deploy", "quiver.toml")
	if _, err := f.conf.apply(fs, true); err != nil {
		t.Fatalf("deploy/quiver.toml: %v", err)
	}
	for k, want := range map[string]string{"db": "/var/lib/quiver/quiver.duckdb", "users-file": "/etc/quiver/users", "log-format": "json"} {
		if got := fs.Lookup(k).Value.String(); got != want {
			t.Errorf("deploy/quiver.toml: %s = %q, want %q", k, got, want)
		}
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
