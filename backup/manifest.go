package backup

import (
	"encoding/json"
	"fmt"
	"time"
)

// The names of a backup's files inside its directory.
const (
	DatabaseFile = "database.duckdb"
	UsersFile    = "users"
	TokenKeyFile = "tokenkey"
	ManifestFile = "manifest.json"
)

// manifestFormat is the version of the manifest's layout.
const manifestFormat = 1

// idLayout names backups by the UTC time they were taken, so that their
// names sort by time.
const idLayout = "20060102T150405.000Z"

// Manifest describes one complete backup. Its presence is what makes a
// backup complete (see the package doc).
type Manifest struct {
	Format int `json:"format"`
	// ID is the backup's directory name.
	ID string `json:"id"`
	// Time is when the backup's snapshot was taken.
	Time time.Time `json:"time"`
	// Took is how long taking and storing the backup took.
	Took time.Duration `json:"took_ns"`
	// DuckDB is the version of DuckDB that wrote the database file; the
	// row checksums are DuckDB's hash, so they compare only between
	// equal versions.
	DuckDB string `json:"duckdb_version"`
	// Files are the backup's files, the manifest excepted.
	Files []File `json:"files"`
	// Tables are the database's tables at the snapshot.
	Tables []Table `json:"tables"`
}

// File is one stored file of a backup.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Table is one table's content at the snapshot.
type Table struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	Rows   int64  `json:"rows"`
	// Checksum is the sum of DuckDB's hash of every row, in decimal: it
	// does not depend on the rows' order.
	Checksum string `json:"checksum"`
}

// Size is the total size of the backup's files.
func (m *Manifest) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Rows is the total number of rows of the backup's tables.
func (m *Manifest) Rows() int64 {
	var n int64
	for _, t := range m.Tables {
		n += t.Rows
	}
	return n
}

// file returns the manifest's entry for name.
func (m *Manifest) file(name string) (File, bool) {
	for _, f := range m.Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// parseManifest reads a manifest and checks that it describes a backup
// that can be restored.
func parseManifest(id string, data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("backup %s: read its manifest: %w", id, err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("backup %s: manifest format %d, this quiver reads %d", id, m.Format, manifestFormat)
	}
	if m.ID != id {
		return nil, fmt.Errorf("backup %s: its manifest names backup %q", id, m.ID)
	}
	if _, ok := m.file(DatabaseFile); !ok {
		return nil, fmt.Errorf("backup %s: its manifest lists no %s", id, DatabaseFile)
	}
	return &m, nil
}

// ActionType is the Flight action that asks a server for a backup; its
// body is a JSON Request and its result the backup's JSON Manifest.
const ActionType = "quiver.backup"

// Request is the body of the ActionType action.
type Request struct {
	// To is the backup location: file:///dir (on the server's file
	// system) or s3://bucket/prefix.
	To string `json:"to"`
}
