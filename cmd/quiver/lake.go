package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/lake"
)

func init() {
	register("lake", "look after an Iceberg lake: snapshots, gc, compact, expire-snapshots", func() command { return &lakeCmd{} })
}

type lakeCmd struct{}

// lakeSubcommands are quiver lake's verbs.
var lakeSubcommands = map[string]func(ctx context.Context, std cli.Stdio, args []string) error{
	"snapshots":        lakeSnapshots,
	"gc":               lakeGC,
	"compact":          lakeCompact,
	"expire-snapshots": lakeExpireSnapshots,
}

func (lakeCmd) Run(ctx context.Context, std cli.Stdio, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return usagef("usage: quiver lake snapshots|gc|compact|expire-snapshots --lake URI [--catalog URI] [--namespace NS] --table T")
	}
	run, ok := lakeSubcommands[args[0]]
	if !ok {
		return usagef("unknown lake command %q: use snapshots, gc, compact or expire-snapshots", args[0])
	}
	return run(ctx, std, args[1:])
}

// reference lists the operations' flags for the CLI reference.
func (lakeCmd) reference() []referencePage {
	var pages []referencePage
	for _, name := range slices.Sorted(maps.Keys(lakeSubcommands)) {
		pages = append(pages, referencePage{title: "lake " + name, args: []string{name}})
	}
	return pages
}

// openLakeTable parses the common flags and loads the table.
func openLakeTable(ctx context.Context, std cli.Stdio, name string, args []string, extra func(fs *flag.FlagSet)) (*lake.Lake, *lake.Table, error) {
	fs := newFlagSet("lake " + name)
	var lf lakeFlags
	lf.register(fs)
	tableName := fs.String("table", "", "the table, in --namespace")
	if extra != nil {
		extra(fs)
	}
	pos, err := parseFlags(std, fs, args)
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
	lk, err := lake.Open(ctx, cfg)
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
func lakeSnapshots(ctx context.Context, std cli.Stdio, args []string) error {
	lk, t, err := openLakeTable(ctx, std, "snapshots", args, nil)
	if err != nil {
		return err
	}
	defer lk.Close()
	tbl, err := t.Iceberg(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Err, "table %s, metadata %s\n", strings.Join(tbl.Identifier(), "."), tbl.MetadataLocation())
	snaps := tbl.Metadata().Snapshots()
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].SequenceNumber < snaps[j].SequenceNumber })
	w := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "snapshot\tsequence\ttime (UTC)\toperation\tadded rows\ttotal rows\tadded files\tkafka offsets")
	for _, s := range snaps {
		op, props := "", map[string]string{}
		if s.Summary != nil {
			op, props = string(s.Summary.Operation), s.Summary.Properties
		}
		var offsets []string
		for k, v := range props {
			if key, ok := strings.CutPrefix(k, lake.OffsetsKeyPrefix); ok {
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
func lakeGC(ctx context.Context, std cli.Stdio, args []string) error {
	var olderThan time.Duration
	var dryRun bool
	lk, t, err := openLakeTable(ctx, std, "gc", args, func(fs *flag.FlagSet) {
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
		fmt.Fprintf(std.Out, "%s\t%d\n", o.Path, o.Size)
	}
	if dryRun {
		fmt.Fprintf(std.Err, "%d orphan files, %d bytes (dry run: nothing deleted)\n", len(orphans.Files), orphans.TotalBytes)
		return nil
	}
	deleted, err := orphans.Delete(ctx)
	fmt.Fprintf(std.Err, "deleted %d of %d orphan files (%d bytes)\n", len(deleted), len(orphans.Files), orphans.TotalBytes)
	if err != nil {
		return fmt.Errorf("delete orphans: %w", err)
	}
	return nil
}

// lakeCompact rewrites the table's small data files into large ones, per
// partition, in one replace snapshot that keeps the Kafka offsets.
func lakeCompact(ctx context.Context, std cli.Stdio, args []string) error {
	targetMB, minFiles := 128, 2
	lk, t, err := openLakeTable(ctx, std, "compact", args, func(fs *flag.FlagSet) {
		fs.Var(intAtLeast{&targetMB, 1}, "target-mb", "size of the files written, in MiB; smaller files are rewritten")
		fs.Var(intAtLeast{&minFiles, 1}, "min-files", "rewrite a partition only if it has at least this many small files")
	})
	if err != nil {
		return err
	}
	defer lk.Close()
	res, err := t.Compact(ctx, lake.CompactOptions{TargetFileBytes: int64(targetMB) << 20, MinInputFiles: minFiles})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	fmt.Fprintf(std.Out, "data files before: %d (%d bytes)\n", res.FilesBefore, res.BytesBefore)
	fmt.Fprintf(std.Out, "data files after:  %d (%d bytes)\n", res.FilesAfter, res.BytesAfter)
	if res.SnapshotID == 0 {
		fmt.Fprintf(std.Out, "nothing to compact: no partition has %d or more files under %d MiB\n", minFiles, targetMB)
		return nil
	}
	fmt.Fprintf(std.Out, "rewrote %d files (%d bytes, %d rows) into %d files (%d bytes) in %d groups: snapshot %d\n",
		res.RewrittenFiles, res.RewrittenBytes, res.Rows, res.AddedFiles, res.AddedBytes, res.Groups, res.SnapshotID)
	return nil
}

// lakeExpireSnapshots removes old snapshots, and the files only they
// reference, keeping the newest ones and the Kafka offsets readable.
func lakeExpireSnapshots(ctx context.Context, std cli.Stdio, args []string) error {
	olderThan, retainLast := 24*time.Hour, 10
	lk, t, err := openLakeTable(ctx, std, "expire-snapshots", args, func(fs *flag.FlagSet) {
		fs.Var(durationAtLeast{&olderThan, 0}, "older-than", "expire snapshots older than this")
		fs.Var(intAtLeast{&retainLast, 1}, "retain-last", "always keep this many of the newest snapshots, the current one included")
	})
	if err != nil {
		return err
	}
	defer lk.Close()
	res, err := t.ExpireSnapshots(ctx, olderThan, retainLast)
	if err == nil || len(res.Expired) > 0 {
		// On an error after the commit, the expiry stands.
		fmt.Fprintf(std.Out, "expired %d snapshots, %d left; deleted %d files\n", len(res.Expired), res.Retained, len(res.DeletedFiles))
	}
	if err != nil {
		return fmt.Errorf("expire snapshots: %w", err)
	}
	return nil
}

// intAtLeast is an int flag that refuses values below min, so that a bad
// value is a usage error before the lake is opened.
type intAtLeast struct {
	v   *int
	min int
}

func (f intAtLeast) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.Itoa(*f.v)
}

func (f intAtLeast) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	if n < f.min {
		return fmt.Errorf("%d is below the minimum of %d", n, f.min)
	}
	*f.v = n
	return nil
}

// durationAtLeast is a duration flag that refuses values below min.
type durationAtLeast struct {
	v   *time.Duration
	min time.Duration
}

func (f durationAtLeast) String() string {
	if f.v == nil {
		return ""
	}
	return f.v.String()
}

func (f durationAtLeast) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 24h or 90m", s)
	}
	if d < f.min {
		return fmt.Errorf("%v is below the minimum of %v", d, f.min)
	}
	*f.v = d
	return nil
}
