package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/ingest"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/lake"
)

func init() {
	registerSuite("freshness", suite{"produce → visible: messages at a sustained rate, timed until a polling reader sees them (inside quiver serve, or through the lake)", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg bench.FreshnessConfig
		fs.StringVar(&cfg.Mode, "mode", bench.FreshServe, "serve: ingest inside quiver serve, read over Flight; lake: a lake pipeline with its commit interval and compactor, read through quiver serve --lake (and pyiceberg with --python)")
		fs.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "how long messages are produced")
		fs.IntVar(&cfg.Rate, "rate", 100_000, "messages produced per second (the flat message of bench kafka)")
		partitions := fs.Int("partitions", 4, "topic partitions")
		brokers := fs.String("brokers", "", "HOST:PORT of a running Kafka (default: an in-process one)")
		fs.DurationVar(&cfg.Poll, "poll", 0, "how often each reader looks (default 100ms for serve, 1s for the lake)")
		fs.IntVar(&cfg.Every, "every", 100, "time one message in this many")
		fs.DurationVar(&cfg.FlushInterval, "flush-interval", 250*time.Millisecond, "the pipeline cuts a batch that waited this long")
		fs.DurationVar(&cfg.CommitInterval, "commit-interval", ingest.DefaultCommitInterval, "lake: the pipeline's --commit-interval")
		fs.DurationVar(&cfg.CompactInterval, "compact-interval", ingest.DefaultCompactInterval, "lake: the pipeline's --compact-interval")
		targetMB := fs.Int64("target-file-mb", lake.DefaultCompactTargetBytes>>20, "lake: the compactor's --target-file-mb")
		s3 := fs.Bool("s3", false, "lake: put the lake on SeaweedFS (started with scripts/seaweedfs.sh) instead of a local directory")
		fs.IntVar(&cfg.QueryClients, "query-clients", 16, "serve: clients running point queries and 1M-row fetches meanwhile (0: none)")
		fs.StringVar(&cfg.Python, "python", os.Getenv("QUIVER_PYTHON"), "lake: a Python with pyiceberg that reads the lake too (env QUIVER_PYTHON)")
		verbose := fs.Bool("verbose", false, "log the pipeline to stderr")
		return func(ctx context.Context, _ env) (*report.Report, error) {
			if cfg.Duration <= 0 || cfg.Rate < 1 || *partitions < 1 || cfg.Every < 1 || cfg.QueryClients < 0 || *targetMB < 1 {
				return nil, cli.Usagef("--duration, --rate, --partitions, --every and --target-file-mb must be positive, --query-clients not negative")
			}
			if cfg.Mode != bench.FreshServe && cfg.Mode != bench.FreshLake {
				return nil, cli.Usagef("--mode %q: use serve or lake", cfg.Mode)
			}
			cfg.Partitions = int32(*partitions)
			cfg.TargetFileBytes = *targetMB << 20
			if *brokers != "" {
				cfg.Brokers = strings.Split(*brokers, ",")
			}
			if cfg.Mode == bench.FreshServe {
				cfg.Python = ""
			}
			cfg.Progress = os.Stderr
			if *verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			if *s3 {
				if cfg.Mode != bench.FreshLake {
					return nil, cli.Usagef("--s3 goes with --mode lake")
				}
				cfg.Bucket = "quiver-bench"
				sw, err := startBenchSeaweed(cfg.Bucket)
				if err != nil {
					return nil, err
				}
				defer sw.stop()
				cfg.S3 = &lake.S3Config{Endpoint: sw.s3, Region: sw.region, PathStyle: true, AccessKeyID: sw.accessKey, SecretAccessKey: sw.secretKey}
				cfg.Python = "" // pyiceberg reads the local lake only
			}
			return bench.Freshness(ctx, cfg)
		}
	}})
}
