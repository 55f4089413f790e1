// Command quiver is an Arrow-native data server over embedded DuckDB: Flight
// SQL and MySQL-protocol endpoints, columnar ingest over Flight and from
// Kafka, and benchmarks that prove its speed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/version"
)

// command is one verb: quiver <name> [flags] [args].
type command interface {
	// Run parses args with its own FlagSet and runs, reading and writing
	// std. A *usageError means a bad flag or argument (exit status 2).
	Run(ctx context.Context, std cli.Stdio, args []string) error
}

// usageError is a bad flag or argument: quiver prints it and exits 2.
type usageError = cli.UsageError

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// commands maps each verb to its constructor and a one-line summary.
var commands = map[string]struct {
	summary string
	new     func() command
}{}

func register(name, summary string, mk func() command) {
	commands[name] = struct {
		summary string
		new     func() command
	}{summary, mk}
}

func main() {
	os.Exit(run(os.Args[1:], cli.OSStdio()))
}

// run runs quiver with args on the streams std and returns its exit
// status: 0, 1 for a failure at run time, 2 for a bad flag or argument.
func run(args []string, std cli.Stdio) int {
	stderr := std.Err
	if len(args) > 0 && args[0] == "help" {
		return runHelp(args[1:], std)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		printUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "quiver: unknown command %q (try: %s)\n", args[0], strings.Join(verbs(), ", "))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := runVerb(ctx, c.new(), std, args[1:])
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "quiver %s: %s\n", args[0], ue.Msg)
		return 2
	default:
		fmt.Fprintf(stderr, "quiver %s: %s\n", args[0], err)
		return 1
	}
}

// runVerb runs a verb and turns a panic in it into an error, so that no
// data, however odd, ends the CLI with a Go stack trace. Panics on other
// goroutines are not caught: the code that starts a goroutine owns them.
func runVerb(ctx context.Context, cmd command, std cli.Stdio, args []string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("stopped by a bug in quiver: %v; please report it with the command that caused it", p)
		}
	}()
	return cmd.Run(ctx, std, args)
}

func verbs() []string {
	var names []string
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: quiver <command> [flags] [args]")
	fmt.Fprintln(w)
	for _, name := range verbs() {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'quiver <command> -h' for a command's flags, 'quiver help --markdown' for all of them.")
}

// newFlagSet returns a FlagSet that reports errors instead of exiting, so
// Run can turn them into usage errors.
func newFlagSet(name string) *flag.FlagSet { return cli.NewFlagSet("quiver " + name) }

// parseFlags parses args, turning a bad flag into a usage error. Flags may
// follow positional arguments (quiver load a.parquet --table t).
func parseFlags(std cli.Stdio, fs *flag.FlagSet, args []string) ([]string, error) {
	if flagsShown != nil {
		// quiver help reads the flags of a verb run with -h instead of
		// printing them.
		pos, err := cli.ParseFlags(fs, args, io.Discard)
		if errors.Is(err, flag.ErrHelp) {
			flagsShown(fs)
		}
		return pos, err
	}
	return cli.ParseFlags(fs, args, std.Err)
}

// newLogger returns the process logger: text or JSON lines to w at the
// given level.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("bad --log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("bad --log-format %q: use text or json", format)
}

// logFormatUsage is the help of every verb's --log-format.
const logFormatUsage = "log lines as text (key=value) or json (one object a line), with the same keys"

// announcer says where a listener listens: the line scripts wait for,
// "quiver: PROTO listening on ADDR", or in a JSON log, a record.
func announcer(w io.Writer, format string, l *slog.Logger) func(proto, addr string) {
	if format == "json" {
		return func(proto, addr string) { l.Info("listening", "proto", proto, "addr", addr) }
	}
	return func(proto, addr string) { fmt.Fprintf(w, "quiver: %s listening on %s\n", proto, addr) }
}

// logStart logs which quiver is starting, first of all its lines.
func logStart(l *slog.Logger, verb string) {
	v := version.Get()
	l.Info("quiver "+verb+" starting", "version", v.Version, "commit", v.Commit, "built", v.Date,
		"duckdb", v.DuckDB, "arrow_go", v.Arrow, "go", v.Go)
}
