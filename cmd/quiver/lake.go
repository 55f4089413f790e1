package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quiverdata/quiver/lake/iceberg"
)

func init() {
	register("lake", "look after an Iceberg lake: snapshots, gc", func() command { return &lakeCmd{} })
}

type lakeCmd struct{}

// lakeSubcommands are quiver lake's verbs.
var lakeSubcommands = map[string]func(ctx context.Context, args []string) error{
	"snapshots": lakeSnapshots,
	"gc":        lakeGC,
}

func (lakeCmd) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return usagef("usage: quiver lake snapshots|gc --lake URI [--catalog URI] [--namespace NS] --table T")
	}
	run, ok := lakeSubcommands[args[0]]
	if !ok {
		return usagef("unknown lake command %q: use snapshots or gc", args[0])
	}
	return run(ctx, args[1:])
}

// openLakeTable parses the common flags and loads the table.
func openLakeTable(ctx context.Context, name string, args []string, extra func(fs *flag.FlagSet)) (*iceberg.Lake, *iceberg.Table, error) {
	fs := newFlagSet("lake " + name)
	var lf lakeFlags
	lf.register(fs)
	tableName := fs.String("table", "", "the table, in --namespace")
	if extra != nil {
		extra(fs)
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) > 0 {
		return nil, nil, usagef("unexpected argument %q", pos[0])
	}
	if *tableName == "" {
		return nil, nil, usagef("--table is required")
	}
	cfg, err := lf.config()
	if err != nil {
		return nil, nil, err
	}
	lk, err := iceberg.Open(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open lake: %w", err)
	}
	t, err := lk.Table(ctx, lf.namespace, *tableName, nil, nil)
	if err != nil {
		lk.Close()
		return nil, nil, err
	}
	return lk, t, nil
}

// lakeSnapshots lists the table's snapshots, oldest first, with the Kafka
// offsets each one recorded.
func lakeSnapshots(ctx context.Context, args []string) error {
	lk, t, err := openLakeTable(ctx, "snapshots", args, nil)
	if err != nil {
		return err
	}
	defer lk.Close()
	tbl, err := t.Iceberg(ctx)
	if err != nil {
		return err
	}
	snaps := tbl.Metadata().Snapshots()
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].SequenceNumber < snaps[j].SequenceNumber })
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "snapshot\tsequence\ttime (UTC)\toperation\tadded rows\ttotal rows\tadded files\tkafka offsets")
	for _, s := range snaps {
		op, props := "", map[string]string{}
		if s.Summary != nil {
			op, props = string(s.Summary.Operation), s.Summary.Properties
		}
		var offsets []string
		for k, v := range props {
			if key, ok := strings.CutPrefix(k, iceberg.OffsetsKeyPrefix); ok {
				offsets = append(offsets, key+"="+v)
			}
		}
		sort.Strings(offsets)
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.SnapshotID, s.SequenceNumber,
			time.UnixMilli(s.TimestampMs).UTC().Format(time.DateTime), op,
			orDash(props["added-records"]), orDash(props["total-records"]), orDash(props["added-data-files"]),
			orDash(strings.Join(offsets, " ")))
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// lakeGC deletes data files that no snapshot references (those of commits
// that failed or were fenced), older than --older-than.
func lakeGC(ctx context.Context, args []string) error {
	var olderThan time.Duration
	var dryRun bool
	lk, t, err := openLakeTable(ctx, "gc", args, func(fs *flag.FlagSet) {
		fs.DurationVar(&olderThan, "older-than", 24*time.Hour, "only files last written longer ago than this (a commit in progress writes younger ones)")
		fs.BoolVar(&dryRun, "dry-run", false, "list the orphans without deleting them")
	})
	if err != nil {
		return err
	}
	defer lk.Close()
	orphans, err := t.Orphans(ctx, olderThan)
	if err != nil {
		return fmt.Errorf("list orphans: %w", err)
	}
	for _, o := range orphans.Files {
		fmt.Fprintf(stdout, "%s\t%d\n", o.Path, o.Size)
	}
	if dryRun {
		fmt.Fprintf(stderr, "%d orphan files, %d bytes (dry run: nothing deleted)\n", len(orphans.Files), orphans.TotalBytes)
		return nil
	}
	deleted, err := orphans.Delete(ctx)
	fmt.Fprintf(stderr, "deleted %d of %d orphan files (%d bytes)\n", len(deleted), len(orphans.Files), orphans.TotalBytes)
	if err != nil {
		return fmt.Errorf("delete orphans: %w", err)
	}
	return nil
}
