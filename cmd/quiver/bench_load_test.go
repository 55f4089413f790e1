package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchLoad_UsageErrors checks that bad bench load flags exit 2 with
// a one-line reason, before any server starts.
func TestBenchLoad_UsageErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"bad clients", []string{"bench", "load", "--clients", "1,lots"}, `bad client count "lots"`},
		{"zero clients", []string{"bench", "load", "--clients", "0"}, `bad client count "0"`},
		{"no clients", []string{"bench", "load", "--clients", ","}, "no client counts given"},
		{"bad fetch rows", []string{"bench", "load", "--fetch-rows", "1M,2M"}, "bad --fetch-rows"},
		{"zero duration", []string{"bench", "load", "--duration", "0s"}, "--duration and --idle must be positive"},
		{"negative warmup", []string{"bench", "load", "--warmup", "-1s"}, "--warmup must not be negative"},
		{"share above 1", []string{"bench", "load", "--mysql-share", "1.5"}, "must be between 0 and 1"},
		{"negative write share", []string{"bench", "load", "--write-share", "-0.1"}, "must be between 0 and 1"},
		{"zero agg rows", []string{"bench", "load", "--agg-rows", "0"}, "--agg-rows must be at least 1"},
		{"zero login parallel", []string{"bench", "load", "--login-parallel", "0"}, "--login-parallel, --abort-parallel and --client-procs must be at least 1"},
		{"negative abort streams", []string{"bench", "load", "--abort-streams", "-1"}, "must not be negative"},
		{"zero client processes", []string{"bench", "load", "--client-procs", "0"}, "--client-procs must be at least 1"},
		{"client processes with kills", []string{"bench", "load", "--client-procs", "4", "--kill-every", "1s"}, "use --client-procs 1"},
		{"client processes with writers", []string{"bench", "load", "--client-procs", "2", "--write-share", "0.1"}, "use --client-procs 1"},
		{"load-clients without a spec", []string{"bench", "load-clients", "--out", "x.json"}, "--spec and --out are required"},
		{"negative kill", []string{"bench", "load", "--kill-every", "-1s"}, "durations must not be negative"},
		{"probe bad until", []string{"bench", "probe", "--until", "tomorrow"}, `bad --until "tomorrow"`},
		{"probe zero duration", []string{"bench", "probe", "--duration", "0s"}, "--duration must be positive"},
		{"probe negative ids", []string{"bench", "probe", "--ids", "-1"}, "--ids not negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(tt.args, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestBenchProbe_NoServerExits1 checks that a probe which cannot reach
// its server fails at once, saying where it tried, instead of timing
// nothing.
func TestBenchProbe_NoServerExits1(t *testing.T) {
	var stderr bytes.Buffer
	code := run([]string{"bench", "probe", "--flight", "127.0.0.1:1", "--user", "u", "--duration", "1s"}, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "bench probe: log in to 127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want 1 and the address it could not log in to", code, stderr.String())
	}
}

// TestBenchLoadClients_BadSpec checks that a client process given a spec
// it cannot read, or one that is not JSON, exits 1 saying which, before it
// connects anywhere.
func TestBenchLoadClients_BadSpec(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte("{clients: lots"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, spec, want string
	}{
		{"missing file", filepath.Join(dir, "none.json"), "read the clients' spec"},
		{"not JSON", garbage, "clients' spec " + garbage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run([]string{"bench", "load-clients", "--spec", tt.spec, "--out", filepath.Join(dir, "out.json")}, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}
