package lake

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// Orphan is a data file that no snapshot of its table references.
type Orphan struct {
	// Path is the file's location, a URI in the form the table uses.
	Path string
	// Size is its size in bytes.
	Size int64
}

// Orphans is the result of [Table.Orphans]: the unreferenced data files
// found, and the means to delete exactly those.
type Orphans struct {
	// Files are the orphan files.
	Files []Orphan
	// Cutoff is the modification time before which files were considered.
	Cutoff time.Time
	// TotalBytes is the total size of Files.
	TotalBytes int64

	tbl  *table.Table
	plan table.OrphanCleanupPlan
}

// DataLocation returns where the table's data files live: the table
// property write.data.path, or the data directory under the table's
// location.
func DataLocation(tbl *table.Table) string {
	if p := tbl.Properties().Get(table.WriteDataPathKey, ""); p != "" {
		return strings.TrimRight(p, "/")
	}
	return strings.TrimRight(tbl.Location(), "/") + "/data"
}

// Orphans lists the files under the table's data location that no snapshot
// references and that were last modified more than olderThan ago. Files
// younger than that may belong to a commit still in progress, so keep
// olderThan well above the longest commit (a day is the usual choice for
// a shared table). The listing and the check against the table's
// manifests are iceberg-go's; nothing is deleted until [Orphans.Delete].
// Directories that do not exist are skipped: a table without data files
// has no orphans.
func (t *Table) Orphans(ctx context.Context, olderThan time.Duration) (*Orphans, error) {
	if olderThan < 0 {
		return nil, fmt.Errorf("iceberg: orphan age %v is negative", olderThan)
	}
	tbl, err := t.refresh(ctx)
	if err != nil {
		return nil, err
	}
	// iceberg-go's listing stops at a directory that does not exist; plan
	// on a copy of the table whose file IO skips such directories. The
	// plan is executed on the table itself.
	planTbl := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), skipMissingDirs(tbl.FS), nil)
	plan, err := planTbl.PlanOrphanFiles(ctx,
		table.WithLocation(DataLocation(tbl)),
		table.WithFilesOlderThan(olderThan))
	if err != nil {
		return nil, fmt.Errorf("iceberg: table %s: list orphan files: %w", strings.Join(t.ident, "."), err)
	}
	o := &Orphans{Cutoff: plan.Cutoff(), TotalBytes: plan.TotalSizeBytes(), tbl: tbl, plan: plan}
	local := strings.HasPrefix(tbl.Location(), "file:")
	for _, f := range plan.OrphanFiles() {
		path := f.Path
		if local && strings.HasPrefix(path, "/") {
			// The local listing gives plain paths; report them in the
			// file:// form the table's own references use.
			path = "file://" + path
		}
		o.Files = append(o.Files, Orphan{Path: path, Size: f.SizeBytes})
	}
	return o, nil
}

// Delete deletes the files listed in o, and no others, and returns those
// it deleted.
func (o *Orphans) Delete(ctx context.Context) ([]string, error) {
	if len(o.Files) == 0 {
		return nil, nil
	}
	res, err := o.tbl.ExecuteOrphanCleanup(ctx, o.plan)
	if err != nil {
		return nil, fmt.Errorf("iceberg: delete orphan files: %w", err)
	}
	return res.DeletedFiles, nil
}
