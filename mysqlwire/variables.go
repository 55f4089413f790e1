package mysqlwire

import (
	"context"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
)

// MySQL system variables. Clients read them on connect (Connector/J asks
// for twenty in one SELECT) and set some (SET NAMES, SET autocommit). The
// session keeps what a client sets and shows it back; apart from
// autocommit, setting them changes nothing in DuckDB.

type varKind uint8

const (
	varString varKind = iota
	varInt            // SELECT @@x returns a number
	varBool           // ON/OFF, or 1/0 from SELECT @@x
)

type sysVar struct {
	name  string
	value string
	kind  varKind
}

// forcedSQLModes are part of sql_mode whatever a client sets, because they
// describe how DuckDB reads SQL: "…" is an identifier.
//
// NO_BACKSLASH_ESCAPES, DuckDB's reading of '…' literals, is in the
// default sql_mode but follows the client: a session that sets a sql_mode
// without it (mysqldump empties sql_mode to dump, and a dump file sets it
// to NO_AUTO_VALUE_ON_ZERO for its restore) writes its literals with
// backslash escapes, and the endpoint reads them so (session.quoting) and
// drops the status flag, so that the client escapes the MySQL way too.
const forcedSQLModes = "ANSI_QUOTES"

// defaultSQLMode is sql_mode until a client sets it.
const defaultSQLMode = "ANSI_QUOTES,NO_BACKSLASH_ESCAPES,ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION"

// systemVars are the variables the endpoint knows, with their defaults.
// version, version_comment, autocommit and the hostname are computed.
var systemVars = []sysVar{
	{"auto_increment_increment", "1", varInt},
	{"auto_increment_offset", "1", varInt},
	{"autocommit", "ON", varBool},
	{"character_set_client", "utf8mb4", varString},
	{"character_set_connection", "utf8mb4", varString},
	{"character_set_database", "utf8mb4", varString},
	{"character_set_filesystem", "binary", varString},
	{"character_set_results", "utf8mb4", varString},
	{"character_set_server", "utf8mb4", varString},
	{"character_set_system", "utf8mb3", varString},
	{"collation_connection", "utf8mb4_general_ci", varString},
	{"collation_database", "utf8mb4_general_ci", varString},
	{"collation_server", "utf8mb4_general_ci", varString},
	{"default_authentication_plugin", "mysql_native_password", varString},
	{"default_storage_engine", "DuckDB", varString},
	{"error_count", "0", varInt},
	{"explicit_defaults_for_timestamp", "ON", varBool},
	{"foreign_key_checks", "ON", varBool},
	{"group_concat_max_len", "1024", varInt},
	{"have_ssl", "DISABLED", varString},
	{"hostname", "", varString},
	{"init_connect", "", varString},
	{"interactive_timeout", "28800", varInt},
	{"last_insert_id", "0", varInt},
	{"lc_messages", "en_US", varString},
	{"lc_time_names", "en_US", varString},
	{"license", "quiver", varString},
	{"lower_case_table_names", "2", varInt},
	{"max_allowed_packet", "67108864", varInt},
	{"max_connections", "1000", varInt},
	{"max_execution_time", "0", varInt},
	{"max_prepared_stmt_count", "16382", varInt},
	{"net_buffer_length", "16384", varInt},
	{"net_read_timeout", "30", varInt},
	{"net_write_timeout", "60", varInt},
	{"performance_schema", "OFF", varBool},
	{"protocol_version", "10", varInt},
	{"query_cache_size", "0", varInt},
	{"query_cache_type", "OFF", varString},
	{"read_only", "OFF", varBool},
	{"sql_auto_is_null", "OFF", varBool},
	{"sql_mode", defaultSQLMode, varString},
	{"sql_safe_updates", "OFF", varBool},
	{"sql_select_limit", "18446744073709551615", varInt},
	{"system_time_zone", "UTC", varString},
	{"time_zone", "SYSTEM", varString},
	{"transaction_isolation", "REPEATABLE-READ", varString},
	{"transaction_read_only", "OFF", varBool},
	{"tx_isolation", "REPEATABLE-READ", varString},
	{"tx_read_only", "OFF", varBool},
	{"unique_checks", "ON", varBool},
	{"version", "", varString},
	{"version_comment", "", varString},
	{"version_compile_machine", runtime.GOARCH, varString},
	{"version_compile_os", runtime.GOOS, varString},
	{"wait_timeout", "28800", varInt},
	{"warning_count", "0", varInt},
}

var systemVarIndex = func() map[string]int {
	sort.Slice(systemVars, func(i, j int) bool { return systemVars[i].name < systemVars[j].name })
	m := make(map[string]int, len(systemVars))
	for i, v := range systemVars {
		m[v.name] = i
	}
	return m
}()

// variable returns the session's value of a system variable: nil for
// NULL, and ok=false for a variable the endpoint does not know.
func (s *session) variable(name string) (val *string, kind varKind, ok bool) {
	name = strings.ToLower(name)
	i, known := systemVarIndex[name]
	if known {
		kind = systemVars[i].kind
	}
	if v, set := s.vars[name]; set {
		if name == "sql_mode" && v != nil {
			mode := withForcedModes(*v)
			v = &mode
		}
		return v, kind, true
	}
	if !known {
		return nil, varString, false
	}
	v := systemVars[i].value
	switch name {
	case "version":
		v = s.srv.opts.ServerVersion
	case "version_comment":
		v = s.srv.versionComment
	case "autocommit":
		v = onOff(s.autocommit)
	case "hostname":
		v = hostname()
	case "max_connections":
		if m := s.srv.opts.MaxConnections; m > 0 {
			v = strconv.Itoa(m)
		}
	case "wait_timeout", "interactive_timeout":
		v = strconv.FormatInt(int64(s.srv.opts.IdleTimeout/time.Second), 10)
	case "net_write_timeout":
		v = strconv.FormatInt(int64(s.srv.opts.WriteTimeout/time.Second), 10)
	case "max_prepared_stmt_count":
		if h := s.srv.opts.Holds; h != nil {
			v = strconv.Itoa(min(h.Limits().Prepared, maxPreparedStatements))
		}
	case "have_ssl":
		if s.srv.opts.TLSConfig != nil {
			v = "YES"
		}
	case "read_only", "transaction_read_only", "tx_read_only":
		if !s.user.Role.CanWrite() {
			v = "ON"
		}
	}
	return &v, kind, true
}

// quoting is how the session's '…' literals read: with backslash escapes
// unless its sql_mode has NO_BACKSLASH_ESCAPES.
func (s *session) quoting() quoting {
	if s.noBackslashEscapes() {
		return quoteStandard
	}
	return quoteBackslash
}

// noBackslashEscapes reports whether the session's sql_mode has
// NO_BACKSLASH_ESCAPES, which the server also says in its status flags.
func (s *session) noBackslashEscapes() bool {
	v, set := s.vars["sql_mode"]
	if !set {
		return true
	}
	if v == nil {
		return false
	}
	for _, m := range strings.Split(*v, ",") {
		if strings.EqualFold(strings.TrimSpace(m), "NO_BACKSLASH_ESCAPES") {
			return true
		}
	}
	return false
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// withForcedModes adds the modes DuckDB always has to a client's sql_mode.
func withForcedModes(mode string) string {
	have := strings.Split(strings.ToUpper(mode), ",")
	out := mode
	for _, m := range strings.Split(forcedSQLModes, ",") {
		found := false
		for _, h := range have {
			found = found || strings.TrimSpace(h) == m
		}
		if !found {
			if out != "" {
				out += ","
			}
			out += m
		}
	}
	return out
}

// selectValue is a variable's value as SELECT @@x returns it: booleans as
// 1 and 0, numbers typed as numbers.
func selectValue(val *string, kind varKind) (sqltypes.Value, querypb.Type) {
	if val == nil {
		return sqltypes.NULL, sqltypes.VarChar
	}
	switch kind {
	case varBool:
		switch strings.ToUpper(*val) {
		case "ON", "1", "TRUE", "YES":
			return sqltypes.NewInt64(1), sqltypes.Int64
		case "OFF", "0", "FALSE", "NO":
			return sqltypes.NewInt64(0), sqltypes.Int64
		}
	case varInt:
		if isDigits(*val) {
			return sqltypes.MakeTrusted(sqltypes.Int64, []byte(*val)), sqltypes.Int64
		}
	}
	return sqltypes.NewVarChar(*val), sqltypes.VarChar
}

func isDigits(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// showVariables is SHOW VARIABLES: every known variable with its session
// value.
func (s *session) showVariables() *table {
	t := &table{cols: []column{{"Variable_name", sqltypes.VarChar}, {"Value", sqltypes.VarChar}}}
	for _, v := range systemVars {
		val, _, _ := s.variable(v.name)
		t.rows = append(t.rows, []*string{strPtr(v.name), val})
	}
	return t
}

var (
	setTransactionRe = regexp.MustCompile(`(?is)^SET\s+(?:(?:GLOBAL|SESSION|LOCAL)\s+)?TRANSACTION\s+(.+)$`)
	isolationRe      = regexp.MustCompile(`(?i)ISOLATION\s+LEVEL\s+(READ\s+UNCOMMITTED|READ\s+COMMITTED|REPEATABLE\s+READ|SERIALIZABLE)`)
	readModeRe       = regexp.MustCompile(`(?i)READ\s+(ONLY|WRITE)`)
	setNamesRe       = regexp.MustCompile(`(?is)^NAMES\s+(\S+)(?:\s+COLLATE\s+(\S+))?$`)
	setCharsetRe     = regexp.MustCompile(`(?is)^(?:CHARACTER\s+SET|CHARSET)\s+(\S+)$`)
	setAssignRe      = regexp.MustCompile(`(?is)^(?:(GLOBAL|SESSION|LOCAL|PERSIST|PERSIST_ONLY)\s+|@@(?:(GLOBAL|SESSION|LOCAL|PERSIST)\.)?)?([a-z_][a-z0-9_]*)\s*:?=\s*(.*)$`)
	setUserVarRe     = regexp.MustCompile("(?is)^@([a-z0-9_$.]+|`[^`]*`|'[^']*'|\"[^\"]*\")\\s*:?=\\s*(.*)$")
)

// userVarKey is where the session keeps the user variable @name among its
// variables: the @ keeps it apart from the system variables.
func userVarKey(name string) string { return "@" + strings.ToLower(unquoteWord(name)) }

// assignment is one "name = value" of a SET statement.
type assignment struct {
	scope, name, value string
}

// compatSet handles SET statements that set MySQL variables. A SET of
// DuckDB's own settings runs on DuckDB; one that mixes both runs the DuckDB
// part there and keeps the MySQL part.
func (s *session) compatSet(ctx context.Context, text string) (compatOutcome, bool, error) {
	if m := setTransactionRe.FindStringSubmatch(text); m != nil {
		if iso := isolationRe.FindStringSubmatch(m[1]); iso != nil {
			level := strings.ToUpper(strings.Join(strings.Fields(iso[1]), "-"))
			s.setVar("transaction_isolation", &level)
			s.setVar("tx_isolation", &level)
		}
		if rm := readModeRe.FindStringSubmatch(m[1]); rm != nil {
			ro := onOff(strings.EqualFold(rm[1], "ONLY"))
			s.setVar("transaction_read_only", &ro)
			s.setVar("tx_read_only", &ro)
		}
		return okOutcome(), true, nil
	}
	body := strings.TrimSpace(text[len("SET"):])
	var local, duck []assignment
	for _, part := range splitTopLevel(body, ',') {
		part = strings.TrimSpace(part)
		if m := setNamesRe.FindStringSubmatch(part); m != nil {
			cs := unquoteWord(m[1])
			local = append(local, assignment{name: "character_set_client", value: cs},
				assignment{name: "character_set_connection", value: cs},
				assignment{name: "character_set_results", value: cs})
			if m[2] != "" {
				local = append(local, assignment{name: "collation_connection", value: unquoteWord(m[2])})
			}
			continue
		}
		if m := setCharsetRe.FindStringSubmatch(part); m != nil {
			cs := unquoteWord(m[1])
			local = append(local, assignment{name: "character_set_client", value: cs},
				assignment{name: "character_set_results", value: cs})
			continue
		}
		if m := setUserVarRe.FindStringSubmatch(part); m != nil {
			local = append(local, assignment{name: userVarKey(m[1]), value: strings.TrimSpace(m[2])})
			continue
		}
		m := setAssignRe.FindStringSubmatch(part)
		if m == nil {
			return compatOutcome{}, false, nil // something DuckDB may know
		}
		a := assignment{scope: strings.ToUpper(m[1] + m[2]), name: strings.ToLower(m[3]), value: strings.TrimSpace(m[4])}
		if _, mysqlVar := systemVarIndex[a.name]; !mysqlVar && s.srv.duckSettings[a.name] {
			duck = append(duck, a)
			continue
		}
		local = append(local, a)
	}
	if len(local) == 0 {
		return compatOutcome{}, false, nil // DuckDB's own SET
	}
	if len(duck) > 0 {
		if err := s.user.Authorize("SET", auth.AccessAdmin); err != nil {
			return compatOutcome{}, true, errorf(mysql.ERSpecifiedAccessDenied, sqlStateSyntax, "Access denied; %v", err)
		}
		conn, err := s.engineConn(ctx)
		if err != nil {
			return compatOutcome{}, true, err
		}
		for _, a := range duck {
			stmt := "SET " + a.scope + " " + a.name + " = " + a.value
			if _, err := conn.Exec(ctx, stmt); err != nil {
				return compatOutcome{}, true, err
			}
			s.dirty = true
		}
	}
	for _, a := range local {
		if err := s.assign(ctx, a); err != nil {
			return compatOutcome{}, true, err
		}
	}
	return okOutcome(), true, nil
}

// assign sets one MySQL variable.
func (s *session) assign(ctx context.Context, a assignment) error {
	val, null, isDefault, ok := s.setValue(a.value)
	if !ok {
		// An expression (CONCAT(@@sql_mode, …)): accepted, not evaluated.
		s.log.Debug("mysql SET value not evaluated", "name", a.name, "value", a.value)
		return nil
	}
	if a.name == "autocommit" {
		on := true
		if !isDefault {
			b, valid := parseBool(val)
			if null || !valid {
				return errorf(mysql.ERWrongValueForVar, sqlStateSyntax, "Variable 'autocommit' can't be set to the value of '%s'", a.value)
			}
			on = b
		}
		return s.setAutocommit(ctx, on)
	}
	if !isDefault && !null {
		val = s.clampToCeiling(a.name, val)
	}
	checksWere := s.foreignKeyChecks()
	switch {
	case isDefault:
		delete(s.vars, a.name)
	case null:
		s.setVar(a.name, nil)
	default:
		s.setVar(a.name, &val)
	}
	switch a.name {
	case "sql_mode":
		s.syncFlags()
	case "foreign_key_checks":
		if !checksWere && s.foreignKeyChecks() {
			return s.addDeferredForeignKeys(ctx)
		}
	case "transaction_isolation", "tx_isolation", "transaction_read_only", "tx_read_only":
		twin := map[string]string{"transaction_isolation": "tx_isolation", "tx_isolation": "transaction_isolation",
			"transaction_read_only": "tx_read_only", "tx_read_only": "transaction_read_only"}[a.name]
		if v, set := s.vars[a.name]; set {
			s.vars[twin] = v
		} else {
			delete(s.vars, twin)
		}
	}
	return nil
}

func (s *session) setVar(name string, v *string) {
	if v != nil {
		c := *v
		v = &c
	}
	s.vars[name] = v
}

// setAutocommit switches autocommit; switching it on commits an open
// transaction, as MySQL does.
func (s *session) setAutocommit(ctx context.Context, on bool) error {
	if on && s.inTxn {
		if _, err := s.conn.Exec(ctx, "COMMIT"); err != nil {
			s.inTxn = false
			s.syncFlags()
			return err
		}
		s.inTxn = false
	}
	s.autocommit = on
	s.syncFlags()
	return nil
}

func parseBool(v string) (bool, bool) {
	switch strings.ToUpper(v) {
	case "1", "ON", "TRUE", "YES":
		return true, true
	case "0", "OFF", "FALSE", "NO":
		return false, true
	}
	return false, false
}

// setValue reads the value of a SET assignment as parseSetValue does, and
// also a variable: @@name (a system variable) or @name (a user variable,
// NULL when unset), as a dump file restores what it saved
// (SET SQL_MODE=@OLD_SQL_MODE).
func (s *session) setValue(v string) (val string, null, isDefault, ok bool) {
	v = strings.TrimSpace(v)
	var ref *string
	switch {
	case strings.HasPrefix(v, "@@"):
		name := strings.ToLower(v[2:])
		if _, after, scoped := strings.Cut(name, "."); scoped {
			name = after
		}
		if !isIdentWord(name) {
			return "", false, false, false
		}
		r, kind, known := s.variable(name)
		if !known {
			return "", false, false, false
		}
		if r != nil {
			sv, _ := selectValue(r, kind)
			str := sv.ToString()
			r = &str
		}
		ref = r
	case strings.HasPrefix(v, "@"):
		if !isIdentWord(unquoteWord(v[1:])) {
			return "", false, false, false
		}
		ref = s.vars[userVarKey(v[1:])]
	default:
		return parseSetValue(v)
	}
	if ref == nil {
		return "", true, false, true
	}
	return *ref, false, false, true
}

// isIdentWord reports whether s is a non-empty run of identifier bytes.
func isIdentWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) && s[i] != '$' {
			return false
		}
	}
	return true
}

// foreignKeyChecks reports whether the session's foreign_key_checks is on.
func (s *session) foreignKeyChecks() bool {
	v, _, _ := s.variable("foreign_key_checks")
	if v == nil {
		return true
	}
	on, ok := parseBool(*v)
	return on || !ok
}

// parseSetValue reads the value of a SET assignment: a string literal, a
// number, a bare word (utf8mb4, ON), NULL or DEFAULT. ok is false for an
// expression.
func parseSetValue(v string) (val string, null, isDefault, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", false, false, false
	}
	if v[0] == '\'' || v[0] == '"' {
		s, rest, ok := parseStringLiteral(v)
		if !ok || strings.TrimSpace(rest) != "" {
			return "", false, false, false
		}
		return s, false, false, true
	}
	switch strings.ToUpper(v) {
	case "NULL":
		return "", true, false, true
	case "DEFAULT":
		return "", false, true, true
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isIdentByte(c) && c != '.' && c != '-' && c != '+' {
			return "", false, false, false
		}
	}
	return v, false, false, true
}

// compatSelectVars answers a SELECT whose every item is a system variable
// or one of a few MySQL functions (DATABASE(), USER(), VERSION(),
// CONNECTION_ID(), …), with an optional alias, FROM DUAL and LIMIT.
func (s *session) compatSelectVars(ctx context.Context, text string) (compatOutcome, bool, error) {
	if !strings.Contains(text, "@@") && !strings.Contains(text, "(") && !strings.Contains(strings.ToLower(text), "current_user") {
		return compatOutcome{}, false, nil
	}
	m := selectListRe.FindStringSubmatch(text)
	if m == nil {
		return compatOutcome{}, false, nil
	}
	list, limit := m[1], m[2]
	type item struct{ expr, alias string }
	var items []item
	for _, part := range splitTopLevel(list, ',') {
		im := selectItemRe.FindStringSubmatch(strings.TrimSpace(part))
		if im == nil {
			return compatOutcome{}, false, nil
		}
		alias := im[1]
		if im[2] != "" {
			alias = unquoteWord(im[2])
		}
		items = append(items, item{expr: im[1], alias: alias})
	}
	fields := make([]*querypb.Field, len(items))
	row := make([]sqltypes.Value, len(items))
	for i, it := range items {
		val, typ, err := s.selectItem(ctx, it.expr)
		if err != nil {
			return compatOutcome{}, true, err
		}
		row[i] = val
		fields[i] = fieldNamed(it.alias, typ)
	}
	res := &sqltypes.Result{Fields: fields}
	if limit != "0" {
		res.Rows = [][]sqltypes.Value{row}
	}
	return compatOutcome{res: res}, true, nil
}

var (
	selectListRe = regexp.MustCompile(`(?is)^SELECT\s+(.+?)(?:\s+FROM\s+DUAL)?(?:\s+LIMIT\s+(\d+))?$`)
	selectItemRe = regexp.MustCompile(`(?is)^(@@(?:(?:global|session|local)\.)?[a-z_][a-z0-9_]*|(?:database|schema|user|current_user|session_user|system_user|version|connection_id|last_insert_id)\s*\(\s*\)|current_user)(?:\s+(?:AS\s+)?(` + "`[^`]*`" + `|"[^"]*"|'[^']*'|[a-z_][a-z0-9_$]*))?$`)
)

// selectItem evaluates one item of a compatibility SELECT.
func (s *session) selectItem(ctx context.Context, expr string) (sqltypes.Value, querypb.Type, error) {
	lower := strings.ToLower(expr)
	if name, ok := strings.CutPrefix(lower, "@@"); ok {
		if _, after, scoped := strings.Cut(name, "."); scoped {
			name = after
		}
		val, kind, known := s.variable(name)
		if !known {
			return sqltypes.NULL, 0, errorf(mysql.ERUnknownSystemVariable, mysql.SSUnknownSQLState, "Unknown system variable '%s'", name)
		}
		v, typ := selectValue(val, kind)
		return v, typ, nil
	}
	fn, _, _ := strings.Cut(lower, "(")
	switch strings.TrimSpace(fn) {
	case "database", "schema":
		schema, err := s.currentSchema(ctx)
		if err != nil {
			return sqltypes.NULL, 0, err
		}
		return sqltypes.NewVarChar(schema), sqltypes.VarChar, nil
	case "user", "session_user", "system_user":
		return sqltypes.NewVarChar(s.user.Name + "@" + s.host), sqltypes.VarChar, nil
	case "current_user":
		return sqltypes.NewVarChar(s.user.Name + "@%"), sqltypes.VarChar, nil
	case "version":
		return sqltypes.NewVarChar(s.srv.opts.ServerVersion), sqltypes.VarChar, nil
	case "connection_id":
		return sqltypes.NewInt64(int64(s.id)), sqltypes.Int64, nil
	}
	return sqltypes.NewInt64(0), sqltypes.Int64, nil // last_insert_id
}

// currentSchema is DuckDB's current schema: the MySQL database in use.
func (s *session) currentSchema(ctx context.Context) (string, error) {
	conn, err := s.engineConn(ctx)
	if err != nil {
		return "", err
	}
	rows, err := queryStrings(ctx, conn, "SELECT current_schema()")
	if err != nil {
		return "", err
	}
	if len(rows) != 1 || rows[0][0] == nil {
		return "", errorf(mysql.ERUnknownError, mysql.SSUnknownSQLState, "no current schema")
	}
	return *rows[0][0], nil
}

// useDatabase makes name the default database: DuckDB's USE, which takes
// a schema of the current catalog, a catalog, or catalog.schema.
func (s *session) useDatabase(ctx context.Context, name string) error {
	name = strings.TrimSpace(name)
	if name == "" {
		return errorf(mysql.ERNoDb, mysql.SSNoDB, "No database selected")
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return err
	}
	parts := strings.SplitN(name, ".", 2)
	for i, p := range parts {
		parts[i] = engine.QuoteIdent(p)
	}
	target := strings.Join(parts, ".")
	s.dirty = true
	if _, err := conn.Exec(ctx, "USE "+target); err != nil {
		if k := engine.KindOf(err); k == engine.KindNotFound || k == engine.KindInvalid {
			return errorf(mysql.ERBadDb, sqlStateSyntax, "Unknown database '%s'", name)
		}
		return err
	}
	s.database = target
	return nil
}

// hostname is the machine's name, for @@hostname.
var hostname = sync.OnceValue(func() string {
	name, _ := os.Hostname()
	return name
})
