// Package duckdbsql is quiver's one reader of SQL in DuckDB's dialect and
// of the JSON trees DuckDB gives for it.
//
// It has three parts:
//   - A lexer that follows DuckDB's (PostgreSQL's) lexical rules: -- and
//     nested /* */ comments, '…' strings with doubled quotes, E'…'
//     strings with backslash escapes, "…" names, $tag$…$tag$ strings,
//     and ?, $1 and $name parameters. On it stand statement splitting
//     (Split), the leading words of a statement (LeadingWords) and the
//     statement an EXPLAIN explains (ExplainTargets), and what a
//     statement's shape costs DuckDB's parser (Measure). The export's
//     COPY parser, admission's query shapes, the Flight SQL server's
//     reading of a batched INSERT and the segment exporter's partition
//     spec read tokens from it too.
//   - A reader of the plans DuckDB's json_serialize_plan gives
//     (ReadPlan): which functions and table functions a statement would
//     call, once DuckDB has bound it, with views and macros expanded.
//   - Typed readers of json_serialize_sql's syntax trees (ReadTree, with
//     BaseTables, Conjuncts and RecursiveCTE) and of EXPLAIN (FORMAT
//     json) plans (ReadExplain), for lake pruning, the split planner,
//     admission and the export. A DuckDB that writes its JSON another way
//     is fixed here, and its tests against the linked DuckDB say so.
//
// Nothing here decides on its own what a statement does: a security
// decision takes the functions from DuckDB's bound plan, and where the
// lexer's reading of a text matters (a script's statements, the target of
// an EXPLAIN), the caller holds it against DuckDB's own parser and refuses
// what does not agree (see engine's access check).
package duckdbsql
