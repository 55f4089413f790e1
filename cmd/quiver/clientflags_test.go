package main

import (
	"strings"
	"testing"
)

// TestClientFlags_EnvDefaults checks a flag that defaults to an
// environment variable takes its value, and that -h shows the built-in
// default instead: a password must not be printed.
func TestClientFlags_EnvDefaults(t *testing.T) {
	t.Setenv("QUIVER_SERVER", "db.example:4242")
	t.Setenv("QUIVER_USER", "etl")
	t.Setenv("QUIVER_PASSWORD", "hunter2")
	fs := newFlagSet("query")
	var cf clientFlags
	cf.register(fs)
	if _, err := parseFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	if cf.server != "db.example:4242" || cf.user != "etl" || cf.password != "hunter2" {
		t.Errorf("from the environment: got server %q user %q password %q, want db.example:4242, etl, hunter2", cf.server, cf.user, cf.password)
	}
	var usage strings.Builder
	fs.SetOutput(&usage)
	fs.PrintDefaults()
	if strings.Contains(usage.String(), "hunter2") || strings.Contains(usage.String(), "db.example") {
		t.Errorf("-h shows the environment's values:\n%s", usage.String())
	}
	if !strings.Contains(usage.String(), `(default "`+defaultServer+`")`) {
		t.Errorf("-h does not show the default server %s:\n%s", defaultServer, usage.String())
	}
}
