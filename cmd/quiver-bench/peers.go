package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	registerSuite("peers", suite{"quiver against the C++ Flight stack (same Go client) and against DuckDB's Quack protocol (from Python), alternated", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var f peersFlags
		f.register(fs)
		return func(ctx context.Context, e env) (*report.Report, error) {
			cfg, err := f.config()
			if err != nil {
				return nil, err
			}
			if cfg.Bin, err = e.quiver(); err != nil {
				return nil, err
			}
			cfg.Reps, cfg.Log = e.reps, e.stderr
			if cfg.Python, err = bench.PythonVenv(ctx, f.python, "peers", bench.PeerRequirements(), e.stderr); err != nil {
				return nil, fmt.Errorf("build the peers' Python venv: %w", err)
			}
			return bench.Peers(ctx, cfg)
		}
	}})
}

// peersFlags are the peers suite's own flags, as given.
type peersFlags struct {
	peers, num20, str20, pointRows, clients, python string
	points, batchRows, warmup                       int
	window                                          time.Duration
}

func (f *peersFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.peers, "peers", "flight,quack", "comparisons to run: flight (the C++ Flight stack), quack (DuckDB's Quack protocol)")
	fs.StringVar(&f.num20, "num20-rows", "10M", "rows of the num20 table fetched")
	fs.StringVar(&f.str20, "str20-rows", "5M", "rows of the str20 table fetched")
	fs.StringVar(&f.pointRows, "point-rows", "100K", "rows of the table the point queries look up")
	fs.IntVar(&f.points, "points", 1000, "point queries timed on each server")
	fs.StringVar(&f.clients, "insert-clients", "1,8", "client processes inserting at once, one round each")
	fs.DurationVar(&f.window, "insert-window", 10*time.Second, "how long each insert round runs")
	fs.IntVar(&f.batchRows, "peer-batch-rows", 65536, "record batch rows of the C++ Flight peer (quiver's own batch size by default)")
	fs.IntVar(&f.warmup, "warmup", 1, "untimed runs of each Quack-table call before the timed ones")
	fs.StringVar(&f.python, "python", "python3", "the Python that builds the peers' venv (cached under $HOME/.cache/quiver)")
}

// config checks the flags and turns them into the suite's configuration.
func (f *peersFlags) config() (bench.PeersConfig, error) {
	var cfg bench.PeersConfig
	for _, p := range strings.Split(f.peers, ",") {
		switch strings.TrimSpace(p) {
		case "flight":
			cfg.Flight = true
		case "quack":
			cfg.Quack = true
		default:
			return cfg, cli.Usagef("bad --peers %q: use flight, quack or both", f.peers)
		}
	}
	for _, s := range []struct {
		name, v string
		to      *int64
	}{{"--num20-rows", f.num20, &cfg.Num20Rows}, {"--str20-rows", f.str20, &cfg.Str20Rows}, {"--point-rows", f.pointRows, &cfg.PointRows}} {
		ns, err := bench.ParseSizes(s.v)
		if err != nil || len(ns) != 1 {
			return cfg, cli.Usagef("bad %s %q: one size, e.g. 1M", s.name, s.v)
		}
		*s.to = ns[0]
	}
	for _, c := range strings.Split(f.clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return cfg, cli.Usagef("bad --insert-clients %q: positive counts, e.g. 1,8", f.clients)
		}
		cfg.InsertClients = append(cfg.InsertClients, n)
	}
	switch {
	case f.points < 1:
		return cfg, cli.Usagef("--points must be at least 1")
	case f.window <= 0:
		return cfg, cli.Usagef("--insert-window must be positive")
	case f.batchRows < 1:
		return cfg, cli.Usagef("--peer-batch-rows must be at least 1")
	case f.warmup < 0:
		return cfg, cli.Usagef("--warmup must not be negative")
	}
	cfg.Points, cfg.InsertWindow, cfg.PeerBatchRows, cfg.Warmup = f.points, f.window, f.batchRows, f.warmup
	return cfg, nil
}
