package main

import (
	"context"
	"flag"
	"log/slog"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/load"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	registerSuite("load", suite{"1 to 1,000 concurrent Flight and MySQL clients (point, aggregate, 1M-row fetch) against one authenticated server: throughput, small-query p99 against idle, errors, peak RSS, aborted streams", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg load.Config
		clients := fs.String("clients", "1,64,300,1000", "concurrent clients of each level")
		fs.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long each level runs once its clients have logged in")
		fs.DurationVar(&cfg.Warmup, "warmup", 10*time.Second, "before each level's measured --duration, its clients start their loops at random moments over this long (0: all at once, as the measured window starts)")
		fs.DurationVar(&cfg.Idle, "idle", 10*time.Second, "how long the idle small-query latency is measured before each level")
		fs.BoolVar(&cfg.Probe, "probe", true, "also time point lookups from a Flight client in a process of its own (quiver-bench probe), idle and under load")
		fs.Float64Var(&cfg.MySQLShare, "mysql-share", 0.2, "share of the clients that use MySQL (the others Flight SQL)")
		fetchRows := fs.String("fetch-rows", "1M", "rows of the large fetch (and of the table)")
		fs.Int64Var(&cfg.AggRows, "agg-rows", 10_000, "rows the small aggregate covers")
		fs.IntVar(&cfg.LoginParallel, "login-parallel", 8, "clients logging in at once while a level ramps up")
		fs.Func("server-flag", "flag for quiver serve, repeatable; a value with spaces is split (--server-flag '--max-running 8')", func(v string) error {
			cfg.ServerFlags = append(cfg.ServerFlags, strings.Fields(v)...)
			return nil
		})
		fs.IntVar(&cfg.ClientProcs, "client-procs", 8, "run each loaded level's clients in this many processes of their own (quiver-bench load-clients), each with its share of both protocols, as clients on machines of their own share no Go scheduler; 1: all in the bench's process (which --kill-every, --restart-at and --write-share need)")
		fs.IntVar(&cfg.ServerNice, "server-nice", 10, "run quiver serve at this nice value, below the clients' priority, so that they get a core when they have work, as clients on machines of their own would (0: at the bench's own priority)")
		fs.IntVar(&cfg.AbortStreams, "abort-streams", 1000, "DoGets per round of the abort step, each read to its first batch and cancelled (0: no abort step)")
		fs.IntVar(&cfg.AbortRounds, "abort-rounds", 3, "rounds of the abort step")
		abortRows := fs.String("abort-rows", "", "rows of each aborted stream's result (default: --fetch-rows); more than 16 MiB of them, so the server is mid-stream")
		fs.IntVar(&cfg.AbortParallel, "abort-parallel", 100, "aborted streams at a time, over as many connections")
		fs.DurationVar(&cfg.Settle, "settle", 5*time.Second, "quiet time before the server's memory is read after aborted streams")
		fs.DurationVar(&cfg.AbortLate, "abort-late", 0, "also read the server's memory this long after the last abort round (past Go's 2-minute forced GC: 2m10s)")
		fs.Float64Var(&cfg.WriteShare, "write-share", 0, "share of the clients that also INSERT a row after each read; every acknowledged one is checked afterwards")
		fs.DurationVar(&cfg.Chaos.KillEvery, "kill-every", 0, "chaos: kill a client mid-fetch this often (0: never)")
		fs.IntVar(&cfg.Chaos.SlowReaders, "slow-readers", 0, "chaos: clients that read fetches at --slow-rate")
		slowRate := fs.Int64("slow-rate", 1024, "chaos: slow readers' rate in KB/s")
		fs.DurationVar(&cfg.Chaos.RestartAt, "restart-at", 0, "chaos: restart the server (SIGTERM, then start it again) this far into each level (0: never)")
		fs.DurationVar(&cfg.Chaos.Drain, "drain", 10*time.Second, "the server's --drain, how long a restart lets running streams finish")
		verbose := fs.Bool("v", false, "log progress to stderr")
		return func(ctx context.Context, e env) (*report.Report, error) {
			var err error
			if cfg.Clients, err = load.ParseClients(*clients); err != nil {
				return nil, cli.Usagef("%v", err)
			}
			ns, err := bench.ParseSizes(*fetchRows)
			if err != nil || len(ns) != 1 {
				return nil, cli.Usagef("bad --fetch-rows %q: give one size, e.g. 1M", *fetchRows)
			}
			cfg.FetchRows = ns[0]
			if *abortRows != "" {
				ns, err := bench.ParseSizes(*abortRows)
				if err != nil || len(ns) != 1 {
					return nil, cli.Usagef("bad --abort-rows %q: give one size, e.g. 1M", *abortRows)
				}
				cfg.AbortRows = ns[0]
			}
			switch {
			case cfg.Duration <= 0 || cfg.Idle <= 0:
				return nil, cli.Usagef("--duration and --idle must be positive")
			case cfg.Warmup < 0:
				return nil, cli.Usagef("--warmup must not be negative")
			case cfg.MySQLShare < 0 || cfg.MySQLShare > 1 || cfg.WriteShare < 0 || cfg.WriteShare > 1:
				return nil, cli.Usagef("--mysql-share and --write-share must be between 0 and 1")
			case cfg.ServerNice < 0 || cfg.ServerNice > 19:
				return nil, cli.Usagef("--server-nice must be between 0 and 19")
			case cfg.AggRows < 1:
				return nil, cli.Usagef("--agg-rows must be at least 1")
			case cfg.LoginParallel < 1 || cfg.AbortParallel < 1 || cfg.ClientProcs < 1:
				return nil, cli.Usagef("--login-parallel, --abort-parallel and --client-procs must be at least 1")
			case cfg.ClientProcs > 1 && (cfg.Chaos.KillEvery > 0 || cfg.Chaos.RestartAt > 0 || cfg.WriteShare > 0):
				return nil, cli.Usagef("--kill-every, --restart-at and --write-share need the clients in the bench's process: use --client-procs 1")
			case cfg.AbortStreams < 0 || cfg.AbortRounds < 1 || cfg.Chaos.SlowReaders < 0 || *slowRate < 1:
				return nil, cli.Usagef("--abort-streams and --slow-readers must not be negative, --abort-rounds and --slow-rate at least 1")
			case cfg.Settle < 0 || cfg.AbortLate < 0 || cfg.Chaos.KillEvery < 0 || cfg.Chaos.RestartAt < 0 || cfg.Chaos.Drain < 0:
				return nil, cli.Usagef("durations must not be negative")
			}
			cfg.Chaos.SlowRate = *slowRate << 10
			// A level runs for a minute by default, so --reps repeats
			// the whole sequence only when given.
			cfg.Rounds = 1
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "reps" {
					cfg.Rounds = e.reps
				}
			})
			if cfg.Bin, err = e.quiver(); err != nil {
				return nil, err
			}
			if cfg.BenchBin, err = e.self(); err != nil {
				return nil, err
			}
			if *verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(e.stderr, nil))
			}
			return load.Run(ctx, cfg)
		}
	}})
}
