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

	"github.com/quiverdata/quiver/bench"
)

func init() {
	register("bench", "run the seed workloads and print their tables with this machine's numbers", func() command { return &benchCmd{} })
}

// benchSuite is one `quiver bench <suite>`: it adds its flags to fs and
// returns the function that runs it.
type benchSuite struct {
	summary string
	setup   func(fs *flag.FlagSet) func(ctx context.Context, reps int) (*bench.Report, error)
}

// benchSuites are the suites, registered by each bench_<suite>.go file.
var benchSuites = map[string]benchSuite{}

func registerSuite(name string, s benchSuite) { benchSuites[name] = s }

type benchCmd struct{}

func (benchCmd) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("name a suite: %s", strings.Join(suiteNames(), ", "))
	}
	name := args[0]
	suite, ok := benchSuites[name]
	if !ok {
		return usagef("unknown suite %q (have: %s)", name, strings.Join(suiteNames(), ", "))
	}
	fs := newFlagSet("bench " + name)
	reps := fs.Int("reps", 5, "alternated runs per figure (the median is reported)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	plotOut := fs.String("plot", "", "also draw the comparison to this .svg or .png file")
	run := suite.setup(fs)
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *reps < 1 {
		return usagef("--reps must be at least 1")
	}
	if *plotOut != "" && !strings.HasSuffix(*plotOut, ".svg") && !strings.HasSuffix(*plotOut, ".png") {
		return usagef("--plot must name a .svg or .png file")
	}
	start := time.Now()
	rep, err := run(ctx, *reps)
	if err != nil {
		return fmt.Errorf("bench %s: %w", name, err)
	}
	rep.When = start.UTC()
	rep.Machine = machine()
	rep.Print(os.Stdout)
	fmt.Fprintf(os.Stdout, "\n(took %s)\n", time.Since(start).Round(time.Second))
	if *jsonOut != "" {
		if err := rep.WriteJSON(*jsonOut); err != nil {
			return err
		}
	}
	if *plotOut != "" {
		if err := bench.Plot(rep, *plotOut); err != nil {
			return err
		}
	}
	return nil
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
