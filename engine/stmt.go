package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	duckdb "github.com/duckdb/duckdb-go-bindings"

	"github.com/quiverdata/quiver/engine/convert"
)

// Stmt is a prepared statement on one connection. Like its Conn, it belongs
// to one goroutine at a time.
type Stmt struct {
	c  *Conn
	ps duckdb.PreparedStatement
	// text is the statement's SQL when it was prepared alone; empty for
	// the last statement of a script, whose own text DuckDB does not give.
	text string
	// done, when set, runs once when the statement's result is ready or
	// it failed (see OnResult).
	done func(ctx context.Context, err error) error
	// pipe, when set, is how the statement, a COPY, runs (PipeCopy).
	pipe *copyPipe
	// forceCheckpoint is set when the statement runs a force checkpoint,
	// which waits for other write transactions before it runs
	// (awaitCheckpoint).
	forceCheckpoint bool
	// keep is set when Close puts the statement in its connection's
	// cache (stmtcache.go), as prepared at the plan cache's generation.
	keep       bool
	generation uint64
}

// OnResult sets fn to run once, on the statement's next execution, when
// its result is ready (for a COPY: once the file is written) or it failed,
// with its error; what fn returns is then the statement's error. A
// statement closed without running calls fn with ErrNotRun. For a query,
// fn runs before its rows are read.
func (s *Stmt) OnResult(fn func(ctx context.Context, err error) error) { s.done = fn }

// ErrNotRun is what an OnResult function gets for a statement closed
// before it ran.
var ErrNotRun = errorf(KindInvalid, "statement closed before it ran")

// finish runs the OnResult function, if any, once.
func (s *Stmt) finish(ctx context.Context, err error) error {
	fn := s.done
	if fn == nil {
		return err
	}
	s.done = nil
	return fn(ctx, err)
}

// Conn is the connection the statement was prepared on.
func (s *Stmt) Conn() *Conn { return s.c }

// Type is DuckDB's statement type.
func (s *Stmt) Type() duckdb.StatementType { return duckdb.PreparedStatementType(s.ps) }

// IsQuery reports whether the statement returns rows a client asked for,
// as opposed to DDL and DML, which return at most a count.
func (s *Stmt) IsQuery() bool {
	switch s.Type() {
	case duckdb.StatementTypeSelect, duckdb.StatementTypeExplain, duckdb.StatementTypePragma,
		duckdb.StatementTypeCall, duckdb.StatementTypeRelation, duckdb.StatementTypeExecute,
		duckdb.StatementTypeAnalyze:
		return duckdb.PreparedStatementColumnCount(s.ps) > 0
	case duckdb.StatementTypeInsert, duckdb.StatementTypeUpdate, duckdb.StatementTypeDelete,
		duckdb.StatementTypeMergeInto:
		// DML with RETURNING has columns other than the lone count.
		return duckdb.PreparedStatementColumnCount(s.ps) > 1 ||
			(duckdb.PreparedStatementColumnCount(s.ps) == 1 && duckdb.PreparedStatementColumnName(s.ps, 0) != "Count")
	}
	return false
}

// Schema is the Arrow schema of the statement's result. A column whose type
// depends on a parameter not yet bound (SELECT ? AS x) is typed null, as
// its parameter is; the result, once bound, carries the real type.
func (s *Stmt) Schema() (*arrow.Schema, error) {
	types, names := s.columns()
	defer destroyTypes(types)
	for i := range types {
		if id := duckdb.GetTypeId(types[i]); id == duckdb.TypeInvalid || id == duckdb.TypeAny {
			duckdb.DestroyLogicalType(&types[i])
			types[i] = duckdb.CreateLogicalType(duckdb.TypeSQLNull)
		}
	}
	return convert.ArrowSchema(s.c.arrowOpts, types, names)
}

func (s *Stmt) columns() ([]duckdb.LogicalType, []string) {
	n := int(duckdb.PreparedStatementColumnCount(s.ps))
	types := make([]duckdb.LogicalType, n)
	names := make([]string, n)
	for i := range n {
		types[i] = duckdb.PreparedStatementColumnLogicalType(s.ps, duckdb.IdxT(i))
		names[i] = duckdb.PreparedStatementColumnName(s.ps, duckdb.IdxT(i))
	}
	return types, names
}

func destroyTypes(types []duckdb.LogicalType) {
	for i := range types {
		duckdb.DestroyLogicalType(&types[i])
	}
}

// NumParams is the number of parameters the statement takes.
func (s *Stmt) NumParams() int { return int(duckdb.NParams(s.ps)) }

// ParamSchema is the Arrow schema of the statement's parameters, named by
// position ("1", "2", …) or by name. A parameter whose type DuckDB cannot
// infer is typed null: any value may be bound to it.
func (s *Stmt) ParamSchema() (*arrow.Schema, error) {
	n := s.NumParams()
	fields := make([]arrow.Field, n)
	for i := range n {
		idx := duckdb.IdxT(i + 1)
		name := duckdb.ParameterName(s.ps, idx)
		if name == "" {
			name = fmt.Sprint(i + 1)
		}
		fields[i] = arrow.Field{Name: name, Type: arrow.Null, Nullable: true}
		t := duckdb.ParamType(s.ps, idx)
		if t == duckdb.TypeInvalid || t == duckdb.TypeAny || t == duckdb.TypeSQLNull {
			continue
		}
		lt := duckdb.ParamLogicalType(s.ps, idx)
		sch, err := convert.ArrowSchema(s.c.arrowOpts, []duckdb.LogicalType{lt}, []string{name})
		duckdb.DestroyLogicalType(&lt)
		if err != nil {
			continue
		}
		fields[i].Type = sch.Field(0).Type
	}
	return arrow.NewSchema(fields, nil), nil
}

// Exec runs the statement to completion and returns the rows it changed.
func (s *Stmt) Exec(ctx context.Context) (int64, error) {
	if s.pipe != nil {
		n, err := s.runPipe(ctx)
		if err = s.finish(ctx, err); err != nil {
			return 0, err
		}
		return n, nil
	}
	res, stop, err := s.execute(ctx, false)
	if err != nil {
		return 0, err
	}
	defer stop()
	defer duckdb.DestroyResult(&res)
	s.noteSideEffects()
	return rowsChanged(&res), nil
}

// rowsChanged is the count of rows a statement wrote. DuckDB's
// rows-changed figure covers INSERT, UPDATE and DELETE only; CREATE
// TABLE … AS SELECT returns its count as the lone "Count" value of its
// result instead, which is what DuckDB's own clients show.
func rowsChanged(res *duckdb.Result) int64 {
	if n := int64(duckdb.RowsChanged(res)); n != 0 {
		return n
	}
	if duckdb.ColumnCount(res) == 1 && duckdb.ColumnName(res, 0) == "Count" &&
		duckdb.ColumnType(res, 0) == duckdb.TypeBigInt {
		return duckdb.ValueInt64(res, 0, 0)
	}
	return 0
}

// Query runs the statement and streams its result. The caller must Close
// the returned Rows before using the connection again.
func (s *Stmt) Query(ctx context.Context) (*Rows, error) {
	return s.query(ctx, false)
}

// QueryTransient is Query for a consumer that keeps nothing of a batch
// once it has released it, such as a writer that sends the batch's
// buffers and then lets go: the bytes of its strings come from the
// recycling allocator too, instead of fresh Go memory. A Go string taken
// from such a batch (array.String.Value aliases the batch) is overwritten
// once the batch is released.
func (s *Stmt) QueryTransient(ctx context.Context) (*Rows, error) {
	return s.query(ctx, true)
}

func (s *Stmt) query(ctx context.Context, transient bool) (*Rows, error) {
	if s.pipe != nil {
		return s.pipeResult(ctx, transient)
	}
	res, stop, err := s.execute(ctx, true)
	if err != nil {
		return nil, err
	}
	s.noteSideEffects()
	r, err := newRows(s, res, stop, transient)
	if err == nil {
		r.ctx = ctx
	}
	if err != nil {
		stop()
		duckdb.DestroyResult(&res)
		return nil, err
	}
	return r, nil
}

// noteSideEffects records what Release must clean up after this statement.
func (s *Stmt) noteSideEffects() {
	switch s.Type() {
	case duckdb.StatementTypeTransaction:
		s.c.maybeTxn = true
	case duckdb.StatementTypeCreate, duckdb.StatementTypeCreateFunc:
		s.c.maybeTemp = true
	case duckdb.StatementTypeSet:
		// USE is a SET statement to DuckDB.
		s.c.maybeUse = true
	}
}

// execute runs the statement until its result is ready. A cancelled ctx
// interrupts it; the returned stop ends that watch and must be called once
// the result is no longer read.
func (s *Stmt) execute(ctx context.Context, stream bool) (duckdb.Result, func() bool, error) {
	res, stop, err := s.run(ctx, stream)
	if s.done == nil {
		return res, stop, err
	}
	if err = s.finish(ctx, err); err != nil && stop != nil {
		duckdb.DestroyResult(&res)
		stop()
		stop = nil
	}
	return res, stop, err
}

func (s *Stmt) run(ctx context.Context, stream bool) (duckdb.Result, func() bool, error) {
	var res duckdb.Result
	if err := ctx.Err(); err != nil {
		return res, nil, &Error{Kind: KindCanceled, Msg: "statement canceled before it ran: " + err.Error()}
	}
	if s.forceCheckpoint {
		if err := s.c.awaitCheckpoint(ctx); err != nil {
			return res, nil, err
		}
	}
	var pending duckdb.PendingResult
	var st duckdb.State
	if stream {
		st = duckdb.PendingPreparedStreaming(s.ps, &pending)
	} else {
		st = duckdb.PendingPrepared(s.ps, &pending)
	}
	if st == duckdb.StateError {
		msg := duckdb.PendingError(pending)
		duckdb.DestroyPending(&pending)
		return res, nil, errorFromMessage(msg)
	}
	defer duckdb.DestroyPending(&pending)
	s.beforeRun()
	defer s.afterRun()
	stop := s.c.interruptOnCancel(ctx)
	statementsTotal.Inc()
	if !drivePending(pending) {
		// The error's type is lost with a failed task; its message says it.
		err := unlessLost(ctx, errorFromMessage(duckdb.PendingError(pending)))
		stop()
		if ctx.Err() != nil {
			err = &Error{Kind: KindCanceled, Msg: "statement canceled: " + ctx.Err().Error()}
		}
		statementErrors.Inc()
		return res, nil, err
	}
	if duckdb.ExecutePending(pending, &res) == duckdb.StateError {
		err := unlessLost(ctx, duckError(duckdb.ResultErrorType(&res), duckdb.ResultError(&res)))
		duckdb.DestroyResult(&res)
		stop()
		if ctx.Err() != nil {
			err = &Error{Kind: KindCanceled, Msg: "statement canceled: " + ctx.Err().Error()}
		}
		statementErrors.Inc()
		return res, nil, err
	}
	return res, stop, nil
}

// drivePending runs the pending query's tasks on this thread until its
// result is ready (true; ExecutePending then only collects it) or it
// failed (false).
//
// DuckDB's own wait (duckdb_execute_pending) polls its task queue
// without pause whenever its worker threads hold every task of the
// query. On a two-core machine that poll takes a core from the rest of
// the process, such as the Flight or Kafka reader that feeds an Arrow
// scan insert: the insert ran at half DuckDB's native rate while this
// thread spun. Here the thread sleeps while no task is available, a
// little longer each time, up to maxIdleWait.
func drivePending(p duckdb.PendingResult) bool {
	idle := time.Duration(0)
	for {
		switch duckdb.PendingExecuteTask(p) {
		case duckdb.PendingStateResultReady:
			return true
		case duckdb.PendingStateError:
			return false
		case duckdb.PendingStateNoTasksAvailable:
			idle = min(idle+minIdleWait, maxIdleWait)
			time.Sleep(idle)
		default:
			idle = 0
		}
	}
}

// The sleeps of drivePending between polls of a busy query.
const (
	minIdleWait = 20 * time.Microsecond
	maxIdleWait = time.Millisecond
)

// Close destroys the prepared statement.
func (s *Stmt) Close() {
	s.finish(context.Background(), ErrNotRun)
	if s.pipe != nil {
		s.pipe.query.Close()
		s.pipe = nil
	}
	if s.keep && s.ps.Ptr != nil && s.c.keepStmt(s) {
		return
	}
	duckdb.DestroyPrepare(&s.ps)
}
