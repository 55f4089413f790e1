// Package backup takes online, consistent backups of a served DuckDB
// database, and lists, verifies and restores them.
//
// # Taking one
//
// A backup is one read transaction of the served database. A connection
// of the server attaches a new database file in a staging directory,
// begins a transaction, and within it recreates the schemas, sequences,
// tables, macros, views and indexes of the served database in the new
// file and copies every table's rows into it. DuckDB fixes a
// transaction's snapshot of a database when the transaction first reads
// it, so every statement of the copy sees the same snapshot: every
// transaction committed before the copy's first read is in the backup,
// and none committed after. Other connections go on reading and writing
// meanwhile; the copy only reads the served database. In the same
// transaction each table's rows are counted and summed (hash of each
// row), the numbers the manifest keeps to verify a restore against.
//
// DuckDB's own COPY FROM DATABASE would do the copy in one statement,
// but it changes a setting on its way, which the served database's
// locked configuration refuses; the statements it runs are run here one
// by one instead.
//
// # Layout
//
// A backup location (file:///dir or s3://bucket/prefix) holds one
// directory per backup, named by its ID, the UTC time it was taken
// (20260102T150405.000Z), so that names sort by time:
//
//	ID/database.duckdb   the database, checkpointed, with no WAL
//	ID/users             the server's users file, when it has one
//	ID/tokenkey          the server's token key file, when it has one
//	ID/manifest.json     written last: files, sizes, SHA-256, tables
//
// # Crash safety
//
// The manifest is the backup's commit record. It is written only after
// every other file of the backup is complete, and written atomically: on
// a file system to a temporary name, synced, renamed and the directory
// synced; on an object store in one PUT, which the store publishes whole
// or not at all. A backup interrupted at any moment, by a crash, a kill
// or a failing store, therefore has no manifest, and List shows only
// backups with one. Nothing of an older backup is written or removed
// while a new one is taken. Fetch checks each file's size and SHA-256
// against the manifest, so a backup whose files were damaged after the
// fact fails to restore rather than restoring wrong data.
package backup
