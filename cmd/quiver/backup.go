package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/quiverdata/quiver/backup"
	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/cli"
	"github.com/quiverdata/quiver/lake"
	"github.com/quiverdata/quiver/server"
)

func init() {
	register("backup", "take an online backup of a running server's database (--to), or list and verify backups", func() command { return &backupCmd{} })
}

// backupCmd is quiver backup: with --to it asks the server at --server
// for a backup (the quiver.backup Flight action, admin only); list and
// verify read a backup location directly.
type backupCmd struct{}

const backupUsage = `usage:
  quiver backup --to URI [--server HOST:PORT --user ADMIN]   take a backup of a running server
  quiver backup list --from URI                              list the complete backups
  quiver backup verify --from URI [--id ID]                  restore one into a scratch database and check it
URI is file:///dir (on the server's file system, for --to) or s3://bucket/prefix.`

func (*backupCmd) reference() []referencePage {
	return []referencePage{
		{title: "backup"},
		{title: "backup list", args: []string{"list"}},
		{title: "backup verify", args: []string{"verify"}},
	}
}

func (c *backupCmd) Run(ctx context.Context, std cli.Stdio, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(std.Err, backupUsage)
		return usagef("give --to URI to take a backup, or list or verify")
	}
	if len(args) > 0 {
		switch args[0] {
		case "list":
			return backupList(ctx, std, args[1:])
		case "verify":
			return backupVerify(ctx, std, args[1:])
		}
	}
	fs := newFlagSet("backup")
	to := fs.String("to", "", "where the server stores the backup: file:///dir on the server's file system, or s3://bucket/prefix (the server's S3 settings)")
	var cf clientFlags
	cf.register(fs)
	pos, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unknown operation %q: use list or verify, or --to URI to take a backup", pos[0])
	}
	if err := checkBackupURI("--to", *to); err != nil {
		return err
	}
	if err := askLoginPassword(std, &cf); err != nil {
		return err
	}
	m, err := backupAction(ctx, &cf, *to)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(std.Out, "backup %s taken to %s: %d tables, %s rows, %s in %s (%.1f MB/s)\n",
		m.ID, strings.TrimRight(*to, "/"), len(m.Tables), humanCount(m.Rows()), humanBytes(m.Size()),
		m.Took.Round(time.Millisecond), float64(m.Size())/1e6/m.Took.Seconds())
	return err
}

// backupAction asks the server for a backup to uri.
func backupAction(ctx context.Context, cf *clientFlags, uri string) (*backup.Manifest, error) {
	cfg, err := cf.config()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return nil, cf.serverError("connect", err)
	}
	defer c.Close()
	body, err := json.Marshal(backup.Request{To: uri})
	if err != nil {
		return nil, err
	}
	stream, err := c.SQL().Client.DoAction(c.Context(ctx), &flight.Action{Type: backup.ActionType, Body: body})
	if err != nil {
		return nil, cf.serverError("backup", err)
	}
	res, err := stream.Recv()
	if err != nil {
		return nil, cf.serverError("backup", err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	var m backup.Manifest
	if err := json.Unmarshal(res.GetBody(), &m); err != nil {
		return nil, fmt.Errorf("backup: the server's reply: %w", err)
	}
	return &m, nil
}

// locationFlags name a backup location to read: --from and the S3
// settings, whose keys come from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY.
type locationFlags struct {
	from                 string
	s3Endpoint, s3Region string
	s3PathStyle          bool
}

func (f *locationFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.from, "from", "", "backup location: file:///dir or s3://bucket/prefix")
	fs.StringVar(&f.s3Endpoint, "s3-endpoint", "", "S3-compatible endpoint URL (env AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL; empty: AWS)")
	fs.StringVar(&f.s3Region, "s3-region", "", "S3 region (env AWS_REGION or AWS_DEFAULT_REGION)")
	fs.BoolVar(&f.s3PathStyle, "s3-path-style", false, "path-style S3 addressing (most S3-compatible stores need it)")
}

// open checks the flags and opens the location.
func (f *locationFlags) open(ctx context.Context) (*backup.Store, error) {
	if err := checkBackupURI("--from", f.from); err != nil {
		return nil, err
	}
	return backup.Open(ctx, f.from, lake.S3Config{Endpoint: f.s3Endpoint, Region: f.s3Region, PathStyle: f.s3PathStyle})
}

func checkBackupURI(flagName, uri string) error {
	if uri == "" {
		return usagef("%s is required: file:///dir or s3://bucket/prefix", flagName)
	}
	if !strings.HasPrefix(uri, "file:///") && !strings.HasPrefix(uri, "s3://") {
		return usagef("%s %q: use file:///absolute/dir or s3://bucket/prefix", flagName, uri)
	}
	return nil
}

func backupList(ctx context.Context, std cli.Stdio, args []string) error {
	fs := newFlagSet("backup list")
	var lf locationFlags
	lf.register(fs)
	pos, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("backup list takes no arguments, got %q", pos[0])
	}
	st, err := lf.open(ctx)
	if err != nil {
		return err
	}
	all, incomplete, err := st.List(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTIME\tSIZE\tTABLES\tROWS")
	for _, m := range all {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", m.ID, m.Time.Format(time.RFC3339), humanBytes(m.Size()), len(m.Tables), humanCount(m.Rows()))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	ids := make([]string, 0, len(incomplete))
	for id := range incomplete {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(std.Err, "quiver backup: not listed: %v\n", incomplete[id])
	}
	return nil
}

func backupVerify(ctx context.Context, std cli.Stdio, args []string) error {
	fs := newFlagSet("backup verify")
	var lf locationFlags
	lf.register(fs)
	id := fs.String("id", "", "backup to verify (default: the newest complete one)")
	scratch := fs.String("scratch", "", "directory to restore into while verifying (default: the system's temporary directory)")
	pos, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("backup verify takes no arguments, got %q", pos[0])
	}
	st, err := lf.open(ctx)
	if err != nil {
		return err
	}
	m, err := st.Manifest(ctx, *id)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(*scratch, "quiver-verify-")
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	defer os.RemoveAll(dir)
	same, err := backup.Verify(ctx, st, m, dir)
	var ve *backup.VerifyError
	if errors.As(err, &ve) {
		for _, mm := range ve.Mismatches {
			fmt.Fprintf(std.Err, "quiver backup: %s: %s\n", ve.ID, mm)
		}
		return fmt.Errorf("backup %s failed verification: %d tables differ from its manifest", ve.ID, len(ve.Mismatches))
	}
	if err != nil {
		return err
	}
	what := "row counts and checksums"
	if !same {
		what = fmt.Sprintf("row counts (checksums skipped: taken by DuckDB %s)", m.DuckDB)
	}
	_, err = fmt.Fprintf(std.Out, "backup %s is sound: %d files match their SHA-256; %d tables, %s rows: %s match\n",
		m.ID, len(m.Files), len(m.Tables), humanCount(m.Rows()), what)
	return err
}

// humanBytes prints a size in bytes with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// checkBackupSchedule checks quiver serve's --backup-* flags.
func checkBackupSchedule(b server.BackupSchedule) error {
	if b.To == "" {
		return nil
	}
	if err := checkBackupURI("--backup-to", b.To); err != nil {
		return err
	}
	if b.Every <= 0 || b.Keep < 0 {
		return usagef("--backup-every must be positive and --backup-keep not negative")
	}
	return nil
}
