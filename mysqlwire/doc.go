// Package mysqlwire serves quiver's engine over the MySQL protocol, so that
// the mysql CLI, PyMySQL, MySQL Connector/J, go-sql-driver and BI tools can
// query it. The protocol itself is github.com/dolthub/vitess/go/mysql;
// this package implements its Handler over DuckDB.
//
// Use:
//
//	srv, err := mysqlwire.New(db, mysqlwire.Options{Logger: log, Users: users})
//	ln, err := net.Listen("tcp", "127.0.0.1:9030")
//	go srv.Serve(ln)              // returns ErrServerClosed after Close/Shutdown
//	...
//	srv.Shutdown(ctx)             // drain, or srv.Close() to cut at once
//
// What it covers:
//
//   - COM_QUERY, streamed: rows are formatted straight from the engine's
//     Arrow batches into reused buffers and written as they arrive, so
//     memory stays bounded however large the result. A client that allows
//     multiple statements gets one result per statement.
//   - Prepared statements (COM_STMT_PREPARE, EXECUTE, FETCH, CLOSE) with
//     binary parameters and results, and server-side cursors. Their SQL
//     must also parse as MySQL: vitess parses it to count parameters before
//     the handler sees it.
//   - COM_INIT_DB and USE: a MySQL "database" is a DuckDB schema of the
//     current catalog ("main" by default). USE runs DuckDB's USE, so an
//     attached catalog, or catalog.schema, works too. SHOW DATABASES lists
//     the schemas of the current catalog; DATABASE() is current_schema().
//   - mysql_native_password logins checked against Users (an *auth.Store);
//     a read-only user may only run statements DuckDB calls read-only. With
//     no users any login is accepted as admin, and Serve accepts only a
//     loopback listener.
//   - COM_PING, COM_QUIT, COM_RESET_CONNECTION, COM_FIELD_LIST and KILL
//     [QUERY] id. A client that goes away, mid-result or while its
//     statement computes, has the statement interrupted and its engine
//     connection given back.
//
// Types: the catalog (SHOW CREATE TABLE, SHOW COLUMNS, INFORMATION_SCHEMA)
// describes DuckDB's types as MySQL's from one table, mysqlTypes
// (mysqltypes.go). Result columns and their values are written by package
// mysqlvalue from one table of Arrow types: values go out in DuckDB's text
// form, except LIST, ARRAY, STRUCT and MAP, which the catalog calls json
// and which go out as JSON text.
//
// Dialect: everything runs on DuckDB as written, except that the
// compatibility layer (compat.go, variables.go) answers what DuckDB cannot
// (SET of MySQL variables, SELECT @@var, SHOW VARIABLES, SHOW TABLES,
// SHOW COLLATION, SHOW KEYS, MySQL's transaction statements and
// autocommit, LOCK TABLES, MySQL DDL, …), and a lexer pass (split.go)
// rewrites `backticks`, X'hex' literals and charset introducers. A SELECT over MySQL's
// INFORMATION_SCHEMA (TABLES, COLUMNS, SCHEMATA, STATISTICS,
// TABLE_CONSTRAINTS, KEY_COLUMN_USAGE, REFERENTIAL_CONSTRAINTS,
// CHECK_CONSTRAINTS, VIEWS, PARTITIONS, and FILES, TRIGGERS and ROUTINES,
// empty), as
// Connector/J's DatabaseMetaData sends, is read as MySQL and answered from
// DuckDB's catalog with MySQL's columns (infoschema.go, translate.go); the
// other tables of information_schema are DuckDB's. String literals follow
// DuckDB by default, where a backslash is an ordinary character; the
// server says so with the NO_BACKSLASH_ESCAPES status flag and sql_mode,
// so drivers that quote parameters themselves (Connector/J, PyMySQL,
// go-sql-driver with interpolateParams) double quotes or send hex instead
// of escaping with a backslash. A session that sets a sql_mode without
// NO_BACKSLASH_ESCAPES gets MySQL's reading instead: its '…' literals take
// backslash escapes (\0 \' \n \Z \\ …), which the lexer decodes for
// DuckDB, and the status flag goes, so that its client escapes the same
// way. ANSI_QUOTES ("…" is a name) stays whatever a client sets.
//
// Dumps and restores. mysqldump (Debian's, MariaDB's) dumps quiver with
// and without --single-transaction, and its dump files restore into quiver
// with the mysql CLI or mycli, as they do into MySQL:
//
//   - Executable comments: the body of /*!NNNNN … */ (NNNNN up to 80033,
//     the announced 8.0.33) is SQL, as in MySQL. A statement that starts
//     with one (a dump's /*!40101 SET … */ lines, /*!50001 CREATE VIEW …*/)
//     runs its bodies, and the compatibility rules read the bodies
//     anywhere (START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */,
//     LOCK TABLES t READ /*!32311 LOCAL */). In a statement that goes to
//     DuckDB as written they stay comments: there they hold MySQL-only
//     options (SELECT /*!40001 SQL_NO_CACHE */ …). MariaDB's /*M!…*/ and
//     later versions' comments are comments. A query of comments only is
//     an OK, as in MySQL, and only an empty one an error.
//   - SET keeps user variables and reads values from variables, so a
//     dump's SET @OLD_SQL_MODE=@@SQL_MODE … SET SQL_MODE=@OLD_SQL_MODE
//     saves and restores; the variables DuckDB does not have are kept and
//     shown back, as before (time_zone included: quiver works in UTC).
//   - MySQL DDL (ddl.go): a CREATE TABLE or CREATE VIEW that DuckDB cannot
//     run is read with vitess's MySQL parser and written again as DuckDB
//     DDL (types mapped, AUTO_INCREMENT as a sequence, KEY lines as CREATE
//     INDEX, table options dropped); with foreign_key_checks=0, as a dump
//     sets it, foreign keys wait until it is set back to 1. CREATE and DROP
//     DATABASE are schemas; ALTER TABLE … DISABLE/ENABLE KEYS does
//     nothing. DROP TABLE t, out of main, drops the current database's t
//     only (DuckDB alone would fall back to main.t).
//   - A long INSERT … VALUES of literals, as a dump writes a table's rows,
//     goes into DuckDB through its Arrow scan instead of as expressions
//     (restore.go): a 600,000-row table in seconds, not a minute.
//   - LOCK TABLES (lock.go) takes no lock: DuckDB has none, and its MVCC
//     makes no reader wait. A READ lock (and FLUSH TABLES WITH READ LOCK)
//     gives the session one snapshot of the whole database from LOCK TABLES
//     to UNLOCK TABLES, which is what mysqldump locks for; WRITE locks only
//     (a restore's) change nothing, and statements autocommit as in MySQL.
//     Other sessions are never blocked. START TRANSACTION WITH CONSISTENT
//     SNAPSHOT takes its snapshot at once (DuckDB would at the first read),
//     so --single-transaction dumps one snapshot too. SAVEPOINT is kept by
//     name; ROLLBACK TO SAVEPOINT succeeds only when nothing since can have
//     written (savepoint.go), as around each table of a dump.
//
// What a round trip through MySQL's types loses: a FLOAT keeps the six
// digits MySQL prints; LIST, STRUCT and MAP come back as JSON, UUID and
// INTERVAL as VARCHAR (char(36), longtext), HUGEINT as DECIMAL(38,0);
// ON UPDATE, FULLTEXT and SPATIAL keys and foreign key actions (CASCADE)
// are dropped, bit(n) is a BLOB, and zero dates have no DuckDB value.
package mysqlwire
