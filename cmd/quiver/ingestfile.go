package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/quiverdata/quiver/ingest/kafka"
	"github.com/quiverdata/quiver/server"
)

// An ingest file lists the Kafka pipelines quiver serve --ingest runs into
// the served database, one [[pipeline]] table each, whose keys are the
// flags of quiver ingest without their dashes:
//
//	[[pipeline]]
//	brokers = "127.0.0.1:9092"
//	topic = "events"
//	group = "quiver"
//	proto = "events.proto"        # relative to this file
//	message = "shop.Event"
//	table = "events"
//	flush-interval = "1s"
//
// Each table's keys are set, in order, on a fresh quiver ingest flag set,
// so a key is exactly a flag and a value exactly what the flag takes.

// servedExcluded are quiver ingest's flags that mean nothing for a
// pipeline inside the server, and why. Every other flag is a key.
var servedExcluded = map[string]string{
	"db":                "the pipeline writes into the served database (quiver serve --db)",
	"http":              "the server's console shows its pipelines (quiver serve --http)",
	"log-level":         "the server's log level applies (quiver serve --log-level)",
	"log-format":        "the server's log format applies (quiver serve --log-format)",
	"threads":           "the served database's setting applies (quiver serve --threads)",
	"memory-limit":      "the served database's setting applies (quiver serve --memory-limit, --memory)",
	"idle-exit":         "a pipeline inside the server runs until the server stops",
	"export-dir":        "the served database never rotates: run quiver ingest for Parquet exports",
	"rotate-mb":         "the served database never rotates",
	"rotate-age":        "the served database never rotates",
	"norm-partition-by": "it lays out exported files, which a pipeline inside the server does not write",
	"row-group-size":    "it sizes exported files; the lake's files inside the server are written by iceberg-go",
	"parquet-version":   "it shapes exported files; the lake's files inside the server are written by iceberg-go",
	"lake-max-backlog":  "a pipeline inside the server keeps its rows in the served database until the lake takes them: no backlog of files builds up",
}

// pathKeys are keys whose relative paths are read from the file's
// directory.
var pathKeys = map[string]bool{"proto": true, "import-path": true}

// ingestFileKeys returns the keys of a [[pipeline]] table: the flags of
// quiver ingest, less servedExcluded.
func ingestFileKeys() []string {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	newIngestOptions(fs)
	var keys []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := servedExcluded[f.Name]; !ok {
			keys = append(keys, f.Name)
		}
	})
	sort.Strings(keys)
	return keys
}

// filePipeline is one [[pipeline]] table: where it starts, and its
// options as set from its keys.
type filePipeline struct {
	name string // FILE:LINE of its [[pipeline]] header
	opts *ingestOptions
}

// readIngestFile parses an ingest file. A key that is not a flag, a key
// that means nothing inside the server, a value its flag refuses, and
// anything but [[pipeline]] tables are usage errors naming the file, the
// line and the key.
func readIngestFile(path string) ([]filePipeline, error) {
	out, err := readFlagFile("--ingest", path, nil)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, usagef("%s: no [[pipeline]] table: give one per Kafka pipeline", path)
	}
	return out, nil
}

// readFlagFile parses a TOML file of flag values (an ingest file, or a
// configuration file) and returns its [[pipeline]] tables. top, when not
// nil, takes each key before the first table, with its value as its
// flag's text and its line, and says what is wrong with it; nil refuses
// such keys. flagName names the flag that gave the file, for errors.
func readFlagFile(flagName, path string, top func(key, val string, line int) error) ([]filePipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("%s: %v", flagName, err)
	}
	dir := filepath.Dir(path)
	var p unstable.Parser
	p.Reset(data)
	var out []filePipeline
	var cur *filePipeline
	var fs *flag.FlagSet
	seen := map[string]bool{}
	lineOf := func(n *unstable.Node) int {
		if n.Raw.Length > 0 {
			return p.Shape(n.Raw).Start.Line
		}
		return lineOfData(&p, n.Data)
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Comment:
			continue
		case unstable.ArrayTable, unstable.Table:
			key := joinKey(e.Key())
			line := 0
			if it := e.Key(); it.Next() {
				line = lineOf(it.Node())
			}
			if e.Kind != unstable.ArrayTable || key != "pipeline" {
				return nil, usagef("%s:%d: unknown table [%s]: the file's tables are [[pipeline]] tables, one per Kafka pipeline", path, line, key)
			}
			fs = flag.NewFlagSet("ingest", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			out = append(out, filePipeline{name: fmt.Sprintf("%s:%d", path, line), opts: newIngestOptions(fs)})
			cur = &out[len(out)-1]
			cur.opts.served = true
			cur.opts.set = map[string]bool{}
			seen = map[string]bool{}
		case unstable.KeyValue:
			key := joinKey(e.Key())
			line := lineOf(e)
			if cur == nil && top != nil {
				val, err := tomlFlagValue(e.Value())
				if err == nil {
					err = top(key, val, line)
				}
				if err != nil {
					return nil, usagef("%s:%d: key %q: %v", path, line, key, err)
				}
				continue
			}
			if cur == nil {
				return nil, usagef("%s:%d: key %q is outside a [[pipeline]] table", path, line, key)
			}
			if why, ok := servedExcluded[key]; ok {
				return nil, usagef("%s:%d: key %q does not apply to a pipeline inside the server: %s", path, line, key, why)
			}
			if fs.Lookup(key) == nil {
				return nil, usagef("%s:%d: unknown key %q (the keys are quiver ingest's flags: %s)", path, line, key, strings.Join(ingestFileKeys(), ", "))
			}
			if seen[key] {
				return nil, usagef("%s:%d: key %q is given twice in this [[pipeline]]", path, line, key)
			}
			seen[key] = true
			val, err := tomlFlagValue(e.Value())
			if err != nil {
				return nil, usagef("%s:%d: key %q: %v", path, line, key, err)
			}
			if pathKeys[key] {
				val = relativeTo(dir, val)
			}
			if err := fs.Set(key, val); err != nil {
				kind, _ := flag.UnquoteUsage(fs.Lookup(key))
				if kind == "" {
					kind = "boolean"
				}
				return nil, usagef("%s:%d: key %q: invalid value %q: want a %s (%v)", path, line, key, val, kind, err)
			}
			cur.opts.set[key] = true
		}
	}
	if err := p.Error(); err != nil {
		line := 0
		var perr *unstable.ParserError
		if errors.As(err, &perr) && len(perr.Highlight) > 0 {
			line = lineOfData(&p, perr.Highlight)
		}
		return nil, usagef("%s:%d: %v", path, line, err)
	}
	return out, nil
}

// lineOfData is the line where b, a slice of the parser's input, starts
// (0 when it is not one, as a key with escapes is not).
func lineOfData(p *unstable.Parser, b []byte) (line int) {
	defer func() {
		if recover() != nil {
			line = 0
		}
	}()
	if len(b) == 0 {
		return 0
	}
	return p.Shape(p.Range(b)).Start.Line
}

// joinKey joins a dotted key.
func joinKey(it unstable.Iterator) string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

// tomlFlagValue is a TOML value as its flag's text: a string as it is,
// numbers and booleans as written, an array of strings joined by commas
// (brokers = ["a:9092", "b:9092"]).
func tomlFlagValue(v *unstable.Node) (string, error) {
	switch v.Kind {
	case unstable.String:
		return string(v.Data), nil
	case unstable.Integer, unstable.Float:
		return strings.ReplaceAll(string(v.Data), "_", ""), nil
	case unstable.Bool:
		return string(v.Data), nil
	case unstable.Array:
		var parts []string
		for it := v.Children(); it.Next(); {
			n := it.Node()
			if n.Kind != unstable.String {
				return "", errors.New("an array may hold strings only")
			}
			parts = append(parts, string(n.Data))
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("a %s is not a flag value: give a string, a number or a boolean", v.Kind)
}

// relativeTo resolves the relative paths of a comma-separated list from
// dir.
func relativeTo(dir, list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p != "" && !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

// ingestPipelines reads an ingest file and returns its pipelines for
// server.Config.Ingest, each checked against its Kafka cluster (the topic
// must exist), and what closes the lakes they opened once the server has
// stopped. Errors name the pipeline's file and line.
func ingestPipelines(ctx context.Context, path string, log *slog.Logger) (_ []server.IngestPipeline, closeAll func(), err error) {
	fps, err := readIngestFile(path)
	if err != nil {
		return nil, nil, err
	}
	return startPipelines(ctx, fps, log)
}

// startPipelines checks read pipelines against their Kafka clusters and
// returns them for server.Config.Ingest (see ingestPipelines).
func startPipelines(ctx context.Context, fps []filePipeline, log *slog.Logger) (_ []server.IngestPipeline, closeAll func(), err error) {
	closer := func() {
		for _, fp := range fps {
			fp.opts.close()
		}
	}
	defer func() {
		if err != nil {
			closer()
		}
	}()
	var out []server.IngestPipeline
	for _, fp := range fps {
		cfg, src, err := fp.opts.pipeline(ctx, log.With("pipeline", fp.name))
		if err != nil {
			var ue *usageError
			if errors.As(err, &ue) {
				return nil, nil, usagef("%s: pipeline: %s", fp.name, strings.ReplaceAll(ue.Error(), "--", ""))
			}
			return nil, nil, fmt.Errorf("%s: %w", fp.name, err)
		}
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err = src.Check(cctx)
		cancel()
		switch {
		case errors.Is(err, kafka.ErrUnknownTopic):
			return nil, nil, usagef("%s: pipeline: topic %q does not exist on %s", fp.name, *fp.opts.topic, *fp.opts.brokers)
		case err != nil:
			return nil, nil, fmt.Errorf("%s: %w (check the brokers key and that Kafka is up)", fp.name, err)
		}
		cfg.Logger = log.With("pipeline", fp.name)
		out = append(out, server.IngestPipeline{Name: fp.name, Config: cfg, Source: src})
	}
	return out, closer, nil
}
