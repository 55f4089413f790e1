// Package split plans a scan of one large table of quiver's own database as
// several parts, each a range of the table's row ids, so that a Flight SQL
// client fetches them as separate endpoints, in parallel and from any
// replica that holds the same table. quiver serve splits only for a
// session that asks with the split_rows option (Planner.AskedRows): one
// endpoint is faster for a client that reads endpoints in order.
//
// # Which queries split
//
// Only a pure scan of one base table: a SELECT whose FROM names one table,
// with a projection and a WHERE clause and nothing else. No aggregate,
// window function, DISTINCT, GROUP BY, HAVING, QUALIFY, ORDER BY, LIMIT or
// OFFSET, join, subquery, set operation, table function, sample or CTE. For
// such a query the rows of the whole equal the rows of the parts, as a
// multiset, however the table is cut; for anything else (an aggregate over
// each part, a LIMIT per part) they do not.
//
// The shape is decided by DuckDB, not by a parser of quiver's: the query's
// syntax tree comes from json_serialize_sql, and the planner reads that
// tree. Whether a function is an aggregate, a macro or a plain scalar
// function is asked of duckdb_functions(); whether the name in FROM is a
// table (not a view) is asked of the binder, by preparing SELECT rowid
// FROM it.
//
// # How a part runs
//
// Part i adds the conjunct rowid >= lo AND rowid < hi to the WHERE clause
// (the first part has no lower bound, the last no upper one, so every row id
// falls into exactly one part whatever the table holds when it is fetched).
// The rewritten tree goes back to SQL through json_deserialize_sql, and
// that SQL is parsed again and compared with the rewritten tree: a query
// that DuckDB does not print back faithfully is not split. DuckDB pushes a
// rowid range into the table scan (EXPLAIN lists it under the scan's
// Filters) and skips the row groups outside it, so each part reads about
// its share of the table.
//
// Within a part, rows come in the table's order (DuckDB's
// preserve_insertion_order, on by default), so fetching a part twice gives
// the same rows in the same order while the table is unchanged.
//
// # What stays the caller's business
//
// Row ids are physical positions. A part fetched from a replica returns
// that replica's rows in the range, so replicas must hold the same table
// with the same row ids (loaded the same way). Deleting rows and then
// checkpointing may compact row groups and renumber the rows after them; a
// client that fetches some parts before and some after such a change can
// see a row twice or miss one. Queries over tables that change while they
// are fetched get no snapshot across parts.
package split
