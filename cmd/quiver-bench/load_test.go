package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchLoad_UsageErrors checks that bad bench load flags exit 2 with
// a one-line reason, before any server starts.
func TestBenchLoad_UsageErrors(t *testing.T) {
	checkUsage(t, []usageCase{
		{"bad clients", []string{"load", "--clients", "1,lots"}, `bad client count "lots"`},
		{"zero clients", []string{"load", "--clients", "0"}, `bad client count "0"`},
		{"no clients", []string{"load", "--clients", ","}, "no client counts given"},
		{"bad fetch rows", []string{"load", "--fetch-rows", "1M,2M"}, "bad --fetch-rows"},
		{"zero duration", []string{"load", "--duration", "0s"}, "--duration and --idle must be positive"},
		{"negative warmup", []string{"load", "--warmup", "-1s"}, "--warmup must not be negative"},
		{"share above 1", []string{"load", "--mysql-share", "1.5"}, "must be between 0 and 1"},
		{"negative write share", []string{"load", "--write-share", "-0.1"}, "must be between 0 and 1"},
		{"zero agg rows", []string{"load", "--agg-rows", "0"}, "--agg-rows must be at least 1"},
		{"zero login parallel", []string{"load", "--login-parallel", "0"}, "--login-parallel, --abort-parallel and --client-procs must be at least 1"},
		{"negative abort streams", []string{"load", "--abort-streams", "-1"}, "must not be negative"},
		{"zero client processes", []string{"load", "--client-procs", "0"}, "--client-procs must be at least 1"},
		{"client processes with kills", []string{"load", "--client-procs", "4", "--kill-every", "1s"}, "use --client-procs 1"},
		{"client processes with writers", []string{"load", "--client-procs", "2", "--write-share", "0.1"}, "use --client-procs 1"},
		{"load-clients without a spec", []string{"load-clients", "--out", "x.json"}, "--spec and --out are required"},
		{"negative kill", []string{"load", "--kill-every", "-1s"}, "durations must not be negative"},
		{"probe bad until", []string{"probe", "--until", "tomorrow"}, `bad --until "tomorrow"`},
		{"probe zero duration", []string{"probe", "--duration", "0s"}, "--duration must be positive"},
		{"probe negative ids", []string{"probe", "--ids", "-1"}, "--ids not negative"},
	})
}

// TestBenchProbe_NoServerExits1 checks that a probe which cannot reach
// its server fails at once, saying where it tried, instead of timing
// nothing.
func TestBenchProbe_NoServerExits1(t *testing.T) {
	code, _, errOut := runBench(t, "probe", "--flight", "127.0.0.1:1", "--user", "u", "--duration", "1s")
	if code != 1 || !strings.Contains(errOut, "quiver-bench probe: log in to 127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want 1 and the address it could not log in to", code, errOut)
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
			code, _, errOut := runBench(t, "load-clients", "--spec", tt.spec, "--out", filepath.Join(dir, "out.json"))
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tt.want)
			}
		})
	}
}
