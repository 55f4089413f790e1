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
// Types: values go out in DuckDB's text form (nested types too, as DuckDB
// casts them to VARCHAR), with MySQL column types: see mysqlField.
//
// Dialect: everything runs on DuckDB as written, except that the
// compatibility layer (compat.go, variables.go) answers what DuckDB cannot
// (SET of MySQL variables, SELECT @@var, SHOW VARIABLES, SHOW TABLES,
// SHOW COLLATION, SHOW KEYS, MySQL's transaction statements and
// autocommit, …), and a lexer pass (split.go) rewrites `backticks`, X'hex'
// literals and charset introducers. A SELECT over MySQL's
// INFORMATION_SCHEMA (TABLES, COLUMNS, SCHEMATA, STATISTICS,
// TABLE_CONSTRAINTS, KEY_COLUMN_USAGE, REFERENTIAL_CONSTRAINTS), as
// Connector/J's DatabaseMetaData sends, is read as MySQL and answered from
// DuckDB's catalog with MySQL's columns (infoschema.go, translate.go); the
// other tables of information_schema are DuckDB's. String literals follow
// DuckDB, where a backslash is an ordinary character; the server says so
// with the NO_BACKSLASH_ESCAPES status flag and sql_mode, so drivers that
// quote parameters themselves (Connector/J, PyMySQL, go-sql-driver with
// interpolateParams) double quotes or send hex instead of escaping with a
// backslash.
package mysqlwire
