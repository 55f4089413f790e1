package main

import (
	"context"
	"flag"
	"strings"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/workload"
)

func init() {
	registerSuite("fetch", suite{"fetch id/num20/str20 over Flight (and MySQL), and engine export against duckdb-go", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		workloads := fs.String("workloads", "id,num20,str20", "workloads to run")
		sizes := fs.String("sizes", "1M,5M,10M", "row counts")
		protocols := fs.String("protocols", "flight", "protocols to time end to end: flight, mysql")
		mariadb := fs.String("mariadb", "", "HOST:PORT:USER:PASSWORD of a MariaDB holding the same rows (database quiver_bench)")
		skipEngine := fs.Bool("skip-engine", false, "skip the in-process engine-export table")
		return func(ctx context.Context, e env) (*report.Report, error) {
			ws, err := workload.Parse(*workloads)
			if err != nil {
				return nil, cli.Usagef("%v", err)
			}
			ns, err := bench.ParseSizes(*sizes)
			if err != nil {
				return nil, cli.Usagef("%v", err)
			}
			bin, err := e.quiver()
			if err != nil {
				return nil, err
			}
			return bench.Fetch(ctx, bench.FetchConfig{
				Workloads: ws, Sizes: ns, Protocols: strings.Split(*protocols, ","), Bin: bin,
				MariaDB: *mariadb, SkipEngine: *skipEngine, Reps: e.reps,
			})
		}
	}})
}
