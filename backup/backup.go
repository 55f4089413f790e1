package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/quiverdata/quiver/engine"
)

// ErrBusy is returned when a backup is asked for while another runs.
var ErrBusy = errors.New("a backup of this database is already running")

// Backer takes backups of one served database. Its methods are safe for
// concurrent use; backups run one at a time.
type Backer struct {
	db      *engine.DB
	staging string
	files   map[string]string
	log     *slog.Logger
	mu      sync.Mutex
}

// NewBacker returns a Backer of db. staging is a directory the database
// may write to (among its allowed directories), where each backup's
// database file is built before it is stored; files are the local files
// stored beside it, by name in the backup (UsersFile, TokenKeyFile); a
// missing one is left out.
func NewBacker(db *engine.DB, staging string, files map[string]string, log *slog.Logger) *Backer {
	if log == nil {
		log = slog.Default()
	}
	return &Backer{db: db, staging: staging, files: files, log: log}
}

// CleanStaging removes what an interrupted backup left in the staging
// directory. Call it before the first backup.
func (b *Backer) CleanStaging() error {
	ents, err := os.ReadDir(b.staging)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(b.staging, 0o700)
	}
	if err != nil {
		return fmt.Errorf("clean the backup staging directory: %w", err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(b.staging, e.Name())); err != nil {
			return fmt.Errorf("clean the backup staging directory: %w", err)
		}
	}
	return nil
}

// Run takes one backup of the database into st and returns its manifest.
func (b *Backer) Run(ctx context.Context, st *Store) (*Manifest, error) {
	if !b.mu.TryLock() {
		return nil, ErrBusy
	}
	defer b.mu.Unlock()
	m, err := b.run(ctx, st)
	if err != nil {
		backupsFailed.Inc()
		return nil, err
	}
	backupsTaken.Inc()
	backupBytes.Add(float64(m.Size()))
	backupSeconds.Observe(m.Took.Seconds())
	backupLastSuccess.Set(float64(m.Time.UnixNano()) / 1e9)
	return m, nil
}

func (b *Backer) run(ctx context.Context, st *Store) (*Manifest, error) {
	start := time.Now().UTC()
	m := &Manifest{Format: manifestFormat, ID: start.Format(idLayout), Time: start}
	local := filepath.Join(b.staging, m.ID+".duckdb")
	defer os.Remove(local)
	defer os.Remove(local + ".wal")

	c, err := b.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	v, err := queryStrings(ctx, c, "SELECT library_version FROM pragma_version()")
	if err == nil {
		m.DuckDB = v[0][0]
		m.Tables, err = snapshot(ctx, c, local)
	}
	c.Close() // its default catalog and transaction state changed
	if err != nil {
		return nil, fmt.Errorf("back up the database: %w", err)
	}
	snap := time.Since(start)

	if keys, err := st.obj.List(m.ID); err != nil {
		return nil, err
	} else if len(keys) > 0 {
		return nil, fmt.Errorf("%s already holds files of a backup %s", st.uri, m.ID)
	}
	f, err := st.put(ctx, m.ID, DatabaseFile, local)
	if err != nil {
		return nil, err
	}
	m.Files = append(m.Files, f)
	for _, name := range []string{UsersFile, TokenKeyFile} {
		p := b.files[name]
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		f, err := st.put(ctx, m.ID, name, p)
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, f)
	}
	m.Took = time.Since(start)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := st.obj.Put(ctx, path.Join(m.ID, ManifestFile), bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("store the manifest: %w", err)
	}
	b.log.Info("backup taken", "id", m.ID, "to", st.uri, "bytes", m.Size(), "tables", len(m.Tables), "rows", m.Rows(),
		"snapshot", snap.Round(time.Millisecond), "took", m.Took.Round(time.Millisecond),
		"mb_per_s", fmt.Sprintf("%.1f", float64(m.Size())/1e6/m.Took.Seconds()))
	return m, nil
}
