package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/quiverdata/quiver/internal/cli"
)

// A configuration file (quiver serve --config FILE, quiver ingest
// --config FILE) is TOML whose keys are the verb's flags without their
// dashes, so the two cannot drift: each key is set on the verb's own flag
// set, exactly as the flag would be. A flag given on the command line
// overrides the file's key. quiver serve's file may also hold the
// [[pipeline]] tables of an ingest file (--ingest), for Kafka pipelines
// inside the server:
//
//	db = "/var/lib/quiver/quiver.duckdb"
//	users-file = "/etc/quiver/users"
//	flight = "0.0.0.0:31337"
//	max-running = 8
//
//	[[pipeline]]
//	brokers = "kafka:9092"
//	topic = "events"
//	…
//
// Paths are read as on the command line, from the working directory.

// configOnly are the flags that make no sense inside a file.
var configOnly = map[string]bool{"config": true, "print-config": true}

// secretFlags are flags whose values --print-config does not show.
var secretFlags = map[string]bool{"password": true, "token-key": true, "catalog-credential": true, "catalog-token": true}

// configFlags are the --config and --print-config flags of a verb.
type configFlags struct {
	file  string
	print bool
}

func (c *configFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.file, "config", "", "TOML file whose keys are this command's flags without their dashes (db = \"…\", max-running = 8); flags on the command line override it")
	fs.BoolVar(&c.print, "print-config", false, "print the configuration in effect, from the file and the flags, as a configuration file (secrets redacted), and exit")
}

// apply sets the file's keys on fs, except the flags the command line
// set, and returns its [[pipeline]] tables (only quiver serve takes them:
// pipelines false refuses them).
func (c *configFlags) apply(fs *flag.FlagSet, pipelines bool) ([]filePipeline, error) {
	if c.file == "" {
		return nil, nil
	}
	onCLI := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCLI[f.Name] = true })
	seen := map[string]bool{}
	fps, err := readFlagFile("--config", c.file, func(key, val string, _ int) error {
		f := fs.Lookup(key)
		switch {
		case configOnly[key]:
			return fmt.Errorf("%s is a command-line flag only", key)
		case f == nil:
			return fmt.Errorf("unknown key: the keys are the flags of %s (see %s -h)", fs.Name(), fs.Name())
		case seen[key]:
			return fmt.Errorf("given twice")
		}
		seen[key] = true
		// A key at its flag's default changes nothing, and some flags
		// take no text for "not given" (--print-config prints every key).
		if onCLI[key] || val == f.DefValue {
			return nil
		}
		if err := fs.Set(key, val); err != nil {
			return fmt.Errorf("invalid value %q: %v", val, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(fps) > 0 && !pipelines {
		return nil, usagef("%s: [[pipeline]] tables belong in quiver serve's configuration; quiver ingest runs the one pipeline its keys describe", c.file)
	}
	return fps, nil
}

// effective is every flag of fs but the configuration's own, with its
// value in effect, secrets redacted.
func effective(fs *flag.FlagSet) map[string]string {
	out := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if configOnly[f.Name] {
			return
		}
		v := f.Value.String()
		if secretFlags[f.Name] && v != "" {
			v = "REDACTED"
		}
		out[f.Name] = v
	})
	return out
}

// printConfig writes the configuration in effect as a configuration file.
func printConfig(w io.Writer, fs *flag.FlagSet) error {
	b, err := toml.Marshal(effective(fs))
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "# %s: the configuration in effect\n", fs.Name()); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// reloadable are the keys quiver serve takes again on SIGHUP; a change to
// any other needs a restart.
var reloadable = map[string]bool{"users-file": true}

// logConfigChanges reads the configuration again, as SIGHUP does, and
// logs the keys whose values changed: each needs a restart to apply, but
// those the server reloads itself (the users file's content).
func (c *configFlags) logConfigChanges(log *slog.Logger, running map[string]string, newFlags func() *flag.FlagSet, args []string) {
	if c.file == "" {
		return
	}
	fs := newFlags()
	if _, err := cli.ParseFlags(fs, args, io.Discard); err != nil {
		log.Error("SIGHUP: configuration not read again", "err", err)
		return
	}
	again := &configFlags{file: c.file}
	if _, err := again.apply(fs, true); err != nil {
		log.Error("SIGHUP: configuration not read again", "file", c.file, "err", err)
		return
	}
	var restart []string
	for k, v := range effective(fs) {
		if running[k] != v && !reloadable[k] {
			restart = append(restart, k)
		}
	}
	sort.Strings(restart)
	if len(restart) > 0 {
		log.Warn("SIGHUP: configuration keys changed that take effect at the next restart", "file", c.file, "keys", strings.Join(restart, ","))
	} else {
		log.Info("SIGHUP: configuration read again; no key that needs a restart changed", "file", c.file)
	}
}
