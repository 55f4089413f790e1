package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench/report"
)

func init() {
	register("bench", "run the seed workloads and print their tables with this machine's numbers", func() command { return &benchCmd{} })
}

// benchSuite is one `quiver bench <suite>`: it adds its flags to fs and
// returns the function that runs it.
type benchSuite struct {
	summary string
	setup   func(fs *flag.FlagSet) func(ctx context.Context, reps int) (*report.Report, error)
}

// benchSuites are the suites, registered by each bench_<suite>.go file.
var benchSuites = map[string]benchSuite{}

func registerSuite(name string, s benchSuite) { benchSuites[name] = s }

type benchCmd struct{}

func (benchCmd) Run(ctx context.Context, args []string) error {
	b, err := parseBench(args)
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := b.run(ctx, b.reps)
	if err != nil {
		return fmt.Errorf("bench %s: %w", b.name, err)
	}
	rep.When = start.UTC()
	rep.Machine = machine()
	rep.Print(os.Stdout)
	fmt.Fprintf(os.Stdout, "\n(took %s)\n", time.Since(start).Round(time.Second))
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
	return nil
}

// benchRun is a parsed quiver bench command, ready to run.
type benchRun struct {
	name       string
	run        func(ctx context.Context, reps int) (*report.Report, error)
	reps       int
	json, plot string
}

// parseBench parses quiver bench's arguments: a suite and its flags.
func parseBench(args []string) (*benchRun, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil, usagef("name a suite: %s", strings.Join(suiteNames(), ", "))
	}
	name := args[0]
	suite, ok := benchSuites[name]
	if !ok {
		return nil, usagef("unknown suite %q (have: %s)", name, strings.Join(suiteNames(), ", "))
	}
	fs := newFlagSet("bench " + name)
	b := &benchRun{name: name}
	fs.IntVar(&b.reps, "reps", 5, "alternated runs per figure (the median is reported)")
	fs.StringVar(&b.json, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&b.plot, "plot", "", "also draw the comparison to this .svg or .png file")
	b.run = suite.setup(fs)
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, usagef("unexpected argument %q", pos[0])
	}
	if b.reps < 1 {
		return nil, usagef("--reps must be at least 1")
	}
	if b.plot != "" && !strings.HasSuffix(b.plot, ".svg") && !strings.HasSuffix(b.plot, ".png") {
		return nil, usagef("--plot must name a .svg or .png file")
	}
	return b, nil
}

func suiteNames() []string {
	var names []string
	for n := range benchSuites {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func machine() string {
	return fmt.Sprintf("%s/%s, %d cores, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}
