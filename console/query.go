package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/auth"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/filesio"
)

// arrowStream is the media type of a result: an Arrow IPC stream.
const arrowStream = "application/vnd.apache.arrow.stream"

// maxWindow bounds the rows of one window (offset/limit) of a result.
const maxWindow = 100_000

type queryRequest struct {
	SQL    string `json:"sql"`
	Offset *int64 `json:"offset"`
	Limit  *int64 `json:"limit"`
}

// statusError is a failed request's HTTP status, code and message.
type statusError struct {
	status int
	code   string
	msg    string
}

func (e *statusError) Error() string { return e.msg }

func (e *statusError) write(w http.ResponseWriter) { writeError(w, e.status, e.code, e.msg) }

// deniedError is a statement the user's role does not permit.
type deniedError struct{ err error }

func (e *deniedError) Error() string { return e.err.Error() }

// failed maps err, which ended a statement run under ctx, to its status.
func failed(ctx context.Context, err error) *statusError {
	var (
		se     *statusError
		denied *deniedError
		busy   *admit.BusyError
		ce     *admit.CanceledError
		ee     *engine.Error
	)
	cause := context.Cause(ctx)
	te, timedOut := admit.TimedOut(ctx)
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &denied):
		return &statusError{http.StatusForbidden, "denied", denied.Error()}
	case errors.As(err, &busy):
		return &statusError{http.StatusTooManyRequests, "busy", busy.Error()}
	case timedOut:
		return &statusError{http.StatusGatewayTimeout, "timeout", te.Error()}
	case ctx.Err() != nil && errors.As(cause, &ce):
		return &statusError{http.StatusConflict, "canceled", ce.Error()}
	case ctx.Err() != nil:
		return &statusError{http.StatusConflict, "canceled", "the statement was canceled: the request closed"}
	case errors.As(err, &ee):
		switch ee.Kind {
		case engine.KindPermission:
			return &statusError{http.StatusForbidden, "denied", ee.Msg}
		case engine.KindResource:
			return &statusError{http.StatusServiceUnavailable, "resource", ee.Msg}
		case engine.KindCanceled:
			return &statusError{http.StatusConflict, "canceled", ee.Msg}
		case engine.KindInternal:
			return &statusError{http.StatusInternalServerError, "internal", ee.Msg}
		}
		return &statusError{http.StatusBadRequest, "sql", ee.Msg}
	}
	return &statusError{http.StatusInternalServerError, "internal", err.Error()}
}

// run is one statement of the console's, prepared, authorized and
// admitted; close it.
type run struct {
	ctx  context.Context
	done []func()
	conn *engine.Conn
	st   *engine.Stmt
	slot *admit.Slot
	sql  string
	rows int64
	cls  *admit.Classifier
	// outcome is what close counts the statement as: "ok", or the code
	// of the error that ended it.
	outcome string
}

func (q *run) close() {
	statementsTotal.WithLabelValues(q.outcome).Inc()
	rowsSent.Add(float64(q.rows))
	q.slot.Finish(q.cls, admit.Key{SQL: q.sql}, q.rows)
	if q.st != nil {
		q.st.Close()
	}
	if q.conn != nil {
		q.conn.Release()
	}
	for i := len(q.done) - 1; i >= 0; i-- {
		q.done[i]()
	}
}

// start prepares sql for u (a script's earlier statements run, each
// authorized first), authorizes and admits its last statement, under the
// request's context: a closed request cancels it, and so does an admin
// through /api/cancel.
func (c *Console) start(r *http.Request, u auth.User, sql string) (q *run, err error) {
	// The user rides along for the database's prepare hook, which refuses
	// some statements before DuckDB prepares them.
	ctx, cancel := admit.Bound(auth.ContextWithUser(r.Context(), u), "http", u.Name, c.opts.QueryTimeout, "the server's --query-timeout")
	q = &run{ctx: ctx, done: []func(){cancel}, sql: sql, cls: c.opts.Classifier, outcome: "ok"}
	defer func() {
		if err != nil {
			se := failed(q.ctx, err)
			err, q.outcome = se, se.code
			q.close()
			q = nil
		}
	}()
	if strings.TrimSpace(sql) == "" {
		return q, &statusError{http.StatusBadRequest, "sql", "no SQL to run"}
	}
	if q.conn, err = c.opts.DB.Conn(q.ctx); err != nil {
		return q, err
	}
	check := func(st *engine.Stmt) error {
		if c.opts.Authorize == nil {
			return nil
		}
		if err := c.opts.Authorize(u, st); err != nil {
			return &deniedError{err}
		}
		return nil
	}
	var multi bool
	if q.st, multi, err = q.conn.PrepareLast(q.ctx, sql, check); err != nil {
		return q, err
	}
	var explain func() ([]byte, error)
	if !multi && q.st.NumParams() == 0 {
		explain = func() ([]byte, error) { return q.conn.ExplainJSON(q.ctx, sql) }
	}
	if q.st.NumParams() > 0 {
		return q, &statusError{http.StatusBadRequest, "sql", fmt.Sprintf("the statement takes %d parameters; the console runs statements without parameters", q.st.NumParams())}
	}
	// A console statement runs on a pooled connection, in the server's
	// default scope; a USE before it in the same text is part of its key.
	q.slot, err = c.opts.Admission.AdmitSQL(q.ctx, c.opts.Classifier, admit.Key{SQL: sql}, explain)
	return q, err
}

// windowSQL wraps a query so that only rows [offset, offset+limit) of its
// result come back: the page fetches the part of a large result it shows.
func windowSQL(sql string, offset, limit int64) string {
	body := strings.TrimRightFunc(sql, func(r rune) bool { return r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	return fmt.Sprintf("SELECT * FROM (\n%s\n) AS quiver_window LIMIT %d OFFSET %d", body, limit, offset)
}

func (c *Console) handleQuery(w http.ResponseWriter, r *http.Request, u auth.User) {
	var req queryRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "request", "the body must be JSON: {\"sql\": \"…\", \"offset\": n, \"limit\": n}: "+err.Error())
		return
	}
	sql := req.SQL
	window := req.Offset != nil || req.Limit != nil
	if window {
		off, lim := int64(0), int64(maxWindow)
		if req.Offset != nil {
			off = *req.Offset
		}
		if req.Limit != nil {
			lim = *req.Limit
		}
		if off < 0 || lim < 0 || lim > maxWindow {
			writeError(w, http.StatusBadRequest, "window", fmt.Sprintf("offset must be ≥ 0 and limit between 0 and %d", maxWindow))
			return
		}
		sql = windowSQL(sql, off, lim)
	}
	q, err := c.start(r, u, sql)
	if err != nil {
		se := err.(*statusError)
		if window && se.code == "sql" {
			se.code, se.msg = "window", "this statement's result cannot be fetched in windows: "+se.msg
		}
		se.write(w)
		return
	}
	defer q.close()
	if !q.st.IsQuery() {
		n, err := q.st.Exec(q.ctx)
		if err != nil {
			se := failed(q.ctx, err)
			q.outcome = se.code
			se.write(w)
			return
		}
		writeJSON(w, http.StatusOK, struct {
			Statement   string `json:"statement"`
			RowsChanged int64  `json:"rows_changed"`
		}{q.st.Kind(), max(n, 0)})
		return
	}
	id := queryIDs.Add(1)
	w.Header().Set("Content-Type", arrowStream)
	w.Header().Set("X-Query-Id", strconv.FormatUint(id, 10))
	err = c.stream(w, q, func(schema *arrow.Schema) (batchWriter, error) {
		return ipc.NewWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(c.opts.DB.Allocator())), nil
	})
	c.endStream(w, q, id, u, err)
}

// endStream ends a result: an error before the first byte is the
// response; after it, it is kept for /api/query/error and the connection
// is cut, so that the page sees a broken stream rather than a short one.
func (c *Console) endStream(w http.ResponseWriter, q *run, id uint64, u auth.User, err error) {
	if err == nil {
		return
	}
	var sent *sentError
	if !errors.As(err, &sent) {
		for _, h := range []string{"Content-Disposition", "X-Query-Id"} {
			w.Header().Del(h)
		}
		se := failed(q.ctx, err)
		q.outcome = se.code
		se.write(w)
		return
	}
	se := failed(q.ctx, sent.err)
	q.outcome = se.code
	c.log.Info("console result broken off", "user", u.Name, "rows", q.rows, "err", se.msg)
	if id != 0 {
		c.noteFailure(id, u.Name, se.msg)
	}
	panic(http.ErrAbortHandler)
}

// sentError is an error after the response began.
type sentError struct{ err error }

func (e *sentError) Error() string { return e.err.Error() }

type batchWriter interface {
	Write(arrow.RecordBatch) error
	Close() error
}

// stream runs q's query and writes its batches with the writer open
// returns, once the first batch (or the end) is there: an error before
// that is answered with its status, and the headers the caller set are
// sent only then. The run slot is given back while a batch goes to the
// client, which may read slowly.
func (c *Console) stream(w http.ResponseWriter, q *run, open func(*arrow.Schema) (batchWriter, error)) error {
	rows, more, err := begin(w, q, true)
	if err != nil {
		return err
	}
	defer rows.Close()
	bw, err := open(rows.Schema())
	if err != nil {
		return &sentError{err}
	}
	rc := http.NewResponseController(w)
	for ; more; more = rows.Next() {
		rec := rows.RecordBatch()
		q.slot.Pause()
		err := bw.Write(rec)
		if err == nil {
			err = rc.Flush()
		}
		if rerr := q.slot.Resume(q.ctx); err == nil {
			err = rerr
		}
		if err != nil {
			return &sentError{err}
		}
		q.rows += rec.NumRows()
	}
	if err := rows.Err(); err != nil {
		return &sentError{err}
	}
	if err := bw.Close(); err != nil {
		return &sentError{err}
	}
	return nil
}

func (c *Console) handleQueryError(w http.ResponseWriter, r *http.Request, u auth.User) {
	id, err := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "request", "id must be a result's X-Query-Id")
		return
	}
	c.failedMu.Lock()
	f, ok := c.failed[id]
	c.failedMu.Unlock()
	if !ok || f.user != u.Name {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no error kept for result %d", id))
		return
	}
	writeError(w, http.StatusOK, "sql", f.msg)
}

// downloads are the formats a result downloads as: the extension and
// media type. Arrow is written by arrow-go's IPC file writer; CSV, JSON
// (a line per row) and Parquet by DuckDB's own writers (package filesio,
// as quiver query -o writes them), which write every DuckDB type.
var downloads = map[string]struct{ ext, mime string }{
	"arrow":   {"arrow", "application/vnd.apache.arrow.file"},
	"csv":     {"csv", "text/csv; charset=utf-8"},
	"json":    {"jsonl", "application/x-ndjson"},
	"parquet": {"parquet", "application/vnd.apache.parquet"},
}

// Bounds of the DuckDB that writes a download's CSV, JSON or Parquet:
// one thread, and memory for a few row groups.
const (
	writerThreads = 1
	writerMemory  = "256MB"
)

// handleDownload streams a result to the browser as a file: an HTML form
// posts it (fields sql, format and csrf), so that the browser writes the
// file to disk as it arrives.
func (c *Console) handleDownload(w http.ResponseWriter, r *http.Request, u auth.User) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "request", "read the form: "+err.Error())
		return
	}
	format := r.PostFormValue("format")
	f, ok := downloads[format]
	if !ok {
		writeError(w, http.StatusBadRequest, "request", fmt.Sprintf("format %q: want parquet, csv, json or arrow", format))
		return
	}
	q, err := c.start(r, u, r.PostFormValue("sql"))
	if err != nil {
		err.(*statusError).write(w)
		return
	}
	defer q.close()
	if !q.st.IsQuery() {
		writeError(w, http.StatusBadRequest, "request", fmt.Sprintf("a %s statement returns no rows to download", q.st.Kind()))
		return
	}
	w.Header().Set("Content-Type", f.mime)
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=\"result.%s\"", f.ext))
	if format == "arrow" {
		err = c.stream(w, q, func(schema *arrow.Schema) (batchWriter, error) { return ipc.NewFileWriter(w, ipc.WithSchema(schema)) })
	} else {
		err = c.writeFile(w, q, format)
	}
	c.endStream(w, q, 0, u, err)
}

// begin runs q's query and, once its first batch (or its end) is there,
// sends the response's headers: an error before that is answered with its
// status. transient batches (engine.Stmt.QueryTransient) suit a writer
// that keeps nothing of a batch. more reports whether a batch is there.
func begin(w http.ResponseWriter, q *run, transient bool) (rows *engine.Rows, more bool, err error) {
	if transient {
		rows, err = q.st.QueryTransient(q.ctx)
	} else {
		rows, err = q.st.Query(q.ctx)
	}
	if err != nil {
		return nil, false, err
	}
	if more = rows.Next(); !more && rows.Err() != nil {
		err = rows.Err()
		rows.Close()
		return nil, false, err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	return rows, more, nil
}

// writeFile streams q's result to w through DuckDB's writer for format,
// once the first batch (or the end) is there, as stream does.
func (c *Console) writeFile(w http.ResponseWriter, q *run, format string) error {
	rows, more, err := begin(w, q, false)
	if err != nil {
		return err
	}
	defer rows.Close()
	sr := &slotReader{Rows: rows, q: q, first: more}
	q.slot.Pause()
	err = filesio.Write(q.ctx, sr, w, format, filesio.WithThreads(writerThreads), filesio.WithMemoryLimit(writerMemory))
	if err == nil {
		err = sr.err
	}
	if err != nil {
		return &sentError{err}
	}
	return nil
}

// slotReader hands a result's batches to the writing DuckDB, holding the
// run slot only while the next batch is made: the time the writer and the
// client take is paused time. The first batch is already there.
type slotReader struct {
	*engine.Rows
	q     *run
	first bool
	err   error
}

func (r *slotReader) Next() bool {
	if r.first {
		r.first = false
		r.q.rows += r.RecordBatch().NumRows()
		return true
	}
	if r.err != nil {
		return false
	}
	if err := r.q.slot.Resume(r.q.ctx); err != nil {
		r.err = err
		return false
	}
	more := r.Rows.Next()
	r.q.slot.Pause()
	if more {
		r.q.rows += r.RecordBatch().NumRows()
	}
	return more
}

func (r *slotReader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Rows.Err()
}

type cancelRequest struct {
	ID string `json:"id"`
}

// handleCancel cancels a running or queued statement of any endpoint: an
// admin's any, another user's only their own.
func (c *Console) handleCancel(w http.ResponseWriter, r *http.Request, u auth.User) {
	var req cancelRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "request", "the body must be JSON: {\"id\": \"…\"}")
		return
	}
	id, err := strconv.ParseUint(req.ID, 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "request", fmt.Sprintf("id %q is not a query's id", req.ID))
		return
	}
	q, ok := c.opts.Admission.Lookup(id)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no query %d is running or queued", id))
		return
	}
	if !u.Role.IsAdmin() && q.User != u.Name {
		writeError(w, http.StatusForbidden, "denied", fmt.Sprintf("query %d is %s's: only an admin cancels other users' queries", id, q.User))
		return
	}
	by := "admin " + u.Name
	if !u.Role.IsAdmin() {
		by = u.Name
	}
	if !c.opts.Admission.Cancel(id, by+" from the console") {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("query %d ended already", id))
		return
	}
	c.log.Info("query canceled from the console", "id", id, "by", u.Name, "owner", q.User, "endpoint", q.Endpoint)
	w.WriteHeader(http.StatusNoContent)
}
