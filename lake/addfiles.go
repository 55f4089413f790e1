package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"gocloud.dev/blob"
)

// Parquet files written by another engine.
//
// [Table.Write] encodes Arrow records to Parquet in Go. A caller that has
// a faster Parquet writer (DuckDB's COPY ... TO, for one) can write the
// files itself and hand them over instead:
//
//  1. [Table.PrepareParquet] evolves the table's schema to the data's, as
//     Write does, and returns the Iceberg field id of every column and
//     nested field; the files must carry them (the Parquet field_id of
//     each column), as readers such as pyiceberg need them, and as
//     iceberg-go does to match the files' columns and statistics.
//  2. The caller writes local Parquet files: every column with its field
//     id, column statistics (min, max, null count) in the footer, and, for
//     a partitioned table, the rows of exactly one partition of the
//     table's spec per file.
//  3. [Table.UploadParquet] reads each file's footer through iceberg-go
//     (table.FileToDataFile: schema check against the table, column sizes,
//     value and null counts, bounds, partition values inferred from the
//     bounds), uploads the file under the table's data location through
//     the table's file IO, and returns the uploaded files as [Files].
//  4. [Table.CommitFiles] commits them, with the same fence on Kafka
//     offsets as files from Write.

// FieldID is the Iceberg field id of a column, with those of its nested
// fields: a struct's fields by name, a list's "element", a map's "key"
// and "value".
type FieldID struct {
	Name     string
	ID       int
	Children []FieldID
}

// PrepareParquet reloads the table, evolves its schema to schema by the
// rules of [Lake.Table] (as [Table.Write] does), and returns the field ids
// of schema's columns in the table.
func (t *Table) PrepareParquet(ctx context.Context, schema *arrow.Schema) ([]FieldID, error) {
	if _, err := t.refresh(ctx); err != nil {
		return nil, err
	}
	if err := t.evolve(ctx, schema); err != nil {
		return nil, err
	}
	top := map[string]iceberg.NestedField{}
	for _, nf := range t.current().Schema().Fields() {
		top[nf.Name] = nf
	}
	out := make([]FieldID, 0, schema.NumFields())
	for _, f := range schema.Fields() {
		nf, ok := top[f.Name]
		if !ok {
			return nil, fmt.Errorf("iceberg: table %s: column %q is missing after the schema update", strings.Join(t.ident, "."), f.Name)
		}
		out = append(out, fieldIDs(nf.Name, nf.ID, nf.Type))
	}
	return out, nil
}

func fieldIDs(name string, id int, typ iceberg.Type) FieldID {
	out := FieldID{Name: name, ID: id}
	switch tt := typ.(type) {
	case *iceberg.StructType:
		for _, c := range tt.FieldList {
			out.Children = append(out.Children, fieldIDs(c.Name, c.ID, c.Type))
		}
	case *iceberg.ListType:
		out.Children = []FieldID{fieldIDs("element", tt.ElementID, tt.Element)}
	case *iceberg.MapType:
		out.Children = []FieldID{fieldIDs("key", tt.KeyID, tt.KeyType), fieldIDs("value", tt.ValueID, tt.ValueType)}
	}
	return out
}

// ErrUnfitParquet is wrapped by the errors of [Table.UploadParquet] for a
// file that does not fit the table (its schema, or its rows spanning
// partitions), as opposed to a failure to upload it.
var ErrUnfitParquet = errors.New("iceberg: the Parquet file does not fit the table")

// uploadConcurrency bounds the files uploaded at once.
const uploadConcurrency = 4

// An object store upload holds up to uploadPartConcurrency parts of
// uploadPartBytes in memory (S3's multipart upload; the driver's defaults
// are 5 parts of 8 MiB). With uploadConcurrency files at once that is at
// most 64 MiB of Go heap, where the defaults took about 250 MB more heap
// than ingest alone while a 1 GiB segment's 16 files uploaded.
const (
	uploadPartBytes       = 8 << 20
	uploadPartConcurrency = 2
)

// blobWriterIO is iceberg-go's gocloud file IO, which can open a writer
// with the driver's options.
type blobWriterIO interface {
	NewWriter(ctx context.Context, path string, overwrite bool, opts *blob.WriterOptions) (*blobfs.Writer, error)
}

// createUpload opens name for writing through wfs, with the part size
// and concurrency above where wfs is an object store.
func createUpload(ctx context.Context, wfs iceio.WriteFileIO, name string) (iceio.FileWriter, error) {
	if b, ok := wfs.(blobWriterIO); ok {
		return b.NewWriter(ctx, name, true, &blob.WriterOptions{BufferSize: uploadPartBytes, MaxConcurrency: uploadPartConcurrency})
	}
	return wfs.Create(name)
}

// UploadParquet uploads the local Parquet files at paths (see
// [Table.PrepareParquet] for what they must hold) to the table's data
// location and returns them, uncommitted, for [Table.CommitFiles]. The
// local files are left in place. The uploaded files' names carry the
// write id id, as those of [Table.WriteAs] do (see [Table.RemoveWrites]).
//
// Each file is checked through iceberg-go before it is uploaded: its
// schema must fit the table's current schema, and for a partitioned table
// its partition value is inferred from its column bounds, which fails for
// a file whose rows span more than one partition. A file whose partition
// source column has values but no bounds is refused too, rather than
// registered as a null partition. On error the files already uploaded
// are deleted, best effort.
func (t *Table) UploadParquet(ctx context.Context, id uuid.UUID, paths []string) (*Files, error) {
	out := &Files{t: t}
	if len(paths) == 0 {
		return out, nil
	}
	tbl := t.current()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("iceberg: table %s: file IO %T cannot write files", strings.Join(t.ident, "."), fsys)
	}
	meta := tbl.Metadata()
	sch, spec, props := tbl.Schema(), tbl.Spec(), meta.Properties()
	loc, err := table.LoadLocationProvider(meta.Location(), props)
	if err != nil {
		return nil, fmt.Errorf("iceberg: table %s: data location: %w", strings.Join(t.ident, "."), err)
	}
	name := strings.Join(t.ident, ".")

	files := make([]iceberg.DataFile, len(paths))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, uploadConcurrency)
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			files[i], errs[i] = uploadOne(ctx, wfs, loc, sch, spec, props, p, fmt.Sprintf("%05d-%s.parquet", i, id))
		}()
	}
	wg.Wait()
	for _, df := range files {
		if df != nil {
			out.files = append(out.files, df)
		}
	}
	if err := errors.Join(errs...); err != nil {
		_ = out.Discard(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("iceberg: table %s: add Parquet files: %w", name, err)
	}
	return out, nil
}

// uploadOne checks the local file at local, uploads it to the table's
// data location as fileName, under its partition's directory, and returns
// its DataFile.
func uploadOne(ctx context.Context, wfs iceio.WriteFileIO, loc table.LocationProvider, sch *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties, local, fileName string) (iceberg.DataFile, error) {
	// The footer is read from the local copy: once to check the file and
	// learn its partition, and once more, after the upload, under the
	// name the DataFile records.
	lio := localIO{}
	probe, err := table.FileToDataFile(ctx, lio, local, sch, spec, 0, props)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnfitParquet, local, err)
	}
	if err := checkPartition(probe, sch, spec); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnfitParquet, local, err)
	}
	dir := ""
	if !spec.IsUnpartitioned() {
		dir = spec.PartitionToPath(partitionRecordOf(probe, spec), sch)
	}
	remote := loc.NewDataLocation(path.Join(dir, fileName))

	f, err := os.Open(local)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w, err := createUpload(ctx, wfs, remote)
	if err != nil {
		return nil, uploadError(remote, err)
	}
	if _, err := w.ReadFrom(f); err != nil {
		_ = w.Close()
		_ = wfs.Remove(remote)
		return nil, uploadError(remote, err)
	}
	if err := w.Close(); err != nil {
		_ = wfs.Remove(remote)
		return nil, uploadError(remote, err)
	}
	df, err := table.FileToDataFile(ctx, localIO{remote: remote, local: local}, remote, sch, spec, 0, props)
	if err != nil {
		_ = wfs.Remove(remote)
		return nil, fmt.Errorf("%s: %w", local, err)
	}
	return df, nil
}

// uploadError reports a failed upload of remote without holding on to
// err. The S3 client's errors keep the failed request, and with it the
// part's buffer (8 to 16 MiB); an export that fails keeps its error until
// it is retried, so a failing store held one such buffer for each file of
// the segment, hundreds of MB of Go heap between attempts. Only a
// cancellation stays wrapped, for callers that check for it.
func uploadError(remote string, err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("upload %s: %v: %w", remote, err, context.Canceled)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("upload %s: %v: %w", remote, err, context.DeadlineExceeded)
	}
	return fmt.Errorf("upload %s: %v", remote, err)
}

// checkPartition refuses a file that iceberg-go gave a null partition
// value for a partition field whose source column has values in it: that
// happens when the file has no bounds for the column.
func checkPartition(df iceberg.DataFile, sch *iceberg.Schema, spec iceberg.PartitionSpec) error {
	part := df.Partition()
	for _, f := range spec.Fields() {
		if v, ok := part[f.FieldID]; ok && v != nil {
			continue
		}
		nulls, ok := df.NullValueCounts()[f.SourceID()]
		if !ok || nulls != df.Count() {
			col, _ := sch.FindColumnName(f.SourceID())
			return fmt.Errorf("no partition value for %s(%s): the file has no bounds for the column", f.Transform, col)
		}
	}
	return nil
}

// partitionRecord is a file's partition values in the spec's order.
type partitionRecord []any

func (r partitionRecord) Size() int        { return len(r) }
func (r partitionRecord) Get(i int) any    { return r[i] }
func (r partitionRecord) Set(i int, v any) { r[i] = v }

func partitionRecordOf(df iceberg.DataFile, spec iceberg.PartitionSpec) partitionRecord {
	part := df.Partition()
	out := make(partitionRecord, 0, spec.NumFields())
	for _, f := range spec.Fields() {
		out = append(out, part[f.FieldID])
	}
	return out
}

// localIO opens local files for iceberg-go's footer reader; remote, when
// set, is read from local.
type localIO struct{ remote, local string }

func (l localIO) Open(name string) (iceio.File, error) {
	if l.remote != "" {
		if name != l.remote {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		name = l.local
	}
	return os.Open(name)
}

func (l localIO) Remove(string) error { return errors.ErrUnsupported }

// DuckDBFieldIDs renders ids as the value of the FIELD_IDS option of
// DuckDB's COPY ... TO ... (FORMAT parquet): a struct literal from column
// name to field id, or, for a nested column, to a struct of its own with
// the column's id under __duckdb_field_id and its fields' ids by name
// (DuckDB names a list's field "element" and a map's "key" and "value",
// as Iceberg does).
func DuckDBFieldIDs(ids []FieldID) string {
	var b strings.Builder
	var write func(ids []FieldID)
	write = func(ids []FieldID) {
		b.WriteByte('{')
		for i, f := range ids {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("'" + strings.ReplaceAll(f.Name, "'", "''") + "': ")
			if len(f.Children) == 0 {
				b.WriteString(strconv.Itoa(f.ID))
				continue
			}
			write(append([]FieldID{{Name: "__duckdb_field_id", ID: f.ID}}, f.Children...))
		}
		b.WriteByte('}')
	}
	write(ids)
	return b.String()
}

// DuckDBPartitionKey returns a DuckDB SQL expression over the column
// expression col that takes one value per partition of f's transform
// (the day or hour since the epoch in UTC, or the value itself), to split
// rows with COPY's PARTITION_BY into one file per partition; false for a
// transform it has none for. The files' partition values themselves are
// inferred by iceberg-go from their bounds, which also refuses a file
// whose rows the expression put together wrongly.
func DuckDBPartitionKey(f PartitionField, col string) (string, bool) {
	switch f.Transform {
	case "", Identity:
		return col, true
	case Day:
		return "CAST(floor(epoch_us(" + col + ") / 86400000000.0) AS BIGINT)", true
	case Hour:
		return "CAST(floor(epoch_us(" + col + ") / 3600000000.0) AS BIGINT)", true
	}
	return "", false
}

// CompressionCodec returns the table's write.parquet.compression-codec,
// as last loaded, as DuckDB's COPY … (FORMAT parquet) names it: zstd (the
// default, as in Iceberg), snappy, gzip, brotli, lz4_raw (Iceberg's lz4)
// or uncompressed. ok is false for a codec DuckDB does not write.
func (t *Table) CompressionCodec() (codec string, ok bool) {
	v, set := t.current().Properties()[table.ParquetCompressionKey]
	if !set {
		return "zstd", true
	}
	switch c := strings.ToLower(strings.TrimSpace(v)); c {
	case "zstd", "snappy", "gzip", "brotli", "uncompressed":
		return c, true
	case "lz4", "lz4_raw":
		return "lz4_raw", true
	case "none":
		return "uncompressed", true
	}
	return "", false
}

// CompressionLevel returns the table's write.parquet.compression-level,
// as last loaded, and whether it is set.
func (t *Table) CompressionLevel() (int, bool) {
	v, ok := t.current().Properties()[table.ParquetCompressionLevelKey]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}
