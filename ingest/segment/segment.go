package segment

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/quiverdata/quiver/internal/durable"
)

// Segment is a sealed (rotated) DuckDB file waiting for export.
type Segment struct {
	// ID names the segment; it sorts by the time the file was opened.
	ID string
	// Path is the sealed file.
	Path string
}

// segmentIDPattern matches what NewSegmentID returns.
var segmentIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{9}Z-[0-9a-f]{8}$`)

// ErrWALPresent is returned by Seal when a write-ahead log remains beside
// the database: the database was not checkpointed and must not be moved.
var ErrWALPresent = errors.New("write-ahead log present")

// NewSegmentID returns a new id for a database file opened at t: the UTC
// time to the millisecond and 32 random bits, such as
// 20250224T210623123Z-3f9a1c0e. Ids are safe in file names and SQL
// identifiers.
func NewSegmentID(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	t = t.UTC()
	return fmt.Sprintf("%s%03dZ-%s", t.Format("20060102T150405"), t.Nanosecond()/1e6, hex.EncodeToString(b[:]))
}

// ValidSegmentID reports whether id has the form NewSegmentID returns.
func ValidSegmentID(id string) bool { return segmentIDPattern.MatchString(id) }

// SealedDir is the directory the sealed segments of the database at dbPath
// live in: dbPath + ".sealed".
func SealedDir(dbPath string) string { return dbPath + ".sealed" }

// walPath is DuckDB's write-ahead log beside a database file.
func walPath(dbPath string) string { return dbPath + ".wal" }

// Seal moves the closed database file at dbPath into SealedDir(dbPath) as
// segment id. The rename is atomic and both directories are synced, so
// after a crash the file is either still live or sealed. Seal refuses with
// ErrWALPresent when a write-ahead log remains beside dbPath.
func Seal(dbPath, id string) (Segment, error) {
	if !ValidSegmentID(id) {
		return Segment{}, fmt.Errorf("seal %s: bad segment id %q", dbPath, id)
	}
	if _, err := os.Stat(walPath(dbPath)); err == nil {
		return Segment{}, fmt.Errorf("seal %s: %w", dbPath, ErrWALPresent)
	}
	dir := SealedDir(dbPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Segment{}, fmt.Errorf("seal %s: %w", dbPath, err)
	}
	seg := Segment{ID: id, Path: filepath.Join(dir, id+".duckdb")}
	if err := os.Rename(dbPath, seg.Path); err != nil {
		return Segment{}, fmt.Errorf("seal %s: %w", dbPath, err)
	}
	// The rename happened: from here on the segment is sealed whatever
	// the syncs say, so it is returned with their error.
	if err := durable.SyncDir(dir); err != nil {
		return seg, fmt.Errorf("seal %s: %w", dbPath, err)
	}
	if err := durable.SyncDir(filepath.Dir(dbPath)); err != nil {
		return seg, fmt.Errorf("seal %s: %w", dbPath, err)
	}
	return seg, nil
}

// Sealed lists the sealed segments of the database at dbPath, oldest
// first. Files that are not segments are ignored.
func Sealed(dbPath string) ([]Segment, error) {
	dir := SealedDir(dbPath)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sealed segments: %w", err)
	}
	var segs []Segment
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".duckdb")
		if !ok || e.IsDir() || !ValidSegmentID(id) {
			continue
		}
		segs = append(segs, Segment{ID: id, Path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].ID < segs[j].ID })
	return segs, nil
}

// Size is the size in bytes of the segment's file, or 0 if it is gone.
func (s Segment) Size() int64 {
	fi, err := os.Stat(s.Path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Remove deletes the segment's file and any write-ahead log beside it, and
// syncs the directory.
func (s Segment) Remove() error {
	for _, p := range []string{walPath(s.Path), s.Path} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove segment %s: %w", s.ID, err)
		}
	}
	if err := durable.SyncDir(filepath.Dir(s.Path)); err != nil {
		return fmt.Errorf("remove segment %s: %w", s.ID, err)
	}
	return nil
}
