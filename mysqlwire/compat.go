package mysqlwire

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

// The compatibility layer answers the MySQL statements that DuckDB cannot:
// session statements (SET, SELECT @@var), SHOW commands, USE, MySQL's
// transaction statements and KILL. Each rule is a pattern over the
// statement text (comments and the trailing semicolon stripped) and a
// function that returns either a finished result or DuckDB SQL to run in
// the statement's place. Statements no rule matches go to DuckDB as
// written.

// compatOutcome is what a compatibility rule produced: a result to send
// (rows, or an OK when it has no fields), or SQL for DuckDB to run instead.
type compatOutcome struct {
	res *sqltypes.Result
	sql string
}

func okOutcome() compatOutcome { return compatOutcome{res: &sqltypes.Result{}} }

func sqlOutcome(sql string) compatOutcome { return compatOutcome{sql: sql} }

// compatRule answers statements matching re; run gets re's submatches.
type compatRule struct {
	re  *regexp.Regexp
	run func(s *session, ctx context.Context, m []string) (compatOutcome, error)
}

func rule(pattern string, run func(s *session, ctx context.Context, m []string) (compatOutcome, error)) compatRule {
	return compatRule{re: regexp.MustCompile(`(?is)^` + pattern + `$`), run: run}
}

// A LIKE or WHERE filter at the end of a SHOW statement: submatches kind
// and expression.
const filterRe = `(?:\s+(LIKE|WHERE)\s+(.+))?`

// compatRules holds the rules by the statement's first keyword, so most
// statements are checked against none.
var compatRules = map[string][]compatRule{
	"SHOW": {
		rule(`SHOW\s+(?:(?:GLOBAL|SESSION|LOCAL)\s+)?VARIABLES`+filterRe, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return s.filterTable(s.showVariables(), m[1], m[2])
		}),
		rule(`SHOW\s+(?:(?:GLOBAL|SESSION|LOCAL)\s+)?STATUS`+filterRe, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return s.filterTable(s.showStatus(), m[1], m[2])
		}),
		rule(`SHOW\s+(?:WARNINGS|ERRORS)(?:\s+LIMIT\s+[0-9,\s]+)?`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			t := &table{cols: []column{{"Level", sqltypes.VarChar}, {"Code", sqltypes.Int64}, {"Message", sqltypes.VarChar}}}
			return compatOutcome{res: t.result()}, nil
		}),
		rule(`SHOW\s+COUNT\s*\(\s*\*\s*\)\s+(WARNINGS|ERRORS)`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			name := "@@session.warning_count"
			if strings.EqualFold(m[1], "ERRORS") {
				name = "@@session.error_count"
			}
			t := &table{cols: []column{{name, sqltypes.Int64}}, rows: [][]*string{{strPtr("0")}}}
			return compatOutcome{res: t.result()}, nil
		}),
		rule(`SHOW\s+COLLATION`+filterRe, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return s.filterTable(collations, m[1], m[2])
		}),
		rule(`SHOW\s+(?:CHARACTER\s+SET|CHARSET)`+filterRe, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return s.filterTable(charsets, m[1], m[2])
		}),
		rule(`SHOW\s+ENGINES`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return compatOutcome{res: engines.result()}, nil
		}),
		rule(`SHOW\s+(?:FULL\s+)?PROCESSLIST`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return compatOutcome{res: s.srv.processList().result()}, nil
		}),
		rule(`SHOW\s+(?:DATABASES|SCHEMAS)`+filterRe, (*session).showDatabases),
		rule(`SHOW\s+(FULL\s+)?TABLES(?:\s+(?:FROM|IN)\s+(\S+))?`+filterRe, (*session).showTables),
		rule(`SHOW\s+(FULL\s+)?(?:COLUMNS|FIELDS)\s+(?:FROM|IN)\s+(\S+)(?:\s+(?:FROM|IN)\s+(\S+))?`+filterRe, (*session).showColumns),
		rule(`SHOW\s+(?:EXTENDED\s+)?(?:INDEX|INDEXES|KEYS)\s+(?:FROM|IN)\s+(\S+)(?:\s+(?:FROM|IN)\s+(\S+))?(?:\s+WHERE\s+(.+))?`, (*session).showKeys),
		rule(`SHOW\s+CREATE\s+(?:TABLE|VIEW)\s+(\S+)`, (*session).showCreateTable),
	},
	"DESC": {
		rule("DESC\\s+([^\\s(]+)", func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return s.showColumns(ctx, []string{m[0], "", m[1], "", "", ""})
		}),
	},
	"DESCRIBE": {
		rule("DESCRIBE\\s+((?:[a-z_][a-z0-9_$]*|`[^`]+`|\"[^\"]+\")(?:\\.(?:[a-z_][a-z0-9_$]*|`[^`]+`|\"[^\"]+\"))?)", func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return s.showColumns(ctx, []string{m[0], "", m[1], "", "", ""})
		}),
	},
	"USE": {
		rule(`USE\s+(\S+)`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			parts, ok := parseQualifiedName(m[1])
			if !ok {
				return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", m[1])
			}
			if err := s.useDatabase(ctx, strings.Join(parts, ".")); err != nil {
				return compatOutcome{}, err
			}
			return okOutcome(), nil
		}),
	},
	"BEGIN":  {rule(`BEGIN(?:\s+(?:WORK|TRANSACTION))?`, (*session).beginTransaction)},
	"START":  {rule(`START\s+TRANSACTION(?:\s+(.*))?`, (*session).beginTransaction)},
	"LOCK":   {rule(`LOCK\s+TABLES?\s+(.+)`, (*session).lockTables)},
	"UNLOCK": {rule(`UNLOCK\s+TABLES?`, (*session).unlockTables)},
	"FLUSH":  {rule(`FLUSH\s+(?:(?:NO_WRITE_TO_BINLOG|LOCAL)\s+)?(?:TABLES?\b.*?(\sWITH\s+READ\s+LOCK)|.+)`, (*session).flushTables)},
	"COMMIT": {rule(`COMMIT(?:\s+(?:WORK|TRANSACTION))?`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
		return s.endTransaction(ctx, "COMMIT")
	})},
	"END": {rule(`END(?:\s+(?:WORK|TRANSACTION))?`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
		return s.endTransaction(ctx, "COMMIT")
	})},
	"ROLLBACK": {
		rule(`ROLLBACK(?:\s+(?:WORK|TRANSACTION))?`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
			return s.endTransaction(ctx, "ROLLBACK")
		}),
		rule(`ROLLBACK(?:\s+WORK)?\s+TO\s+(?:SAVEPOINT\s+)?(\S+)`, (*session).rollbackToSavepoint),
	},
	"SAVEPOINT": {rule(`SAVEPOINT\s+(\S+)`, (*session).setSavepoint)},
	"RELEASE":   {rule(`RELEASE\s+SAVEPOINT\s+(\S+)`, (*session).releaseSavepoint)},
	"ABORT": {rule(`ABORT(?:\s+(?:WORK|TRANSACTION))?`, func(s *session, ctx context.Context, m []string) (compatOutcome, error) {
		return s.endTransaction(ctx, "ROLLBACK")
	})},
	"KILL": {rule(`KILL\s+(?:(QUERY|CONNECTION)\s+)?(\d+)`, (*session).killStatement)},
}

// isCompatKeyword reports whether statements starting with word may be
// answered by the layer (SELECT aside, which it answers only in part).
func isCompatKeyword(word string) bool {
	_, ok := compatRules[strings.ToUpper(word)]
	return ok || strings.EqualFold(word, "SET")
}

// compat answers text if a rule matches it. handled is false when the
// statement should run on DuckDB as written.
//
// A long INSERT … VALUES of literals goes in through DuckDB's Arrow scan
// (restore.go). Then two readings of the text come first. In a session
// that writes its literals with backslash escapes (session.quoting), they
// are rewritten as DuckDB reads them, and the statement then always runs
// as rewritten. The rules see the executable comments' bodies (START
// TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */), as MySQL would; a
// statement no rule answers keeps them as comments, which DuckDB skips
// (they hold MySQL-only options such as SELECT /*!40001 SQL_NO_CACHE */).
func (s *session) compat(ctx context.Context, text string) (out compatOutcome, handled bool, err error) {
	s.noteStatement(firstWord(text))
	if len(text) >= fastInsertMinBytes && strings.EqualFold(firstWord(text), "INSERT") {
		if out, handled, err = s.fastInsert(ctx, text, s.quoting()); handled || err != nil {
			return out, true, err
		}
	}
	rewritten := false
	if s.quoting() == quoteBackslash {
		if text, rewritten, err = s.rewriteBackslashes(ctx, text); err != nil {
			return compatOutcome{}, true, err
		}
	}
	out, handled, err = s.compatRules(ctx, text)
	if !handled && err == nil && rewritten {
		return sqlOutcome(duckSQL(text)), true, nil
	}
	return out, handled, err
}

// compatRules answers text if a rule matches it.
func (s *session) compatRules(ctx context.Context, text string) (out compatOutcome, handled bool, err error) {
	mysqlText := execComments(text)
	word := strings.ToUpper(firstWord(strings.TrimSpace(mysqlText)))
	switch word {
	case "SET":
		return s.compatSet(ctx, strings.TrimSpace(mysqlText))
	case "SELECT":
		return s.compatSelectVars(ctx, text)
	case "CREATE", "DROP", "ALTER":
		return s.compatDDL(ctx, word, text, strings.TrimSpace(mysqlText))
	}
	for _, r := range compatRules[word] {
		if m := r.re.FindStringSubmatch(strings.TrimSpace(mysqlText)); m != nil {
			out, err := r.run(s, ctx, m)
			return out, true, err
		}
	}
	return compatOutcome{}, false, nil
}

var (
	consistentSnapshotRe = regexp.MustCompile(`(?i)\bWITH\s+CONSISTENT\s+SNAPSHOT\b`)
	transactionModesRe   = regexp.MustCompile(`(?i)^(?:\s*(?:WITH\s+CONSISTENT\s+SNAPSHOT|READ\s+ONLY|READ\s+WRITE)\s*(?:,|$))*$`)
)

// beginTransaction is BEGIN and START TRANSACTION [WITH CONSISTENT
// SNAPSHOT | READ ONLY | READ WRITE, …]. As in MySQL, beginning a
// transaction commits one that is open and releases table locks. DuckDB
// takes a transaction's snapshot when it first reads the database; WITH
// CONSISTENT SNAPSHOT takes it at once, so that the transaction sees
// nothing committed after START TRANSACTION returned.
func (s *session) beginTransaction(ctx context.Context, m []string) (compatOutcome, error) {
	modes := ""
	if len(m) > 1 {
		modes = m[1]
	}
	if !transactionModesRe.MatchString(modes) {
		return compatOutcome{}, errorf(mysql.ERParseError, sqlStateSyntax, "You have an error in your SQL syntax near '%s'", modes)
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return compatOutcome{}, err
	}
	s.locks, s.savepoints = tableLocks{}, savepoints{}
	if s.inTxn {
		s.inTxn = false
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			s.syncFlags()
			return compatOutcome{}, err
		}
	}
	if consistentSnapshotRe.MatchString(modes) {
		if err := s.beginSnapshot(ctx); err != nil {
			return compatOutcome{}, err
		}
		return okOutcome(), nil
	}
	if _, err := conn.Exec(ctx, "BEGIN TRANSACTION"); err != nil {
		s.syncFlags()
		return compatOutcome{}, err
	}
	s.inTxn = true
	s.syncFlags()
	return okOutcome(), nil
}

// endTransaction is COMMIT or ROLLBACK; with no transaction open it does
// nothing, as in MySQL (DuckDB would report an error). Under a READ lock
// the session then reads a new snapshot (see lock.go).
func (s *session) endTransaction(ctx context.Context, stmt string) (compatOutcome, error) {
	s.savepoints = savepoints{}
	if !s.inTxn || s.conn == nil {
		return okOutcome(), nil
	}
	s.inTxn = false
	s.syncFlags()
	if _, err := s.conn.Exec(ctx, stmt); err != nil {
		return compatOutcome{}, err
	}
	if s.locks.snapshot {
		if err := s.beginSnapshot(ctx); err != nil {
			return compatOutcome{}, err
		}
	}
	return okOutcome(), nil
}

// killStatement is KILL [QUERY|CONNECTION] id. A user may kill its own
// connections; an admin any.
func (s *session) killStatement(_ context.Context, m []string) (compatOutcome, error) {
	id, err := strconv.ParseUint(m[2], 10, 32)
	if err != nil {
		return compatOutcome{}, errorf(mysql.ERNoSuchThread, mysql.SSUnknownSQLState, "Unknown thread id: %s", m[2])
	}
	target := s.srv.session(uint32(id))
	if target == nil {
		return compatOutcome{}, errorf(mysql.ERNoSuchThread, mysql.SSUnknownSQLState, "Unknown thread id: %d", id)
	}
	if !s.user.Role.IsAdmin() && target.userName() != s.user.Name {
		return compatOutcome{}, errorf(mysql.ERKillDenied, mysql.SSUnknownSQLState, "You are not owner of thread %d", id)
	}
	if strings.EqualFold(m[1], "QUERY") {
		target.interrupt()
	} else {
		target.kill()
	}
	return okOutcome(), nil
}
