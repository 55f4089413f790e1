// Package filesio reads and writes data files through an in-process
// DuckDB, so that quiver load and quiver query -o use DuckDB's readers
// and writers instead of hand-written ones.
//
// # Reading
//
// Open streams one or more files as Arrow record batches with one schema:
//
//   - CSV through read_csv. DuckDB's sniffer finds the delimiter, the
//     quoting and the column types from a sample (ReadOptions.SampleRows,
//     DuckDB's sample_size); quoted delimiters, doubled quotes, fields
//     over several lines, empty numbers (NULL) and timestamps with and
//     without a zone offset all read. The first line is the header.
//   - NDJSON (and a JSON array) through read_json.
//   - Parquet through read_parquet.
//   - Arrow IPC files and streams through arrow-go: quiver's DuckDB has
//     no Arrow IPC reader.
//
// The query's result streams out of DuckDB as Arrow (engine.Conn.Query),
// so a file is never held whole: memory is a few batches.
//
// The first file, or ReadOptions.SchemaFrom, sets the columns. A later
// file must have the same column names (in any order; a NDJSON file may
// lack keys, which read as NULL) and is read with the first file's DuckDB
// types: CSV files parse straight into them, NDJSON and Parquet columns
// are cast. Arrow files are not converted: their Arrow types must equal
// the schema's, and when an Arrow file sets the schema, the files after
// it must produce its Arrow types as read.
//
// A value that does not fit its column's type fails the read, with the
// value named (and, where DuckDB's parser finds it, the line): DuckDB
// checks every value, not only the sample, and a NDJSON key the sample
// did not see is refused rather than dropped. DuckDB rounds a number with
// a fraction that it parses or casts into an integer column ('3.5' is
// 4), so CSV integer columns are parsed as text and converted by a cast
// that refuses fractions (wholeCast), as are casts to integers from other
// files. DuckDB's JSON reader still rounds such a number past the sample;
// SampleRows -1 types NDJSON from the whole file. DuckDB's messages are
// cut to their first lines (ReadError).
//
// # Writing
//
// WriteFile and Write hand the batches of an array.RecordReader to DuckDB
// through its Arrow scan (the C stream interface, duckdb-go's
// Arrow.RegisterView) and write them with COPY … TO (FORMAT csv, json or
// parquet), which writes every DuckDB type: INTERVAL, STRUCT, MAP, LIST,
// UUID, HUGEINT and the rest. engine's only Arrow scan is
// engine.Conn.InsertArrow, which inserts into a table; COPY needs the
// scan on its own, so the writer opens its DuckDB through duckdb-go.
//
// WriteFile writes into a temporary file beside the destination
// (PendingFile) and renames it into place once COPY succeeded: a failed
// or interrupted write leaves nothing at the destination, and a reader of
// the destination sees either the old file or the whole new one. Write
// streams to an io.Writer through a pipe that DuckDB writes to.
package filesio
