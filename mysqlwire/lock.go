package mysqlwire

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/quiverdata/quiver/engine"
)

// LOCK TABLES, UNLOCK TABLES and FLUSH TABLES WITH READ LOCK.
//
// DuckDB has no table locks, and its MVCC never makes a reader wait for a
// writer or a writer for a reader. What a MySQL client locks tables for is
// mostly what mysqldump locks them for: to read several tables as of one
// moment. That, quiver gives with a snapshot:
//
//   - LOCK TABLES with at least one READ lock, and FLUSH TABLES WITH READ
//     LOCK, begin a transaction and take its snapshot at once. Everything
//     the session reads until UNLOCK TABLES comes from that one snapshot
//     of the database, whatever other sessions commit meanwhile. Writes the
//     session makes meanwhile belong to the transaction and commit at
//     UNLOCK TABLES (MySQL would refuse them on a READ-locked table).
//   - LOCK TABLES with WRITE locks only (a dump's restore side) changes
//     nothing: statements autocommit one by one, as under MySQL.
//   - Neither blocks anybody: other sessions go on reading and writing the
//     tables. Two writers of the same rows conflict at commit (DuckDB's
//     optimistic concurrency) instead of waiting for each other.
//
// As in MySQL, LOCK TABLES commits a transaction the session has open; and
// UNLOCK TABLES, when tables are locked, commits the open transaction, and
// otherwise does nothing (mysqldump --single-transaction sends it right
// after START TRANSACTION, whose snapshot must live on). START TRANSACTION
// and BEGIN release the locks; COMMIT and ROLLBACK do not, so a READ lock
// takes a new snapshot after them. LOCK TABLES checks that its tables exist.

// tableLocks is what LOCK TABLES left on a session.
type tableLocks struct {
	held     bool // LOCK TABLES (or FLUSH TABLES WITH READ LOCK) and no UNLOCK TABLES since
	snapshot bool // a READ lock: the session reads one snapshot, in a transaction the lock began
}

var (
	lockItemRe  = regexp.MustCompile(`(?is)^(.*?)\s+(READ(?:\s+LOCAL)?|(?:LOW_PRIORITY\s+)?WRITE(?:\s+CONCURRENT)?)$`)
	lockAliasRe = regexp.MustCompile(`(?is)^(.*?)\s+(?:AS\s+)?(\S+)$`)
)

// lockTables is LOCK TABLES t [[AS] a] READ [LOCAL] | [LOW_PRIORITY] WRITE, ….
func (s *session) lockTables(ctx context.Context, m []string) (compatOutcome, error) {
	var names [][]string
	read := false
	for _, item := range splitTopLevel(m[1], ',') {
		im := lockItemRe.FindStringSubmatch(strings.TrimSpace(item))
		if im == nil {
			return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", strings.TrimSpace(item))
		}
		name, ok := parseQualifiedName(im[1])
		if !ok {
			if am := lockAliasRe.FindStringSubmatch(im[1]); am != nil {
				name, ok = parseQualifiedName(am[1])
			}
		}
		if !ok {
			return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", im[1])
		}
		names = append(names, name)
		read = read || strings.HasPrefix(strings.ToUpper(im[2]), "READ")
	}
	if err := s.checkTablesExist(ctx, names); err != nil {
		return compatOutcome{}, err
	}
	if err := s.lock(ctx, read); err != nil {
		return compatOutcome{}, err
	}
	return okOutcome(), nil
}

// flushTables is FLUSH …: FLUSH TABLES … WITH READ LOCK locks every table
// for reading (a snapshot, as LOCK TABLES … READ); the other FLUSH
// statements have nothing to do.
func (s *session) flushTables(ctx context.Context, m []string) (compatOutcome, error) {
	if m[1] == "" {
		return okOutcome(), nil
	}
	if err := s.lock(ctx, true); err != nil {
		return compatOutcome{}, err
	}
	return okOutcome(), nil
}

// lock commits an open transaction and takes the locks: with read, a
// transaction whose snapshot the session reads until UNLOCK TABLES.
func (s *session) lock(ctx context.Context, read bool) error {
	s.locks = tableLocks{}
	if s.inTxn {
		if _, err := s.endTransaction(ctx, "COMMIT"); err != nil {
			return err
		}
	}
	s.locks.held = true
	if read {
		if err := s.beginSnapshot(ctx); err != nil {
			s.locks = tableLocks{}
			return err
		}
		s.locks.snapshot = true
	}
	return nil
}

// unlockTables is UNLOCK TABLES: with tables locked, it commits the open
// transaction; without, it does nothing.
func (s *session) unlockTables(ctx context.Context, _ []string) (compatOutcome, error) {
	if !s.locks.held {
		return okOutcome(), nil
	}
	s.locks = tableLocks{}
	return s.endTransaction(ctx, "COMMIT")
}

// snapshotSQL reads the catalog of every attached database, which makes
// DuckDB start the transaction's snapshot of each: DuckDB otherwise takes
// a database's snapshot when the transaction first reads it.
const snapshotSQL = "SELECT count(*) FROM duckdb_schemas()"

// beginSnapshot begins a transaction whose snapshot is taken now, as
// MySQL's START TRANSACTION WITH CONSISTENT SNAPSHOT does.
func (s *session) beginSnapshot(ctx context.Context) error {
	conn, err := s.engineConn(ctx)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
		s.syncFlags()
		return err
	}
	s.inTxn = true
	s.syncFlags()
	if _, err := conn.Exec(ctx, snapshotSQL); err != nil {
		return fmt.Errorf("take snapshot: %w", err)
	}
	return nil
}

// checkTablesExist returns MySQL's "doesn't exist" error for the first of
// names (each name or db.name) that is neither a table nor a view of the
// current catalog.
func (s *session) checkTablesExist(ctx context.Context, names [][]string) error {
	if len(names) == 0 {
		return nil
	}
	var vals []string
	for _, n := range names {
		schema := "current_schema()"
		if len(n) == 2 {
			schema = engine.QuoteString(n[0])
		}
		vals = append(vals, fmt.Sprintf("(%d, %s, %s)", len(vals), schema, engine.QuoteString(n[len(n)-1])))
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return err
	}
	rows, err := queryStrings(ctx, conn, `SELECT n.s, n.t FROM (VALUES `+strings.Join(vals, ", ")+`) n(i, s, t)
		WHERE NOT EXISTS (SELECT 1 FROM duckdb_tables() d WHERE d.database_name = current_database() AND lower(d.schema_name) = lower(n.s) AND lower(d.table_name) = lower(n.t))
		AND NOT EXISTS (SELECT 1 FROM duckdb_views() d WHERE d.database_name = current_database() AND lower(d.schema_name) = lower(n.s) AND lower(d.view_name) = lower(n.t))
		ORDER BY n.i LIMIT 1`)
	if err != nil {
		return err
	}
	if len(rows) > 0 && rows[0][0] != nil && rows[0][1] != nil {
		return errorf(mysql.ERNoSuchTable, sqlStateNoSuchTable, "Table '%s.%s' doesn't exist", *rows[0][0], *rows[0][1])
	}
	return nil
}
