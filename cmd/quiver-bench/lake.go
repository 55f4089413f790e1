package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/quiverdata/quiver/bench"
	"github.com/quiverdata/quiver/bench/report"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/lake"
)

func init() {
	registerSuite("lake", suite{"Kafka → Iceberg on a local S3 store, against the Kafka → DuckDB pipeline alone", func(fs *flag.FlagSet) func(context.Context, env) (*report.Report, error) {
		var cfg bench.LakeConfig
		fs.IntVar(&cfg.Messages, "messages", 1_000_000, "messages in the topic")
		partitions := fs.Int("partitions", 4, "topic partitions")
		rotateMB := fs.Int("rotate-mb", 4, "the lake run seals a segment (its streamed Parquet file and its DuckDB file) and commits it to the lake at this size, in MiB (1M messages make about 2 MiB of Parquet)")
		fs.IntVar(&cfg.Decoders, "decoders", 0, "decoder goroutines (0: quiver ingest's default, one per CPU)")
		fs.IntVar(&cfg.Inserters, "inserters", 0, "DuckDB insert connections (0: quiver ingest's default)")
		fetchPartMB := fs.Int("fetch-partition-mb", 0, "most one fetch brings of one partition, in MB (0: quiver ingest's default)")
		fetchMaxMB := fs.Int("fetch-max-mb", 50, "largest Kafka fetch response in MB, as quiver ingest's flag")
		s3 := fs.String("s3", "", "endpoint URL of a running S3-compatible store; the bench writes under s3://BUCKET/bench-<random> and leaves it there (default: start SeaweedFS with scripts/seaweedfs.sh, stop it and remove its data at the end)")
		region := fs.String("s3-region", "", "S3 region, with --s3 (env AWS_REGION or AWS_DEFAULT_REGION)")
		accessKey := fs.String("s3-access-key", "", "S3 access key id, with --s3 (env AWS_ACCESS_KEY_ID)")
		secretKey := fs.String("s3-secret-key", "", "S3 secret access key, with --s3 (env AWS_SECRET_ACCESS_KEY)")
		cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole suite (set-up and all runs) to this file")
		verbose := fs.Bool("verbose", false, "log the pipeline's rotations and lake commits to stderr")
		fs.StringVar(&cfg.Bucket, "bucket", "quiver-bench", "bucket of the warehouse, s3://BUCKET/bench-<random> (with --s3 it must exist)")
		return func(ctx context.Context, e env) (*report.Report, error) {
			if cfg.Messages < 1 || *partitions < 1 || *rotateMB < 1 {
				return nil, cli.Usagef("--messages, --partitions and --rotate-mb must be positive")
			}
			if cfg.Decoders < 0 || cfg.Inserters < 0 || *fetchPartMB < 0 || *fetchMaxMB < 0 {
				return nil, cli.Usagef("--decoders, --inserters, --fetch-partition-mb and --fetch-max-mb must not be negative")
			}
			if cfg.Bucket == "" {
				return nil, cli.Usagef("--bucket is empty")
			}
			if *s3 == "" && (*region != "" || *accessKey != "" || *secretKey != "") {
				return nil, cli.Usagef("--s3-region, --s3-access-key and --s3-secret-key go with --s3")
			}
			cfg.FetchPartitionBytes = int32(min(*fetchPartMB, 1024)) << 20
			cfg.FetchMaxBytes = int32(min(*fetchMaxMB, 1024)) << 20
			cfg.Partitions = int32(*partitions)
			cfg.RotateBytes = int64(*rotateMB) << 20
			cfg.Reps = e.reps
			if *verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			if *cpuProfile != "" {
				f, err := os.Create(*cpuProfile)
				if err != nil {
					return nil, err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return nil, err
				}
				defer pprof.StopCPUProfile()
			}
			if *s3 != "" {
				u, err := url.Parse(*s3)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return nil, cli.Usagef("--s3 %q: give the endpoint URL, like http://127.0.0.1:8333", *s3)
				}
				cfg.S3 = lake.S3Config{Endpoint: *s3, Region: *region, PathStyle: true, AccessKeyID: *accessKey, SecretAccessKey: *secretKey}
				cfg.Store = "S3 at " + u.Host
				return bench.Lake(ctx, cfg)
			}
			sw, err := startBenchSeaweed(cfg.Bucket)
			if err != nil {
				return nil, err
			}
			defer sw.stop()
			cfg.S3 = lake.S3Config{Endpoint: sw.s3, Region: sw.region, PathStyle: true, AccessKeyID: sw.accessKey, SecretAccessKey: sw.secretKey}
			cfg.Store = "SeaweedFS at " + strings.TrimPrefix(sw.s3, "http://")
			cfg.StorePID = sw.pid
			return bench.Lake(ctx, cfg)
		}
	}})
}

// benchSeaweed is a SeaweedFS started by scripts/seaweedfs.sh for the
// bench, with its data in a temporary directory.
type benchSeaweed struct {
	script, dir                      string
	s3, region, accessKey, secretKey string
	pid                              int
}

// startBenchSeaweed starts SeaweedFS on free loopback ports with bucket
// created. It needs the script (beside the working directory or the
// binary) and the SeaweedFS binary `make s3` builds.
func startBenchSeaweed(bucket string) (*benchSeaweed, error) {
	script, err := findSeaweedScript()
	if err != nil {
		return nil, err
	}
	if err := exec.Command("bash", script, "path").Run(); err != nil {
		return nil, errors.New("SeaweedFS is not built: run `make s3` (once; it takes several minutes), or pass --s3 ENDPOINT of a running S3 store")
	}
	dir, err := os.MkdirTemp("", "quiver-bench-s3-")
	if err != nil {
		return nil, err
	}
	sw := &benchSeaweed{script: script, dir: dir}
	cmd := exec.Command("bash", script, "start", dir, "0", "0")
	// Only the bucket reaches SeaweedFS from here; the script gives it
	// its own key pair.
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "WEED_") || strings.HasPrefix(name, "S3_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "S3_BUCKET="+bucket)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		sw.stop()
		return nil, fmt.Errorf("start SeaweedFS: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	for _, f := range strings.Fields(string(out)) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "S3":
			sw.s3 = v
		case "REGION":
			sw.region = v
		case "ACCESS_KEY":
			sw.accessKey = v
		case "SECRET_KEY":
			sw.secretKey = v
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
		sw.pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if sw.s3 == "" {
		sw.stop()
		return nil, fmt.Errorf("start SeaweedFS: the script printed no S3 endpoint: %q", out)
	}
	return sw, nil
}

// stop stops SeaweedFS and removes its data.
func (s *benchSeaweed) stop() {
	if err := exec.Command("bash", s.script, "stop", s.dir).Run(); err != nil {
		fmt.Fprintf(os.Stderr, "quiver: stop SeaweedFS: %v\n", err)
	}
	os.RemoveAll(s.dir)
}

// findSeaweedScript looks for scripts/seaweedfs.sh in the working
// directory and its parents, then beside the binary and its parent (the
// repository of bin/quiver).
func findSeaweedScript() (string, error) {
	const rel = "scripts/seaweedfs.sh"
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dirs = append(dirs, filepath.Dir(exe), filepath.Dir(filepath.Dir(exe)))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, filepath.FromSlash(rel))
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("cannot find %s in the working directory or beside the binary: run from the repository (after `make s3`), or pass --s3 ENDPOINT of a running S3 store", rel)
}
