package main

import (
	"context"
	"fmt"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/backup"
	"github.com/quiverdata/quiver/internal/cli"
)

func init() {
	register("restore", "restore a backup into a new database file, offline", func() command { return &restoreCmd{} })
}

// restoreCmd is quiver restore: it restores a backup's database into a
// new file, with its users file and token key beside it, where quiver
// serve looks for them.
type restoreCmd struct{}

func (c *restoreCmd) Run(ctx context.Context, std cli.Stdio, args []string) error {
	fs := newFlagSet("restore")
	var lf locationFlags
	lf.register(fs)
	id := fs.String("id", "", "backup to restore (default: the newest complete one)")
	db := fs.String("db", "", "database file to restore into; it must not exist, unless --force")
	users := fs.String("users-file", "", "where to restore the backup's users file (default: the database file's name + .users)")
	force := fs.Bool("force", false, "replace the database file (and its WAL, users file and token key) if they exist; stop the server using them first")
	pos, err := parseFlags(std, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("restore takes no arguments, got %q", pos[0])
	}
	if *db == "" || *db == ":memory:" {
		return usagef("--db is required: the database file to restore into")
	}
	st, err := lf.open(ctx)
	if err != nil {
		return err
	}
	m, err := st.Manifest(ctx, *id)
	if err != nil {
		return err
	}
	if *users == "" {
		*users = *db + ".users"
	}
	done, err := backup.Restore(ctx, st, m, backup.Targets{DB: *db, Users: *users, TokenKey: auth.KeyFileFor(*db)}, *force)
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Out, "restored backup %s (taken %s) into %s: %d tables, %s rows\n",
		m.ID, m.Time.Format("2006-01-02 15:04:05 MST"), *db, len(m.Tables), humanCount(m.Rows()))
	for _, t := range m.Tables {
		fmt.Fprintf(std.Out, "  %s.%s: %s rows\n", t.Schema, t.Name, humanCount(t.Rows))
	}
	if p, ok := done[backup.UsersFile]; ok {
		fmt.Fprintf(std.Out, "users file: %s (serve with --users-file %s)\n", p, p)
	}
	if p, ok := done[backup.TokenKeyFile]; ok {
		fmt.Fprintf(std.Out, "token key: %s (quiver serve --db %s reads it)\n", p, *db)
	}
	return nil
}
