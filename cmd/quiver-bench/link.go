package main

import (
	"github.com/quiverdata/quiver/client"
)

import (
	"io"

	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/internal/workload"
)

func init() {
	registerSuite("link", suite{"DoGet compressed against uncompressed over a shaped 1 Gbit/s veth link (root, netns) and on loopback", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
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
		return func(ctx context.Context, e env) (*report.Report, error) {
			ws, err := workload.Parse(*workloads)
			if err != nil {
				return nil, cli.Usagef("%v", err)
			}
			ns, err := bench.ParseSizes(*rows)
			if err != nil || len(ns) != 1 {
				return nil, cli.Usagef("bad --rows %q: one size, e.g. 1M", *rows)
			}
			for _, c := range strings.Split(*comps, ",") {
				if !flightsql.ValidCompression(c) {
					return nil, cli.Usagef("unknown compression %q: use none, lz4, zstd or auto", c)
				}
				cfg.Compressions = append(cfg.Compressions, strings.TrimSpace(c))
			}
			if cfg.Bin, err = e.quiver(); err != nil {
				return nil, err
			}
			if cfg.BenchBin, err = e.self(); err != nil {
				return nil, err
			}
			cfg.Workloads, cfg.Rows, cfg.Reps = ws, ns[0], e.reps
			rep, err := bench.Link(ctx, cfg)
			if errors.Is(err, bench.ErrLinkUnavailable) {
				fmt.Fprintf(e.stderr, "quiver-bench link: skipping the shaped link: %v\n", err)
				cfg.SkipLink = true
				if cfg.SkipLoopback {
					return nil, err
				}
				return bench.Link(ctx, cfg)
			}
			return rep, err
		}
	}})
}

// linkClient is the link suite's client, `quiver-bench link-client`, run
// as a subprocess (inside a network namespace). It is not a suite, so it
// is not listed.
const linkClient = "link-client"

// runLinkClient does one of: time a fetch (--query), serve incompressible
// bytes over TCP (--tcp-serve), time receiving them (--tcp-recv). Results
// are printed on stdout as a LINKFETCH JSON line.
func runLinkClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("quiver-bench " + linkClient)
	server := fs.String("server", "", "Flight SQL server HOST:PORT to fetch from")
	user := fs.String("user", "", "user to authenticate as")
	password := fs.String("password", "", "password of --user")
	query := fs.String("query", "", "SQL to fetch and time")
	comp := fs.String("compression", "", "compression to ask for: none, lz4, zstd or auto")
	tcpServe := fs.String("tcp-serve", "", "serve raw TCP bytes on HOST:PORT until terminated")
	tcpRecv := fs.String("tcp-recv", "", "time receiving --bytes from a --tcp-serve at HOST:PORT")
	n := fs.Int64("bytes", 0, "bytes to receive with --tcp-recv")
	pos, err := cli.ParseFlags(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usagef("unexpected argument %q", pos[0])
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
		if *server == "" {
			return cli.Usagef("--query needs --server")
		}
		cfg := client.Config{Addr: *server, User: *user, Password: *password, Compression: *comp}
		if f, err = bench.RunLinkFetch(ctx, cfg, *query); err != nil {
			return err
		}
	default:
		return cli.Usagef("give --query, --tcp-serve or --tcp-recv")
	}
	return bench.PrintLinkFetch(stdout, f)
}
