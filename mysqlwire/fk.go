package mysqlwire

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/quiverdata/quiver/engine"
)

// Foreign keys deferred by foreign_key_checks=0 (see ddl.go).

// deferredTable is a table created with foreign_key_checks=0 whose foreign
// keys are still to be added.
type deferredTable struct {
	schema, name string
	create       string     // the CREATE TABLE with the foreign keys
	refs         [][]string // the tables they reference: name or schema.name
	comments     []string   // the table's COMMENT ON statements, to run again
}

func (d deferredTable) key() string { return strings.ToLower(d.schema + "." + d.name) }

// deferForeignKeys puts a table on the session's list; a table created
// again replaces its entry.
func (s *session) deferForeignKeys(d deferredTable) {
	for i, old := range s.deferred {
		if old.key() == d.key() {
			s.deferred[i] = d
			return
		}
	}
	s.deferred = append(s.deferred, d)
}

// addDeferredForeignKeys rebuilds each table on the list with its foreign
// keys, in one transaction, a referenced table before the tables that
// reference it (a table that is referenced cannot be renamed). A table
// dropped since is skipped. The list is empty afterwards, whatever
// happened.
func (s *session) addDeferredForeignKeys(ctx context.Context) error {
	pending := s.deferred
	s.deferred = nil
	if len(pending) == 0 {
		return nil
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return err
	}
	var stmts []string
	for _, d := range orderDeferred(pending) {
		more, err := s.rebuildStatements(ctx, conn, d)
		if err != nil {
			return err
		}
		stmts = append(stmts, more...)
	}
	if len(stmts) == 0 {
		return nil
	}
	if err := s.execAll(ctx, append(stmts, "SELECT 1")); err != nil { // "SELECT 1": always a transaction of its own
		var names []string
		for _, d := range pending {
			names = append(names, d.schema+"."+d.name)
		}
		return errorf(mysql.ERCannotAddForeign, sqlStateIntegrity,
			"foreign_key_checks=1: cannot add the foreign keys of %s, which were created with foreign_key_checks=0: %v", strings.Join(names, ", "), errMessage(err))
	}
	return nil
}

// rebuildStatements are the statements that give table d its foreign keys;
// none when it no longer exists.
func (s *session) rebuildStatements(ctx context.Context, conn *engine.Conn, d deferredTable) ([]string, error) {
	where := fmt.Sprintf("database_name = current_database() AND schema_name = %s AND table_name = %s", engine.QuoteString(d.schema), engine.QuoteString(d.name))
	n, err := conn.QueryInt64(ctx, "SELECT count(*) FROM duckdb_tables() WHERE "+where)
	if err != nil || n == 0 {
		return nil, err
	}
	indexes, err := queryStrings(ctx, conn, "SELECT index_name, sql FROM duckdb_indexes() WHERE "+where+" AND sql IS NOT NULL ORDER BY index_oid")
	if err != nil {
		return nil, err
	}
	qschema := engine.QuoteIdent(d.schema)
	qname := qschema + "." + engine.QuoteIdent(d.name)
	aside := d.name + "__quiver_fk"
	var stmts []string
	for _, idx := range indexes {
		stmts = append(stmts, "DROP INDEX "+qschema+"."+engine.QuoteIdent(*idx[0]))
	}
	stmts = append(stmts,
		"ALTER TABLE "+qname+" RENAME TO "+engine.QuoteIdent(aside),
		d.create,
		"INSERT INTO "+qname+" SELECT * FROM "+qschema+"."+engine.QuoteIdent(aside),
		"DROP TABLE "+qschema+"."+engine.QuoteIdent(aside))
	for _, idx := range indexes {
		stmts = append(stmts, *idx[1])
	}
	return append(stmts, d.comments...), nil
}

// orderDeferred orders tables so that one comes after every listed table
// it references.
func orderDeferred(list []deferredTable) []deferredTable {
	byKey := map[string]deferredTable{}
	for _, d := range list {
		byKey[d.key()] = d
	}
	var out []deferredTable
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(d deferredTable)
	visit = func(d deferredTable) {
		k := d.key()
		if state[k] != 0 {
			return
		}
		state[k] = 1
		for _, r := range d.refs {
			schema := d.schema
			if len(r) == 2 {
				schema = r[0]
			}
			if dep, ok := byKey[strings.ToLower(schema+"."+r[len(r)-1])]; ok {
				visit(dep)
			}
		}
		state[k] = 2
		out = append(out, d)
	}
	for _, d := range list {
		visit(d)
	}
	return out
}

// errMessage is an error's message as the client would see it.
func errMessage(err error) string {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return se.Message
	}
	return err.Error()
}
