// Package mysqlvalue writes Arrow values as a MySQL server sends them:
// the column definition of a result column, and each value as text for
// the text protocol, for the binary protocol (which vitess reparses from
// that text), and inside the JSON text of a json column.
//
// One table, types (types.go), holds all of it for each Arrow type the
// endpoint serves; an Arrow type it has no entry for is refused with
// ErrUnsupported before a row is sent. Leaf values are written the way
// DuckDB casts them to VARCHAR (text.go), so that a MySQL client reads
// what DuckDB's own shell prints. Nested values (LIST, ARRAY, STRUCT, MAP,
// UNION, ENUM) are written by one walker (walk.go) in one of two forms:
// DuckDB's text, or MySQL's JSON text for the columns the catalog calls
// json.
//
// Writers are built once per column of a record batch, as a tree of
// functions bound to the arrays, so that writing a row allocates nothing
// and switches on no type.
package mysqlvalue
