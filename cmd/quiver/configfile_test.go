package main

import (
	"bytes"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// configVerbs are the flag sets of the verbs that take --config, made anew.
var configVerbs = map[string]func() (*flag.FlagSet, *configFlags){
	"serve": func() (*flag.FlagSet, *configFlags) { fs, f := newServeFlags(); return fs, &f.conf },
	"ingest": func() (*flag.FlagSet, *configFlags) {
		fs := newFlagSet("ingest")
		newIngestOptions(fs)
		var c configFlags
		c.register(fs)
		return fs, &c
	},
}

// changed sets every flag of fs it can to a value other than its default
// (booleans flipped, numbers and durations moved, strings replaced where
// the flag takes any string) and returns how many it changed.
func changed(t *testing.T, fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if configOnly[f.Name] || secretFlags[f.Name] {
			return
		}
		def := f.Value.String()
		var try []string
		if b, err := strconv.ParseBool(def); err == nil {
			try = append(try, strconv.FormatBool(!b))
		}
		if i, err := strconv.ParseInt(def, 10, 64); err == nil {
			try = append(try, strconv.FormatInt(i+7, 10))
		}
		if x, err := strconv.ParseFloat(def, 64); err == nil {
			try = append(try, strconv.FormatFloat(x+0.5, 'f', -1, 64))
		}
		if d, err := time.ParseDuration(def); err == nil {
			try = append(try, (d + 7*time.Second).String())
		}
		try = append(try, "127.0.0.1:4242", "/srv/quiver/x", "2GB", "zstd", "x")
		for _, v := range try {
			if f.Value.Set(v) == nil && f.Value.String() != def {
				n++
				return
			}
			f.Value.Set(def)
		}
	})
	return n
}

// TestConfig_EveryFlagRoundTrips: every flag of serve and ingest is a key
// of the configuration file. Each flag is set to a value of its own,
// printed with --print-config's writer, read back from that file onto a
// fresh flag set, and must come out the same.
func TestConfig_EveryFlagRoundTrips(t *testing.T) {
	for verb, mk := range configVerbs {
		t.Run(verb, func(t *testing.T) {
			fs, _ := mk()
			n := changed(t, fs)
			total := 0
			fs.VisitAll(func(*flag.Flag) { total++ })
			if n < total/2 {
				t.Fatalf("changed %d of %d flags; want most of them away from their defaults", n, total)
			}
			var file bytes.Buffer
			if err := printConfig(&file, fs); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), verb+".toml")
			if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			fs2, conf := mk()
			if _, err := parseFlags(discard(), fs2, []string{"--config", path}); err != nil {
				t.Fatal(err)
			}
			if _, err := conf.apply(fs2, verb == "serve"); err != nil {
				t.Fatalf("the printed configuration does not read back: %v\n%s", err, file.String())
			}
			want, got := effective(fs), effective(fs2)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("key %s: read back %q, want %q", k, got[k], v)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d keys read back, want %d", len(got), len(want))
			}
		})
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "quiver.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfig_Apply: flags override the file; a bad key or value is
// refused with the file, the line and the key.
func TestConfig_Apply(t *testing.T) {
	for _, tc := range []struct {
		name, verb, file string
		args             []string
		want             map[string]string // flag values after apply
		err              []string          // in the error
	}{
		{name: "file values", verb: "serve", file: "db = \"/srv/q.duckdb\"\nmax-running = 9\nadmission = false\n",
			want: map[string]string{"db": "/srv/q.duckdb", "max-running": "9", "admission": "false"}},
		{name: "the command line wins", verb: "serve", file: "max-running = 9\nflight = \"127.0.0.1:1\"\n",
			args: []string{"--max-running", "3"}, want: map[string]string{"max-running": "3", "flight": "127.0.0.1:1"}},
		{name: "a typo", verb: "serve", file: "db = \"x\"\n\nmax-runing = 3\n", err: []string{"quiver.toml:3:", `"max-runing"`, "unknown key"}},
		{name: "a bad value", verb: "serve", file: "max-running = \"lots\"\n", err: []string{"quiver.toml:1:", `"max-running"`, "invalid value"}},
		{name: "twice", verb: "ingest", file: "topic = \"a\"\ntopic = \"b\"\n", err: []string{"quiver.toml:2:", "twice"}},
		{name: "config inside config", verb: "ingest", file: "config = \"other.toml\"\n", err: []string{"command-line flag only"}},
		{name: "pipelines in ingest's file", verb: "ingest", file: "[[pipeline]]\ntopic = \"a\"\n", err: []string{"belong in quiver serve"}},
		{name: "not TOML", verb: "serve", file: "db = \n", err: []string{"quiver.toml:1:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, conf := configVerbs[tc.verb]()
			path := writeConfig(t, tc.file)
			if _, err := parseFlags(discard(), fs, append([]string{"--config", path}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			_, err := conf.apply(fs, tc.verb == "serve")
			if tc.err != nil {
				if err == nil {
					t.Fatalf("applied; want an error holding %q", tc.err)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if got := fs.Lookup(k).Value.String(); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestConfig_Print: --print-config shows the configuration in effect,
// secrets redacted, and serves nothing.
func TestConfig_Print(t *testing.T) {
	path := writeConfig(t, "db = \"/srv/q.duckdb\"\ntoken-key = \"00112233\"\n")
	code, out, errOut := runQuiver(t, "serve", "--config", path, "--print-config", "--max-running", "5", "--user", "admin", "--password", "hunter2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"db = '/srv/q.duckdb'", "max-running = '5'", "token-key = 'REDACTED'"} {
		if !strings.Contains(out, want) {
			t.Errorf("--print-config output lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"00112233", "hunter2"} {
		if strings.Contains(out, secret) {
			t.Errorf("--print-config shows the secret %q", secret)
		}
	}
}

// TestConfig_SIGHUPChanges: reading the file again names the changed keys
// that need a restart.
func TestConfig_SIGHUPChanges(t *testing.T) {
	path := writeConfig(t, "max-running = 9\nusers-file = \"/etc/quiver/users\"\n")
	fs, conf := configVerbs["serve"]()
	args := []string{"--config", path}
	if _, err := parseFlags(discard(), fs, args); err != nil {
		t.Fatal(err)
	}
	if _, err := conf.apply(fs, true); err != nil {
		t.Fatal(err)
	}
	running := effective(fs)
	if err := os.WriteFile(path, []byte("max-running = 12\nusers-file = \"/etc/quiver/users2\"\nthreads = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	conf.logConfigChanges(slog.New(slog.NewTextHandler(&log, nil)), running,
		func() *flag.FlagSet { fs, _ := newServeFlags(); return fs }, args)
	if !strings.Contains(log.String(), "keys=max-running,threads") {
		t.Errorf("log %q: want the keys max-running and threads named, users-file not", log.String())
	}
}
