package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/internal/workload"
)

func init() {
	registerSuite("link", benchSuite{"DoGet compressed against uncompressed over a shaped 1 Gbit/s veth link (root, netns) and on loopback", func(fs *flag.FlagSet) func(context.Context, int) (*report.Report, error) {
		var cfg bench.LinkConfig
		workloads := fs.String("workloads", "num20,str20", "workloads to fetch")
		rows := fs.String("rows", "1M", "rows per fetch")
		comps := fs.String("compressions", "none,lz4,zstd,auto", "compressions the client asks for")
		fs.StringVar(&cfg.Rate, "rate", "1gbit", "tc tbf rate of each direction")
		fs.StringVar(&cfg.Burst, "burst", "1mb", "tc tbf burst")
		fs.StringVar(&cfg.Latency, "latency", "10ms", "tc tbf latency (queue bound)")
		fs.StringVar(&cfg.Subnet, "subnet", "10.200.0", "first three octets of the /30 inside the namespaces")
		fs.BoolVar(&cfg.SkipLoopback, "skip-loopback", false, "skip the loopback table")
		fs.BoolVar(&cfg.SkipLink, "skip-link", false, "skip the shaped link (no root needed)")
		return func(ctx context.Context, reps int) (*report.Report, error) {
			ws, err := workload.Parse(*workloads)
			if err != nil {
				return nil, usagef("%v", err)
			}
			ns, err := bench.ParseSizes(*rows)
			if err != nil || len(ns) != 1 {
				return nil, usagef("bad --rows %q: one size, e.g. 1M", *rows)
			}
			for _, c := range strings.Split(*comps, ",") {
				if !flightsql.ValidCompression(c) {
					return nil, usagef("unknown compression %q: use none, lz4, zstd or auto", c)
				}
				cfg.Compressions = append(cfg.Compressions, strings.TrimSpace(c))
			}
			bin, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("find the quiver binary: %w", err)
			}
			cfg.Bin, cfg.Workloads, cfg.Rows, cfg.Reps = bin, ws, ns[0], reps
			rep, err := bench.Link(ctx, cfg)
			if errors.Is(err, bench.ErrLinkUnavailable) {
				fmt.Fprintf(stderr, "quiver bench link: skipping the shaped link: %v\n", err)
				cfg.SkipLink = true
				if cfg.SkipLoopback {
					return nil, err
				}
				return bench.Link(ctx, cfg)
			}
			return rep, err
		}
	}})

	// `quiver bench link-client` is the link suite's client, run as a
	// subprocess (inside a network namespace); it is not a suite, so it
	// is not listed. It wraps the bench command registered in bench.go.
	b, ok := commands["bench"]
	if !ok {
		panic("bench_link.go: the bench command must be registered first (bench.go)")
	}
	register("bench", b.summary, func() command { return linkClientOr{b.new()} })
}

// linkClientOr runs `bench link-client`, and any other suite as usual.
type linkClientOr struct{ command }

func (c linkClientOr) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "link-client" {
		return runLinkClient(ctx, args[1:])
	}
	return c.command.Run(ctx, args)
}

// runLinkClient does one of: time a fetch (--query), serve incompressible
// bytes over TCP (--tcp-serve), time receiving them (--tcp-recv). Results
// are printed on stdout as a LINKFETCH JSON line.
func runLinkClient(ctx context.Context, args []string) error {
	fs := newFlagSet("bench link-client")
	var cf clientFlags
	cf.register(fs)
	query := fs.String("query", "", "SQL to fetch and time")
	comp := fs.String("compression", "", "compression to ask for: none, lz4, zstd or auto")
	tcpServe := fs.String("tcp-serve", "", "serve raw TCP bytes on HOST:PORT until terminated")
	tcpRecv := fs.String("tcp-recv", "", "time receiving --bytes from a --tcp-serve at HOST:PORT")
	n := fs.Int64("bytes", 0, "bytes to receive with --tcp-recv")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	var f bench.LinkFetch
	switch {
	case *tcpServe != "":
		return bench.ServeTCPSource(ctx, *tcpServe, stderr)
	case *tcpRecv != "":
		if f, err = bench.RecvTCP(*tcpRecv, *n); err != nil {
			return err
		}
	case *query != "":
		cfg, err := cf.config()
		if err != nil {
			return err
		}
		cfg.Compression = *comp
		if f, err = bench.RunLinkFetch(ctx, cfg, *query); err != nil {
			return err
		}
	default:
		return usagef("give --query, --tcp-serve or --tcp-recv")
	}
	return bench.PrintLinkFetch(stdout, f)
}
