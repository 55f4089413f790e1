package engine

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/internal/duckdbsql"
)

// DuckDB binds a statement when it is prepared, and binding a reader of
// files (read_csv, glob, a table named by a file, a view or macro over
// one) lists and opens them: a missing file, a glob that matches nothing
// or a file its reader cannot read fails the prepare with DuckDB's
// message, before the role check of the prepared statement runs. Those
// messages would tell a user who may not read files which files exist in
// the directories DuckDB may reach, their names a character at a time
// through globs, and something of what they hold. So for a caller who is
// not an admin (the user an endpoint put in ctx), whatever DuckDB would
// find on disk:
//   - a statement that calls a [bind] or [lake] function by name, or
//     copies from a file or imports a database, is refused before DuckDB
//     sees it (refuseBeforeBind);
//   - a statement that fails to prepare, when the failure may come from
//     a reader of files it reaches, is refused with the same refusal as
//     the check of its plan gives when it prepares (hideFileState,
//     fileRefusal).
// Admins keep DuckDB's own errors.

// fileReaderFunction is what the refusal of a file read a statement
// reaches indirectly calls the function: the plan would name the reader,
// and the name of one that exists would differ from the error of one
// that does not.
const fileReaderFunction = "a function that reads files"

// fileRefusal is the one refusal a non-admin gets for a statement that
// reaches a reader of files other than by calling it by name, whether or
// not DuckDB could prepare it.
func fileRefusal(u auth.User) error {
	denied := &auth.DeniedError{User: u, Need: auth.AccessAdmin, Function: fileReaderFunction,
		Why: "reads the server's files, here through a view, a macro or a table named by a file"}
	return &Error{Kind: KindPermission, Msg: denied.Error(), err: denied}
}

// nonAdmin returns the caller in ctx when there is one and it is not an
// admin. Statements without a caller are the server's own.
func nonAdmin(ctx context.Context) (auth.User, bool) {
	u, ok := auth.UserFromContext(ctx)
	if !ok || u.Role.IsAdmin() {
		return auth.User{}, false
	}
	return u, true
}

// refuseBeforeBind refuses, for a caller who is not an admin, SQL that
// calls a function DuckDB acts on while binding (FuncBind, FuncLake), or
// that holds a COPY … FROM or an IMPORT DATABASE, whose binding reads
// files too. It reads the text with duckdbsql's lexer, so it can only
// refuse more than the check of the plan would: SQL the lexer cannot
// read is left to DuckDB's parser, which refuses it before binding.
//
// A DESCRIBE, SHOW, SUMMARIZE, PIVOT or CREATE that reaches a reader of
// files in any way (reachesFiles) is refused too: DuckDB binds what they
// read into the statement's columns or the catalog, so their plan shows
// no reader for the check to refuse, and what they give back (a file's
// column names) would tell of its contents.
func (c *Conn) refuseBeforeBind(ctx context.Context, sql string) error {
	u, ok := nonAdmin(ctx)
	if !ok {
		return nil
	}
	toks, err := duckdbsql.Lex(sql)
	if err != nil {
		return nil
	}
	if name, why, ok := bindCall(toks); ok {
		denied := &auth.DeniedError{User: u, Need: auth.AccessAdmin, Function: name, Why: why}
		return &Error{Kind: KindPermission, Msg: denied.Error(), err: denied}
	}
	if kind, ok := readsFilesAsStatement(toks); ok {
		denied := &auth.DeniedError{User: u, Statement: kind, Need: auth.AccessAdmin}
		return &Error{Kind: KindPermission, Msg: denied.Error(), err: denied}
	}
	if bindsWhatItReads(toks) && c.reachesFiles(ctx, sql) {
		return fileRefusal(u)
	}
	return nil
}

// bindsWhatItReads reports whether a statement of toks begins with a
// word whose statement DuckDB answers, in part, as it binds it.
func bindsWhatItReads(toks []duckdbsql.Token) bool {
	start := true
	for _, t := range toks {
		if start {
			for _, w := range []string{"DESCRIBE", "SHOW", "SUMMARIZE", "PIVOT", "UNPIVOT", "CREATE"} {
				if t.IsWord(w) {
					return true
				}
			}
		}
		start = t.Is(";")
	}
	return false
}

// bindCall returns the first call in toks of a function DuckDB acts on
// while binding, and why it needs the admin role.
func bindCall(toks []duckdbsql.Token) (name, why string, ok bool) {
	for i := range toks {
		name, ok := callAt(toks, i)
		if !ok {
			continue
		}
		if class, why, known := FunctionClass(name); known && (class == FuncBind || class == FuncLake) {
			return strings.ToLower(name), why, true
		}
	}
	return "", "", false
}

// callAt returns the function name toks[i] calls: a name followed by an
// opening parenthesis that is not the name of a table being written or
// defined (INSERT INTO t (a), CREATE TABLE t (a)).
func callAt(toks []duckdbsql.Token, i int) (string, bool) {
	t := toks[i]
	if (t.Kind != duckdbsql.Ident && t.Kind != duckdbsql.Quoted) || i+1 >= len(toks) || !toks[i+1].Is("(") {
		return "", false
	}
	if i > 0 {
		for _, w := range []string{"INTO", "TABLE", "REFERENCES", "VIEW", "INDEX", "TYPE"} {
			if toks[i-1].IsWord(w) {
				return "", false
			}
		}
	}
	return t.Value, true
}

// readsFilesAsStatement reports whether one of the statements of toks
// reads files when DuckDB binds it, whatever it calls: COPY … FROM a file
// (the FROM outside parentheses) binds a reader of the file, and IMPORT
// DATABASE reads the exported directory's scripts. It returns the kind
// the refusal names.
func readsFilesAsStatement(toks []duckdbsql.Token) (string, bool) {
	start, depth := true, 0
	copying := false
	for _, t := range toks {
		switch {
		case t.Is(";"):
			start, depth, copying = true, 0, false
			continue
		case t.Is("("):
			depth++
		case t.Is(")"):
			depth--
		case start && t.IsWord("IMPORT"):
			return "IMPORT", true
		case start && t.IsWord("COPY"):
			copying = true
		case copying && depth == 0 && t.IsWord("FROM"):
			return "COPY", true
		}
		start = false
	}
	return "", false
}

// hideFileState returns, for u when u is not an admin, fileRefusal in
// place of DuckDB's failure msg to prepare or plan sql, when the failure
// may come from a reader of files: a message of DuckDB's file system or
// of a file's reader, a table named by a file, or a view or macro of the
// catalog whose body reaches one. It returns nil when msg may go to the
// caller as it is.
func (c *Conn) hideFileState(ctx context.Context, u auth.User, sql, msg string) error {
	if u.Role.IsAdmin() {
		return nil
	}
	if strings.HasPrefix(msg, "Permission Error: ") {
		// DuckDB's sandbox refuses a path outside the allowed
		// directories before it looks at the file, in the same words
		// whether or not the file exists: its message says what the
		// user may do (COPY … TO outside an export root, say), unless
		// a reader the statement reaches met it, where a path inside
		// the directories would get the refusal below.
		if c.reachesFiles(ctx, sql) {
			return fileRefusal(u)
		}
		return nil
	}
	if fileMessage(msg) || c.reachesFiles(ctx, sql) {
		return fileRefusal(u)
	}
	return nil
}

// prepareFailed is the error of DuckDB's failure msg to prepare sql: its
// own message, or for a caller in ctx who is not an admin the refusal
// that hides what DuckDB found of files (hideFileState).
func (c *Conn) prepareFailed(ctx context.Context, sql, msg string) error {
	if u, ok := nonAdmin(ctx); ok {
		if err := c.hideFileState(ctx, u, sql, msg); err != nil {
			c.db.log.Warn("statement refused: its failure may tell of files", "user", u.Name, "err", err.Error())
			return err
		}
	}
	return errorFromMessage(msg)
}

// fileMessage reports whether a DuckDB error message may be about a file:
// its file system's and readers' errors say so.
func fileMessage(msg string) bool {
	lower := strings.ToLower(msg)
	for _, s := range []string{"io error", "file", "glob", "magic", "sniff"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// maxFileReachDepth bounds how deep reachesFiles follows views and
// macros that name other views and macros.
const maxFileReachDepth = 8

// catalogBodiesSQL returns, as a JSON array of {name, sql}, the
// definitions of the views and macros of the catalog named in $1 (a JSON
// array of lowercase names), users' objects and the lake's alike.
const catalogBodiesSQL = `SELECT coalesce(json_group_array(json_object('name', n, 'sql', s))::VARCHAR, '[]') FROM (
	SELECT lower(view_name) AS n, sql AS s FROM duckdb_views() WHERE NOT internal
	UNION ALL
	SELECT lower(function_name), macro_definition FROM duckdb_functions()
	WHERE NOT internal AND macro_definition IS NOT NULL
) WHERE list_contains(from_json($1::VARCHAR, '["VARCHAR"]'), n)`

// reachesFiles reports whether binding sql may read files: it calls a
// reader of files, names a table by a file ('data.csv'), or names a view
// or macro whose body does, through any number of views and macros up
// to maxFileReachDepth. SQL it cannot read, or a catalog it cannot ask,
// counts as reaching files.
func (c *Conn) reachesFiles(ctx context.Context, sql string) bool {
	seen := map[string]bool{}
	texts := []string{sql}
	for depth := 0; len(texts) > 0; depth++ {
		if depth > maxFileReachDepth {
			return true
		}
		var names []string
		for _, text := range texts {
			toks, err := duckdbsql.Lex(text)
			if err != nil || readsFilesDirectly(toks) {
				return true
			}
			for _, t := range toks {
				if t.Kind != duckdbsql.Ident && t.Kind != duckdbsql.Quoted {
					continue
				}
				if n := strings.ToLower(t.Value); !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
		texts = nil
		if len(names) == 0 {
			break
		}
		arg, err := json.Marshal(names)
		if err != nil {
			return true
		}
		js, err := c.checkQuery(ctx, catalogBodiesSQL, string(arg))
		if err != nil {
			return true
		}
		var bodies []struct{ SQL string }
		if err := json.Unmarshal([]byte(js), &bodies); err != nil {
			return true
		}
		for _, b := range bodies {
			texts = append(texts, b.SQL)
		}
	}
	return false
}

// readsFilesDirectly reports whether toks read files without a view or
// macro between: a call of a reader of files, other than the lake's
// read_parquet(getvariable(…)) whose files only an admin or the lake
// catalog set, or a table named by a file (namedByFile), which DuckDB
// reads as a file when no table has that name.
func readsFilesDirectly(toks []duckdbsql.Token) bool {
	// inFrom[d] is set while the tokens at parenthesis depth d are in a
	// FROM list, where a comma is followed by a table.
	inFrom := []bool{false}
	for i, t := range toks {
		if name, ok := callAt(toks, i); ok {
			class, _, known := FunctionClass(name)
			switch {
			case known && class == FuncBind:
				return true
			case known && class == FuncLake && !(i+3 < len(toks) && toks[i+2].IsWord("getvariable") && toks[i+3].Is("(")):
				return true
			}
		}
		top := len(inFrom) - 1
		switch {
		case t.Is("("):
			inFrom = append(inFrom, false)
		case t.Is(")") && top > 0:
			inFrom = inFrom[:top]
		case t.IsWord("FROM"):
			inFrom[top] = true
		case t.Kind == duckdbsql.Ident && endsFromList[strings.ToUpper(t.Text)]:
			inFrom[top] = false
		}
		if i > 0 && namedByFile(toks[i-1], t, inFrom[len(inFrom)-1]) {
			return true
		}
	}
	return false
}

// endsFromList are the words that end a FROM list at their depth.
var endsFromList = map[string]bool{"WHERE": true, "GROUP": true, "HAVING": true, "QUALIFY": true,
	"WINDOW": true, "ORDER": true, "LIMIT": true, "OFFSET": true, "UNION": true, "EXCEPT": true,
	"INTERSECT": true, "SELECT": true, "ON": true, "USING": true, "RETURNING": true, "SET": true,
	"VALUES": true}

// namedByFile reports whether t, after prev, may be a table DuckDB takes
// for a file: a string, or a quoted name that looks like a path, where a
// table goes (FROM 'data.csv', DESCRIBE "data.csv", FROM t, 'data.csv').
func namedByFile(prev, t duckdbsql.Token, inFrom bool) bool {
	str := t.Kind == duckdbsql.String || t.Kind == duckdbsql.Dollar
	pathy := t.Kind == duckdbsql.Quoted && strings.ContainsAny(t.Value, "./*?~")
	if inFrom && prev.Is(",") {
		return str || pathy
	}
	for _, w := range []string{"FROM", "JOIN", "DESCRIBE", "SUMMARIZE", "SHOW", "TABLE", "PIVOT", "UNPIVOT"} {
		if prev.IsWord(w) {
			return str || pathy
		}
	}
	return false
}
