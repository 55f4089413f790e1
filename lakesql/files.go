package lakesql

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/quiverdata/quiver/engine"
)

var (
	scansTotal = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_scans_total",
		Help: "Scans of lake tables planned (one per table a statement reads, or per result part).",
	})
	plannedFiles = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_scan_files_total",
		Help: "Data files lake scans read, after partition and statistics pruning.",
	})
	plannedBytes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_scan_bytes_total",
		Help: "Bytes of the data files lake scans read, after pruning.",
	})
	snapshotBytes = promauto.NewCounter(prometheus.CounterOpts{
		Name: "quiver_lake_scan_snapshot_bytes_total",
		Help: "Bytes of all data files of the snapshots lake scans read: quiver_lake_scan_bytes_total over this is the share read.",
	})
)

// planned is one data file a scan reads.
type planned struct {
	path string
	size int64
	// weight is what the file costs to serve, for splitting a scan into
	// parts: its bytes, or its rows times the table's fixed-width bytes
	// per row when that is more. Delta-encoded integers (Parquet V2)
	// can shrink a file a thousandfold; the Arrow it decodes to, which
	// the part sends, does not shrink.
	weight int64
}

// scanPlan is the files of one scan of one snapshot, and the table as it
// was loaded for it.
type scanPlan struct {
	tbl      *table.Table
	snapshot int64 // 0 for a table without snapshots
	files    []planned
	bytes    int64 // of the files
	weight   int64 // of the files, as planned.weight
}

// plan plans a scan of v at snapshot (0: the view's own, or the table's
// current one) with an optional row filter.
func (c *Catalog) plan(ctx context.Context, v *view, filter iceberg.BooleanExpression, snapshot int64) (scanPlan, error) {
	tbl, err := c.load(ctx, v)
	if err != nil {
		return scanPlan{}, err
	}
	if snapshot == 0 {
		snapshot = v.snapshot
	}
	var snap *table.Snapshot
	if snapshot != 0 {
		if snap = tbl.SnapshotByID(snapshot); snap == nil {
			return scanPlan{}, &engine.Error{Kind: engine.KindNotFound, Msg: fmt.Sprintf(
				"lake table %s.%s has no snapshot %d (expired?): run the query again", v.ns, v.name, snapshot)}
		}
	} else if snap = tbl.CurrentSnapshot(); snap == nil {
		return scanPlan{tbl: tbl}, nil
	}
	opts := []table.ScanOption{table.WithSnapshotID(snap.SnapshotID), table.WithCaseSensitive(false)}
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		return scanPlan{}, fmt.Errorf("plan the scan of lake table %s.%s: %w", v.ns, v.name, err)
	}
	p := scanPlan{tbl: tbl, snapshot: snap.SnapshotID}
	width := fixedWidth(tbl.Schema().AsStruct())
	seen := map[string]bool{}
	for _, t := range tasks {
		if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			return scanPlan{}, &engine.Error{Kind: engine.KindInvalid, Msg: fmt.Sprintf(
				"lake table %s.%s has row-level deletes in snapshot %d, which quiver cannot apply yet: compact the table (quiver lake compact, or rewrite_data_files) to read it",
				v.ns, v.name, snap.SnapshotID)}
		}
		path := t.File.FilePath()
		if seen[path] {
			continue
		}
		seen[path] = true
		f := planned{path: path, size: t.File.FileSizeBytes()}
		f.weight = max(f.size, t.File.Count()*width)
		p.files = append(p.files, f)
		p.bytes += f.size
		p.weight += f.weight
	}
	sort.Slice(p.files, func(i, j int) bool { return p.files[i].path < p.files[j].path })
	scansTotal.Inc()
	plannedFiles.Add(float64(len(p.files)))
	plannedBytes.Add(float64(p.bytes))
	if snap.Summary != nil {
		if n, err := strconv.ParseInt(snap.Summary.Properties["total-files-size"], 10, 64); err == nil {
			snapshotBytes.Add(float64(n))
		}
	}
	return p, nil
}

// fixedWidth is the bytes per row of a struct's fixed-width values in
// Arrow: 8 for a long, 4 for a string's offset (its characters are not
// counted), and so on.
func fixedWidth(st iceberg.StructType) int64 {
	var w int64
	for _, f := range st.FieldList {
		switch t := f.Type.(type) {
		case iceberg.BooleanType:
			w++
		case iceberg.Int32Type, iceberg.Float32Type, iceberg.DateType, iceberg.StringType, iceberg.BinaryType, *iceberg.ListType, *iceberg.MapType:
			w += 4
		case iceberg.DecimalType, iceberg.UUIDType:
			w += 16
		case iceberg.FixedType:
			w += int64(t.Len())
		case *iceberg.StructType:
			w += fixedWidth(*t)
		default: // long, double, time and timestamps
			w += 8
		}
	}
	return w
}

// group returns part i of n of files: contiguous runs of about equal
// weight, the same for the same files. With at least n files, no part is
// empty.
func group(files []planned, i, n int) []planned {
	if n <= 1 {
		return files
	}
	var total int64
	for _, f := range files {
		total += f.weight
	}
	var out []planned
	var placed int64 // weight in the parts before and in the current one
	g, inGroup := 0, 0
	for k, f := range files {
		if inGroup > 0 && g < n-1 {
			// Move on when this part has its share of the bytes, or when
			// the files left are just enough for one each in the parts
			// left.
			if placed*int64(n) >= total*int64(g+1) || len(files)-k <= n-1-g {
				g, inGroup = g+1, 0
			}
		}
		if g == i {
			out = append(out, f)
		}
		placed += f.weight
		inGroup++
	}
	return out
}

// files returns the local paths DuckDB reads for v: the planned files of
// a snapshot, or of one part of them.
func (c *Catalog) files(ctx context.Context, v *view, filter iceberg.BooleanExpression, p *pin) ([]string, error) {
	var snapshot int64
	if p != nil {
		snapshot = p.Snapshot
	}
	sp, err := c.plan(ctx, v, filter, snapshot)
	if err != nil {
		return nil, err
	}
	files := sp.files
	if p != nil { // Planner.Bind checked the part's range
		files = group(files, p.Part, p.Parts)
	}
	if len(files) == 0 {
		return []string{c.empty}, nil
	}
	if c.cache != nil {
		fs, err := sp.tbl.FS(ctx)
		if err != nil {
			return nil, fmt.Errorf("open the lake's storage: %w", err)
		}
		return c.cache.get(ctx, fs, files)
	}
	out := make([]string, len(files))
	for i, f := range files {
		local, err := localPath(f.path)
		if err != nil {
			return nil, err
		}
		out[i] = local
	}
	return out, nil
}

// localPath is the file system path of a file:// location.
func localPath(loc string) (string, error) {
	if strings.HasPrefix(loc, "/") {
		return loc, nil
	}
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "file" {
		return "", fmt.Errorf("lake data file %s is not on this machine's file system", loc)
	}
	return u.Path, nil
}
