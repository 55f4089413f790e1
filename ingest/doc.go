// Package ingest is quiver's streaming pipeline: messages from a [Source]
// (Kafka, in package ingest/kafka) are decoded from Protobuf into Arrow,
// batched, and inserted into DuckDB exactly once; the live DuckDB file
// rotates and its rows move to Parquet (package ingest/segment).
//
// # Stages
//
//	source ──chunks──▶ batcher ──jobs──▶ decoders ×D ──records──▶ sequencer ──▶ inserters ×I
//	                                                                 │
//	                                                     rotation + export (lake)
//
// The source delivers runs of messages per partition, in offset order. The
// batcher cuts them into numbered batches of Config.BatchRows messages (or
// fewer after Config.FlushInterval). D decoders turn whole batches into Arrow
// records in parallel: the main record (one row per message plus the
// metadata columns _partition, _offset and _timestamp), the optional
// normalized record, and the dead letters. The sequencer hands records to
// I inserters in batch order. Each inserter opens a transaction, inserts its
// records columnar (one INSERT … SELECT over an Arrow scan per table), appends
// the batch's offsets, waits until the previous batch has committed, and
// commits. Queues between the stages are bounded, so a backlog in Kafka
// never grows memory: the source simply waits.
//
// # Tables
//
// In the live file (Config.DBPath):
//
//	<table>                one row per decoded message: the message's fields
//	                       (STRUCT, LIST and MAP for nested ones), then
//	                       _partition INTEGER, _offset BIGINT and
//	                       _timestamp TIMESTAMPTZ (the Kafka record's)
//	<table>_norm           the normalizer's flat rows, with the same three
//	                       columns (Config.Normalize)
//	<table>_dead_letters   topic, partition, offset, timestamp, raw BLOB,
//	                       error: messages that failed to decode
//	_quiver_offsets        topic, partition, next_offset, committed_at
//	_quiver_segment        the file's segment id and opening time
//
// (_partition, _offset) identifies a message: a query counting distinct
// pairs over the live file, sealed files and Parquet checks exactly-once.
//
// # Exactly once
//
// The offsets table _quiver_offsets (topic, partition, next_offset,
// committed_at) lives in the same DuckDB file as the rows and is written in
// the same transaction, so DuckDB's atomic commit makes the rows of a
// batch and the position after them durable together, or neither. Batches
// commit strictly in order, so the committed state is always a prefix of
// what the source delivered, and the stored position of a partition is the
// largest next_offset recorded for it. The table is append-only because
// concurrent transactions may append but would conflict updating one row.
//
// On start, and whenever a consumer-group member is assigned partitions,
// consumption resumes at the stored position (or Kafka's committed offset
// when that is further along, which happens when another member, with its
// own database, consumed the partition meanwhile). Kafka's committed offsets
// are only a courtesy written after DuckDB commits. A kill -9 at any moment
// therefore loses nothing and duplicates nothing: uncommitted work is rolled
// back by DuckDB and consumed again.
//
// Rotation keeps this true. The live file is checkpointed, closed and
// renamed into the sealed directory in one atomic step; the new live file's
// first transaction creates the tables and carries forward the largest
// offsets of every sealed file still on disk. Export to Parquet deletes a
// sealed file only once its Parquet files are in place, and is redone
// idempotently after a crash (see package ingest/segment). Every row is thus in
// exactly one of: the live file, a sealed file, or Parquet.
//
// Across several processes sharing a consumer group, each with its own
// database, a partition handed over in an orderly rebalance is flushed,
// committed to DuckDB and then to Kafka before the handover, so the next
// owner starts exactly after it. A process killed between its DuckDB commit
// and its Kafka commit while its partitions move to another process can
// make that process consume the last batch again; the _partition and
// _offset columns identify such rows. Static membership (a stable instance
// id) makes a restarted process get its partitions back instead.
//
// # Inside the server
//
// With Config.DB (quiver serve --ingest), the pipeline writes into the
// served database: the same tables, offsets log and per-batch transaction
// as above, so a batch's rows are visible to every endpoint the moment it
// commits, and its position with them. The served database is the one
// database and never rotates: queries hold it open, and a rotation would
// close it under them. So no sealed files exist, and what rotation and
// export did is done differently:
//
//   - Parquet export: none. The rows stay queryable where they are; COPY …
//     TO under quiver serve --export-root exports what a user wants.
//   - The lake (Config.Lake): every Config.CommitInterval, the rows of
//     each owned partition from the lake's end offset up to the stored
//     position are read from the served tables and committed, table by
//     table with the main table last, fenced on each table's offsets as
//     above. The position is read before the rows, so every row below it
//     has committed and none past it is read; the lake's end says where
//     the next commit starts. So a kill -9 at any moment loses nothing and
//     duplicates nothing in either place: the served database has every
//     batch it committed, exactly once, and the lake has a prefix of it,
//     which the next round continues. The main table's stream of quiver
//     ingest --lake is not used here: it is durable only at rotation, and
//     its recovery reads the live segment again from Kafka, which would
//     insert those rows into the served tables twice. The rows go through
//     iceberg-go's writer rather than DuckDB's COPY, which would need the
//     served database to write files its users may not.
//   - Retention (Config.Retention): the rows the lake holds, below each
//     table's end offset for their partition, are deleted from the served
//     tables once their Kafka timestamp is older; rows the lake does not
//     hold stay however old.
//
// With a lake, a partition resumes at the larger of its stored position
// and the lake's end (the lowest over the lake's tables), never at
// Kafka's committed offset. So the rows the served database holds from
// the lake's end on are always one unbroken run: either the partition
// resumed where its rows stopped, or at the lake's end, below which the
// lake has every row. Several servers in one group each keep the rows of
// the partitions they consumed; a partition handed over in an orderly
// rebalance is committed to the lake before it goes, and one taken over
// after a crash resumes at the lake's end, so the rows the crashed server
// had not committed to the lake are read again by the new owner, and are
// in the lake once.
//
// # Watching a run
//
// Run returns a Report, logged every Config.ReportInterval too; the
// Prometheus metrics (quiver_ingest_*) and Pipeline.Live follow the run as
// it goes. Live is the web console's ingest view: the counts, each
// assigned partition's next offset, high watermark and lag (the source
// reports the watermarks every fetch brings, and looks up those of
// partitions no fetch brought news of), the segments sealed, exported and
// waiting, the disk guard, and the last error the pipeline logged at error
// level, the source reported, or Run returned.
//
// # The lake
//
// With Config.Lake, sealed files go to Apache Iceberg tables instead of
// Parquet files: <namespace>.<table>, and the dead-letter and normalized
// tables beside it. The local DuckDB file is then only a buffer, and the
// lake is the one shared, fenced commit point of every process in the
// group.
//
// The main table's rows skip the live file: each committed batch goes, in
// batch order, to a COPY that streams the segment's rows into one Parquet
// file in the lake's format, placed beside the sealed file at rotation and
// uploaded as it is (rewritten only when the commit takes part of it, or
// when it spans partitions of the table). Storing the rows in DuckDB first
// cost twice the CPU of writing the file. The live file keeps the offsets
// log, the dead letters and the normalized rows, and records the streamed
// files, which the commit checks are all there. Because the stream is not
// durable until sealed, a restart removes the live file of the run before
// and its partitions resume from the lake's offsets: a crash costs reading
// the live segment (at most --rotate-mb or --rotate-age of it) again from
// Kafka, never a lost or duplicated row. Column types DuckDB cannot write
// as the lake's table takes them keep the rows in the live file. Each commit appends a sealed file's rows of some partitions and
// records, in the snapshot's summary, the group's end offset of every
// partition (package lake). It succeeds only if each partition's
// rows start where the table's committed end for that partition is, so
// the same offsets can never be committed twice, whoever tries.
//
// Which rows a process commits:
//
//  1. A file's range for a partition starts at the smallest next_offset
//     of its offsets log (compaction keeps it): the position carried from
//     the file before it, or the lake's, written when the partition was
//     assigned. For a partition the lake has never seen, it starts at its
//     first row.
//  2. Only partitions the process owns are committed. Rows of others are
//     dropped: their owner resumes them from the lake's offsets, and so
//     consumes them itself.
//  3. On assignment, the process flushes, seals the live file, and commits
//     every sealed file for what it owns then, the new partitions included:
//     rows of a new partition whose start the lake has already passed came
//     from an earlier ownership and are dropped. Then the new partitions
//     resume at the lake's offsets, which win over Kafka's.
//  4. On revocation and on a clean stop, it flushes, seals and commits
//     before it lets the partitions go; lost partitions are dropped.
//  5. If the lake has passed the start of a partition the process owns,
//     another writer holds that partition (this process missed its session
//     and the group moved on): the pipeline stops, and a restart resumes
//     from the lake.
//
// A kill -9 at any moment leaves the rows either committed, with their
// offsets, or in sealed local files whose range the lake has not passed,
// which the next owner of each partition commits or drops by rule 3, or
// in the live segment, which the restart removes unread: its partitions
// resume from the lake's offsets and read those rows again. Several
// tables are committed one after the other, each fenced on its own
// offsets; a crash between them leaves the file on disk, and the redo
// skips the tables that already have it. Without a lake, several processes
// in one group are not exactly once across a moved partition (see above).
package ingest
