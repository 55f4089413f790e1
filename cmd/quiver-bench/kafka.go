package main

import (
	"context"
	"flag"
	"strings"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	registerSuite("kafka", suite{"the Kafka pipeline stage by stage and whole, against DuckDB's native insert", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg bench.KafkaConfig
		fs.IntVar(&cfg.Messages, "messages", 1_000_000, "messages in the topic")
		partitions := fs.Int("partitions", 4, "topic partitions")
		fs.BoolVar(&cfg.Flat, "flat", true, "the flat 14-field message (false: the nested BidRequest)")
		brokers := fs.String("brokers", "", "an external Kafka HOST:PORT[,..] (default: an in-process cluster)")
		fs.IntVar(&cfg.Decoders, "decoders", 0, "decoder goroutines (0: quiver ingest's default, one per CPU)")
		fs.IntVar(&cfg.Inserters, "inserters", 0, "DuckDB insert connections (0: quiver ingest's default)")
		fetchPartMB := fs.Int("fetch-partition-mb", 0, "most one fetch brings of one partition, in MB (0: quiver ingest's default)")
		fetchMaxMB := fs.Int("fetch-max-mb", 50, "largest Kafka fetch response in MB, as quiver ingest's flag")
		return func(ctx context.Context, e env) (*report.Report, error) {
			if cfg.Messages < 1 || *partitions < 1 {
				return nil, cli.Usagef("--messages and --partitions must be positive")
			}
			if cfg.Decoders < 0 || cfg.Inserters < 0 || *fetchPartMB < 0 || *fetchMaxMB < 0 {
				return nil, cli.Usagef("--decoders, --inserters, --fetch-partition-mb and --fetch-max-mb must not be negative")
			}
			cfg.FetchPartitionBytes = int32(min(*fetchPartMB, 1024)) << 20
			cfg.FetchMaxBytes = int32(min(*fetchMaxMB, 1024)) << 20
			cfg.Partitions = int32(*partitions)
			if *brokers != "" {
				cfg.Brokers = strings.Split(*brokers, ",")
			}
			cfg.Reps = e.reps
			return bench.Kafka(ctx, cfg)
		}
	}})
}
