// Command quiver-bench runs quiver's benchmark suites: the published
// workloads, reproduced side by side on the machine it runs on, printed as
// tables (and, when asked, as JSON, a plot and a Markdown section of a
// page such as docs/benchmarks.md). It is a harness apart from the
// product: the suites that need a server run the quiver binary as a child
// process, the one beside quiver-bench unless --quiver names another.
//
//	quiver-bench SUITE [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/osfacts"
	"github.com/quiverdata/quiver/internal/version"
)

// suite is one `quiver-bench <suite>`: setup adds the suite's flags to fs
// and returns the function that runs it.
type suite struct {
	summary string
	setup   func(fs *flag.FlagSet) func(ctx context.Context, e env) (*report.Report, error)
}

// suites are the suites, registered by each suite's file.
var suites = map[string]suite{}

func registerSuite(name string, s suite) { suites[name] = s }

// env is what a suite's run gets beside its own flags.
type env struct {
	// reps is how many alternated runs each figure takes.
	reps int
	// quiverFlag is --quiver: the product binary, or "" to look for it.
	quiverFlag string
	stdout     io.Writer
	stderr     io.Writer
}

// quiver returns the quiver binary to run as the server: --quiver, else
// quiver beside this binary (make build puts both in bin/), else quiver on
// the PATH.
func (e env) quiver() (string, error) {
	if e.quiverFlag != "" {
		return e.quiverFlag, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "quiver")
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("quiver"); err == nil {
		return p, nil
	}
	return "", errors.New("find the quiver binary: none beside quiver-bench or on the PATH; run make build, or pass --quiver PATH")
}

// self returns this binary, which the suites run again as their own client
// processes (quiver-bench link-client, load-clients, probe).
func (e env) self() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the quiver-bench binary: %w", err)
	}
	return p, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs quiver-bench with args and returns its exit status: 0, 1 for a
// failure at run time, 2 for a bad flag or argument.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "version" || args[0] == "--version" || args[0] == "-version" {
		// The same build stamp as quiver's, so a published table names
		// the build it measured.
		fmt.Fprintln(stdout, strings.Replace(version.Get().String(), "quiver ", "quiver-bench ", 1))
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if args[0] == linkClient {
		err = runLinkClient(ctx, args[1:], stdout, stderr)
	} else {
		err = runSuite(ctx, args, stdout, stderr)
	}
	var ue *cli.UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "quiver-bench %s: %s\n", args[0], ue.Msg)
		return 2
	default:
		fmt.Fprintf(stderr, "quiver-bench %s: %s\n", args[0], err)
		return 1
	}
}

// runSuite parses a suite's arguments, runs it and prints its report.
func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	b, err := parseSuite(args, stdout, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := b.run(ctx, b.env)
	if err != nil {
		return err
	}
	rep.When = start.UTC()
	rep.Machine = machine()
	rep.Print(stdout)
	fmt.Fprintf(stdout, "\n(took %s)\n", time.Since(start).Round(time.Second))
	if b.json != "" {
		if err := rep.WriteJSON(b.json); err != nil {
			return err
		}
	}
	if b.plot != "" {
		if err := report.Plot(rep, b.plot); err != nil {
			return err
		}
	}
	if b.markdown != "" {
		if err := writeMarkdown(rep, b, args); err != nil {
			return err
		}
	}
	return nil
}

// suiteRun is a parsed quiver-bench command, ready to run.
type suiteRun struct {
	name       string
	run        func(ctx context.Context, e env) (*report.Report, error)
	env        env
	json, plot string
	markdown   string
}

// parseSuite parses quiver-bench's arguments: a suite and its flags.
func parseSuite(args []string, stdout, stderr io.Writer) (*suiteRun, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, cli.Usagef("name a suite: %s", strings.Join(suiteNames(), ", "))
	}
	name := args[0]
	s, ok := suites[name]
	if !ok {
		return nil, cli.Usagef("unknown suite %q (have: %s)", name, strings.Join(suiteNames(), ", "))
	}
	fs := cli.NewFlagSet("quiver-bench " + name)
	b := &suiteRun{name: name, env: env{stdout: stdout, stderr: stderr}}
	fs.IntVar(&b.env.reps, "reps", 5, "alternated runs per figure (the median is reported)")
	fs.StringVar(&b.json, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&b.plot, "plot", "", "also draw the comparison to this .svg or .png file")
	fs.StringVar(&b.markdown, "markdown", "", markdownUsage)
	fs.StringVar(&b.env.quiverFlag, "quiver", os.Getenv("QUIVER_BIN"), "the quiver binary to run as the server (env QUIVER_BIN; default: quiver beside quiver-bench, else on the PATH)")
	b.run = s.setup(fs)
	pos, err := cli.ParseFlags(fs, args[1:], stderr)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, cli.Usagef("unexpected argument %q", pos[0])
	}
	if smoke() {
		if err := applySmoke(fs, name); err != nil {
			return nil, err
		}
	}
	if b.env.reps < 1 {
		return nil, cli.Usagef("--reps must be at least 1")
	}
	if b.plot != "" && !strings.HasSuffix(b.plot, ".svg") && !strings.HasSuffix(b.plot, ".png") {
		return nil, cli.Usagef("--plot must name a .svg or .png file")
	}
	return b, nil
}

func suiteNames() []string {
	var names []string
	for n := range suites {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: quiver-bench <suite> [flags]")
	fmt.Fprintln(w)
	for _, name := range suiteNames() {
		fmt.Fprintf(w, "  %-12s %s\n", name, suites[name].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every suite takes --reps, --json, --plot, --markdown and --quiver; run 'quiver-bench <suite> -h' for its own flags.")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s=1 runs any suite at a size that takes seconds, one run per figure, whatever its flags say:\n", smokeEnv)
	fmt.Fprintln(w, "it is for tests that run the documented commands as written; its figures mean nothing.")
}

func machine() string {
	m := fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if mem, err := osfacts.MemoryLimit(); err == nil {
		m += fmt.Sprintf(", %.1f GB memory", float64(mem)/1e9)
	}
	m += ", " + runtime.Version()
	if smoke() {
		m += ", a smoke run (" + smokeEnv + "): the figures mean nothing"
	}
	return m
}
