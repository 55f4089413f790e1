package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// smokeEnv names the environment variable that runs every suite at a size
// that takes seconds, whatever its flags say. It is meant for tests: they
// run the benchmark pages' commands exactly as written, and a command
// written for a published table takes minutes to hours. A smoke run's
// figures mean nothing, and its date line says it was one.
const smokeEnv = "QUIVER_BENCH_SMOKE"

// smokeFlags are the flag values a smoke run sets over the command line's,
// per suite: one alternated run of the smallest workload that still goes
// through every contender and table of the suite.
var smokeFlags = map[string][]string{
	"fetch":     {"sizes=20k"},
	"transport": {"mb=4"},
	"codec":     {"rows=1k", "min-sample=1ms"},
	"link":      {"rows=2k", "workloads=num20", "compressions=none,zstd"},
	"ingest":    {"rows=20000"},
	"kafka":     {"messages=20000"},
	"lake":      {"messages=20000", "rotate-mb=1"},
	"freshness": {"duration=2s", "rate=5000", "partitions=2", "every=10", "query-clients=2"},
	"lakeread":  {"rows=50k", "file-mb=1", "part-mb=1"},
	"scaleout":  {"rows=50k", "file-mb=1", "part-mb=1"},
	"load": {"clients=2", "duration=1s", "warmup=0s", "idle=500ms", "fetch-rows=10k", "client-procs=1",
		"server-nice=0", "abort-streams=4", "abort-rounds=1", "abort-parallel=2", "settle=0s"},
	"console": {"rows=5k"},
	"pandas":  {"sizes=10k"},
	"jdbc":    {"sizes=10k", "warmup-rows=1000", "java-heap=1g"},
	"parquet": {"sizes=10k", "warmup-rows=1000", "java-heap=1g"},
}

// smoke reports whether this run is a smoke run.
func smoke() bool { return os.Getenv(smokeEnv) != "" }

// applySmoke sets suite's smoke flag values, and one run per figure, over
// what fs parsed from the command line. The processes a suite starts as
// its own clients (load-clients, probe) have no smoke values and keep
// what their suite gave them.
func applySmoke(fs *flag.FlagSet, suite string) error {
	if _, ok := smokeFlags[suite]; !ok {
		return nil
	}
	for _, kv := range append([]string{"reps=1"}, smokeFlags[suite]...) {
		name, value, _ := strings.Cut(kv, "=")
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s: smoke flag %s: %w", smokeEnv, kv, err)
		}
	}
	return nil
}
