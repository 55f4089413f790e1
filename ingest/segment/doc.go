// Package segment seals ingest's rotated DuckDB files into segments and
// exports them to a Parquet data lake.
//
// The ingest pipeline writes into one live DuckDB file. When that file is
// big or old enough ([Policy]) the pipeline closes it and [Seal]s it: the
// file is renamed, atomically, into a sealed directory beside it under a
// unique segment id, and a fresh live file is started. An [Exporter] then
// copies each table of the sealed segment to zstd-compressed Parquet with
// DuckDB's own writer, hive-partitioned by configurable keys, and deletes
// the segment.
//
// # Layout
//
//	<db>                         the live database
//	<db>.sealed/<id>.duckdb      sealed segments waiting for export
//	<export>/<table>/k=v/…/<id>_<n>.parquet   exported rows
//	<export>/_staging/<id>/      work area of an export in progress
//
// Segment ids sort by the time their file was opened, and every Parquet file
// carries the id of the segment it came from.
//
// # Crash safety
//
// An export writes into the staging area, syncs the files, drops a marker,
// renames the files into place, and only then deletes the sealed segment.
// Until the segment is gone the export is redone from the start: a marker
// left by a crash during the renames makes the redo first delete every file
// of that segment already moved into place. So a crash at any point leaves
// each row either in a sealed segment or in Parquet, never in both once the
// export completes, and never in neither.
//
// A [DiskGuard] measures what the live file, the sealed segments and the
// export tree take, and the free space left, so the pipeline can pause
// consumption before it fills the disk.
package segment
