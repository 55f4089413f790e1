package mysqlwire

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/mysqlwire/mysqlvalue"
)

// maxPreparedStatements bounds the statements one connection may keep
// prepared, as MySQL's max_prepared_stmt_count does.
const maxPreparedStatements = 16382

// prepared is a statement a client prepared with COM_STMT_PREPARE.
type prepared struct {
	sql string // as the client sent it
	// stmt is the engine statement; nil for a statement the compatibility
	// layer answers (SET, SHOW, SELECT @@…), which runs from its text.
	stmt *engine.Stmt
	// blob marks the parameters DuckDB types as BLOB: they bind as bytes
	// rather than as text to cast.
	blob []bool
	// lease charges the statement and its parameters to the session
	// (holds.go); paramErr, when set, is why its long data was dropped.
	lease    *admit.Lease
	paramErr error
}

func (p *prepared) numParams() int {
	if p.stmt == nil {
		return 0
	}
	return p.stmt.NumParams()
}

func (p *prepared) close() {
	if p.stmt != nil {
		p.stmt.Close()
	}
	p.lease.Release()
}

// ComPrepare prepares a statement on DuckDB and reports its result
// columns and parameter count. vitess has already parsed the SQL as MySQL
// by then (it refuses what it cannot parse); the count it found is
// replaced by DuckDB's.
func (h *handler) ComPrepare(_ context.Context, c *mysql.Conn, query string, pd *mysql.PrepareData) (fields []*querypb.Field, err error) {
	s := sessionOf(c)
	if !s.mu.TryLock() {
		return nil, errBusy
	}
	defer s.mu.Unlock()
	defer s.recoverPanic(&err)
	if err := s.startCommand(); err != nil {
		return nil, err
	}
	if len(s.stmts) >= maxPreparedStatements {
		return nil, errorf(erMaxPreparedStmtCount, sqlStateSyntax,
			"Can't create more than max_prepared_stmt_count statements (current value: %d)", maxPreparedStatements)
	}
	// The SQL is kept twice: vitess's copy and the engine's.
	lease, err := s.holds.Take(admit.HoldPrepared, 2*int64(len(query)))
	if err != nil {
		return nil, holdError(err)
	}
	queriesTotal.WithLabelValues(cmdPrepare).Inc()
	ctx, done := s.statementContext()
	defer done()
	p, fields, err := s.prepare(ctx, query)
	if err != nil {
		lease.Release()
		se := sqlError(err)
		queryErrors.WithLabelValues(strconv.Itoa(se.Num)).Inc()
		s.log.Debug("mysql prepare failed", logSQL, truncate(query, 200), logCode, se.Num, logErr, se.Message)
		return nil, se
	}
	p.lease = lease
	n := p.numParams()
	pd.ParamsCount = uint16(n)
	pd.ParamsType = make([]int32, n)
	pd.BindVars = make(map[string]*querypb.BindVariable, n)
	s.stmts[pd.StatementID] = p
	return fields, nil
}

// prepare builds the prepared statement for query and its result columns.
func (s *session) prepare(ctx context.Context, query string) (*prepared, []*querypb.Field, error) {
	text := stripSQL(query)
	if text == "" {
		return nil, nil, errEmptyQuery
	}
	word := firstWord(text)
	if isCompatKeyword(word) || strings.EqualFold(word, "SELECT") {
		p := &prepared{sql: query}
		if !strings.EqualFold(word, "SELECT") && !strings.EqualFold(word, "SHOW") {
			return p, nil, nil // a session statement: no result columns
		}
		out, handled, err := s.compat(ctx, text)
		switch {
		case err != nil:
			return nil, nil, err
		case handled && out.sql == "":
			return p, out.res.Fields, nil
		case handled:
			fields, err := s.columnsOf(ctx, out.sql)
			return p, fields, err
		}
	}
	conn, err := s.engineConn(ctx)
	if err != nil {
		return nil, nil, err
	}
	stmt, err := conn.Prepare(ctx, duckSQL(query))
	if err != nil {
		return nil, nil, err
	}
	p := &prepared{sql: query, stmt: stmt}
	params, err := stmt.ParamSchema()
	if err != nil {
		stmt.Close()
		return nil, nil, err
	}
	p.blob = make([]bool, params.NumFields())
	for i, f := range params.Fields() {
		p.blob[i] = mysqlvalue.IsBytes(f.Type)
	}
	if !stmt.IsQuery() {
		return p, nil, nil
	}
	schema, err := stmt.Schema()
	if err != nil {
		// DuckDB cannot type the result before its parameters are bound
		// (SELECT ? + 1): the columns come with the first execution.
		return p, nil, nil
	}
	fields, err := fieldsOf(schema)
	if err != nil {
		stmt.Close()
		return nil, nil, err
	}
	return p, fields, nil
}

// columnsOf prepares sql on DuckDB only to learn its result columns.
func (s *session) columnsOf(ctx context.Context, sql string) ([]*querypb.Field, error) {
	conn, err := s.engineConn(ctx)
	if err != nil {
		return nil, err
	}
	stmt, err := conn.Prepare(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	schema, err := stmt.Schema()
	if err != nil {
		return nil, err
	}
	return fieldsOf(schema)
}

// ComStmtExecute binds the parameters vitess decoded and runs the
// statement, sending rows in the binary protocol.
func (h *handler) ComStmtExecute(_ context.Context, c *mysql.Conn, pd *mysql.PrepareData, callback func(*sqltypes.Result) error) (err error) {
	s := sessionOf(c)
	if !s.mu.TryLock() {
		return errBusy
	}
	defer s.mu.Unlock()
	defer s.recoverPanic(&err)
	if err := s.startCommand(); err != nil {
		return err
	}
	p := s.stmts[pd.StatementID]
	if p == nil {
		return errorf(erUnknownStmtHandler, mysql.SSUnknownSQLState,
			"Unknown prepared statement handler (%d) given to mysqld_stmt_execute", pd.StatementID)
	}
	// vitess gives the statement fresh parameters after each execution.
	defer p.lease.SetParams(0)
	if err := p.paramErr; err != nil {
		p.paramErr = nil
		return holdError(err)
	}
	if err := p.lease.SetParams(bindBytes(pd)); err != nil {
		return holdError(err)
	}
	out := &sink{send: callback, sender: &rowSender{binary: true}}
	return s.run(cmdExecute, p.sql, func(ctx context.Context) (int64, error) {
		if p.stmt == nil {
			return s.runStatement(ctx, p.sql, out)
		}
		args, err := bindArgs(pd, p.blob)
		if err != nil {
			return 0, err
		}
		if err := p.stmt.BindValues(args...); err != nil {
			return 0, err
		}
		return s.execute(ctx, p.stmt, p.sql, out)
	})
}

// sweepStatements closes the engine statements of those the client has
// closed: vitess handles COM_STMT_CLOSE without telling the handler.
func (s *session) sweepStatements() {
	for id, p := range s.stmts {
		if _, open := s.c.PrepareData[id]; !open {
			p.close()
			delete(s.stmts, id)
		}
	}
}

func (s *session) closeStatements() {
	for id, p := range s.stmts {
		p.close()
		delete(s.stmts, id)
	}
}

// bindArgs converts the parameters vitess decoded from COM_STMT_EXECUTE to
// Go values for the engine. Integers and floats arrive typed; strings,
// decimals and blobs as bytes; dates and times as text vitess formatted,
// which is parsed here by the type the client declared.
func bindArgs(pd *mysql.PrepareData, blob []bool) ([]any, error) {
	n := int(pd.ParamsCount)
	args := make([]any, n)
	for i := range n {
		bv := pd.BindVars["v"+strconv.Itoa(i+1)]
		if bv == nil || bv.Type == sqltypes.Null {
			continue
		}
		v, err := bindValue(bv, querypb.Type(pd.ParamsType[i]), i < len(blob) && blob[i])
		if err != nil {
			return nil, errorf(mysql.ERWrongArguments, mysql.SSUnknownSQLState,
				"Incorrect arguments to mysqld_stmt_execute: parameter %d: %v", i+1, err)
		}
		args[i] = v
	}
	return args, nil
}

func bindValue(bv *querypb.BindVariable, declared querypb.Type, blob bool) (any, error) {
	raw := string(bv.Value)
	switch {
	case sqltypes.IsSigned(bv.Type):
		return strconv.ParseInt(raw, 10, 64)
	case sqltypes.IsUnsigned(bv.Type):
		return strconv.ParseUint(raw, 10, 64)
	case sqltypes.IsFloat(bv.Type):
		return strconv.ParseFloat(raw, 64)
	}
	switch declared {
	case sqltypes.Date, sqltypes.Datetime, sqltypes.Timestamp:
		return parseBinaryDatetime(raw)
	case sqltypes.Time:
		return parseBinaryTime(raw)
	}
	if blob {
		return []byte(raw), nil
	}
	return raw, nil
}

// parseBinaryDatetime reads the "Y-M-D[ h:m:s[.µs]]" text vitess makes of
// a binary DATE or DATETIME parameter; its numbers are not zero-padded and
// the part after the dot is a count of microseconds. MySQL's zero date
// binds as NULL.
func parseBinaryDatetime(s string) (any, error) {
	nums, err := splitNumbers(s, "- :.")
	if err != nil {
		return nil, err
	}
	if len(nums) == 0 || len(nums) >= 3 && nums[0] == 0 && nums[1] == 0 && nums[2] == 0 {
		return nil, nil
	}
	for len(nums) < 7 {
		nums = append(nums, 0)
	}
	if len(nums) != 7 {
		return nil, fmt.Errorf("bad datetime %q", s)
	}
	return time.Date(int(nums[0]), time.Month(nums[1]), int(nums[2]), int(nums[3]), int(nums[4]), int(nums[5]),
		int(nums[6])*1000, time.UTC), nil
}

// parseBinaryTime reads the "[-]h:m:s[.µs]" text vitess makes of a binary
// TIME parameter and returns it as HH:MM:SS.ffffff for DuckDB to cast.
func parseBinaryTime(s string) (any, error) {
	neg := strings.HasPrefix(s, "-")
	nums, err := splitNumbers(strings.TrimPrefix(s, "-"), ":.")
	if err != nil || len(nums) < 3 || len(nums) > 4 {
		return nil, fmt.Errorf("bad time %q", s)
	}
	for len(nums) < 4 {
		nums = append(nums, 0)
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return fmt.Sprintf("%s%02d:%02d:%02d.%06d", sign, nums[0], nums[1], nums[2], nums[3]), nil
}

func splitNumbers(s, seps string) ([]int64, error) {
	var nums []int64
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, err
		}
		nums = append(nums, n)
	}
	return nums, nil
}
