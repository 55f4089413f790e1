package main

import (
	"context"

	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	register("bench", "moved: the benchmarks are quiver-bench SUITE, a binary of their own", func() command { return benchMoved{} })
}

// benchMoved answers `quiver bench` from scripts written before the
// benchmarks left the product binary: a usage error that says where they
// went, so that the script stops at once with a reason.
type benchMoved struct{}

func (benchMoved) Run(context.Context, cli.Stdio, []string) error {
	return usagef("the benchmarks moved to their own binary: run quiver-bench SUITE with the same suites and flags (make build puts it in bin/ beside quiver)")
}

// reference is the command-line reference's page: where the benchmarks
// went.
func (benchMoved) reference() []referencePage {
	return []referencePage{{title: "bench", text: "The benchmarks are a binary of their own: `quiver-bench SUITE`, with the same suites and flags (`quiver-bench -h` lists them). `make build` puts it in `bin/` beside `quiver`."}}
}
