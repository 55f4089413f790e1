package flightsql

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/admit"
)

// handle is what a statement ticket carries. A query ticket holds its SQL,
// so it can be fetched again, survives a server restart and runs on any
// replica; DDL and DML ran when the FlightInfo was made, so their ticket
// carries the count.
//
// A ticket comes back from the client, so it is parsed strictly
// (parseHandle) and the SQL in it is authorized like a fresh statement
// before it runs.
type handle struct {
	Query   string `json:"q,omitempty"`
	Txn     string `json:"t,omitempty"`
	Catalog string `json:"c,omitempty"`
	Schema  string `json:"s,omitempty"`
	// Held names a statement that was prepared and kept for the fetch,
	// because it followed other statements in a script.
	Held string `json:"h,omitempty"`
	// Count is the row count of a statement that already ran.
	Count *int64 `json:"n,omitempty"`
	// Part names one part of a query the Planner split; the Planner's Bind
	// turns it and Query into the SQL that runs.
	Part json.RawMessage `json:"p,omitempty"`
	// Params are the parameter rows bound to Query, an Arrow IPC stream
	// (base64 in the JSON), at most maxTicketParams bytes.
	Params []byte `json:"b,omitempty"`
	// Lane is the admission lane ("small" or "bulk") GetFlightInfo
	// classified Query into; the fetch is admitted to it without
	// classifying the query again.
	Lane string `json:"l,omitempty"`
}

// maxTicketParams is the largest encoded parameter set a ticket or a
// prepared-statement handle carries. Larger sets stay on the server that
// received them, and their tickets only run there.
const maxTicketParams = 1 << 20

// maxParamMemory caps the memory decoding a ticket's parameters may take.
// An honest encoding of maxTicketParams bytes decodes to about its own
// size; a forged one with compressed bodies could claim any size.
const maxParamMemory = 16 << 20

// parseHandle decodes and checks a statement ticket's handle: known fields
// only, and exactly one kind of ticket (count, held statement or query).
func parseHandle(raw []byte) (handle, error) {
	var h handle
	if err := strictJSON(raw, &h); err != nil {
		return handle{}, invalidf("malformed statement ticket: %v", err)
	}
	bad := func(why string) (handle, error) { return handle{}, invalidf("malformed statement ticket: %s", why) }
	query := h.Query != "" || h.Txn != "" || h.Catalog != "" || h.Schema != "" || h.Part != nil || h.Params != nil || h.Lane != ""
	switch {
	case h.Count != nil:
		if query || h.Held != "" {
			return bad("a row count with other fields")
		}
	case h.Held != "":
		if query {
			return bad("a held statement with other fields")
		}
		if !isID(h.Held) {
			return bad("bad held-statement id")
		}
	case h.Query == "":
		return bad("no query, held statement or row count")
	case h.Txn != "" && (h.Part != nil || h.Params != nil):
		return bad("a transaction's query with a part or parameters")
	case h.Part != nil && (len(h.Part) == 0 || bytes.Equal(h.Part, []byte("null"))):
		return bad("an empty part")
	case len(h.Params) > maxTicketParams:
		return bad(fmt.Sprintf("parameters over %d bytes", maxTicketParams))
	}
	if _, ok := admit.ParseLane(h.Lane); h.Lane != "" && !ok {
		return bad(fmt.Sprintf("unknown lane %q", h.Lane))
	}
	return h, nil
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// trailing data.
func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// isID reports whether s looks like an id newID made.
func isID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// encodeParams serializes bound parameter rows for a ticket or handle. ok
// is false when they cannot travel: batches of different schemas, or more
// than maxTicketParams bytes.
func encodeParams(recs []arrow.RecordBatch) (b []byte, ok bool) {
	if len(recs) == 0 {
		return nil, true
	}
	schema := recs[0].Schema()
	for _, rec := range recs[1:] {
		if !rec.Schema().Equal(schema) {
			return nil, false
		}
	}
	buf := &cappedBuffer{max: maxTicketParams}
	w := ipc.NewWriter(buf, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			w.Close()
			return nil, false
		}
	}
	if err := w.Close(); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// cappedBuffer is a bytes.Buffer that refuses to grow past max.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

var errTooLarge = errors.New("parameters too large to travel")

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}

// decodeParams reads parameter rows a client sent back in a ticket or a
// handle. The data is untrusted: its IPC metadata is checked first
// (checkIPCStream), it is read into Go memory under a budget, every array
// is validated, and a panic of the IPC reader is an error.
// The caller releases the batches.
func decodeParams(b []byte) (recs []arrow.RecordBatch, err error) {
	if len(b) > maxTicketParams {
		return nil, invalidf("malformed parameters: over %d bytes", maxTicketParams)
	}
	defer func() {
		if r := recover(); r != nil {
			releaseRecs(recs)
			recs, err = nil, invalidf("malformed parameters: %v", r)
		}
	}()
	if err := checkIPCStream(b); err != nil {
		return nil, invalidf("malformed parameters: %v", err)
	}
	mem := &budgetAllocator{mem: memory.DefaultAllocator}
	mem.left.Store(maxParamMemory)
	rdr, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		return nil, invalidf("malformed parameters: %v", err)
	}
	defer rdr.Release()
	rows := 0
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if err := validateRecord(rec); err != nil {
			releaseRecs(recs)
			return nil, invalidf("malformed parameters: %v", err)
		}
		rows += int(rec.NumRows())
		if rows > maxBoundRows {
			releaseRecs(recs)
			return nil, status.Errorf(codes.ResourceExhausted, "more than %d parameter rows bound to a query", maxBoundRows)
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		releaseRecs(recs)
		return nil, invalidf("malformed parameters: %v", err)
	}
	return recs, nil
}

// validateRecord checks a batch a client sent whole (array.ValidateFull):
// every column's length, buffer sizes, null count and offsets, its
// children's too. arrow-go's IPC reader takes them as the client sent
// them, and DuckDB trusts what it scans, so a batch laid out otherwise
// than its schema says (a flat batch after a nested schema) had DuckDB
// read outside its buffers and crash the server.
func validateRecord(rec arrow.RecordBatch) error {
	for i, col := range rec.Columns() {
		if int64(col.Len()) != rec.NumRows() {
			return fmt.Errorf("column %d has %d rows, the batch %d", i, col.Len(), rec.NumRows())
		}
		// A column of the null type (ADBC binds Python's None as one)
		// has no buffers to mislay; arrow-go's check wants one of it all
		// the same, which the IPC reader does not give.
		if col.DataType().ID() == arrow.NULL {
			continue
		}
		if err := array.ValidateFull(col); err != nil {
			return fmt.Errorf("column %d: %w", i, err)
		}
	}
	return nil
}

// budgetAllocator fails (by panicking, which decodeParams and arrow-go's
// IPC reader turn into an error) once more than its budget is allocated.
type budgetAllocator struct {
	mem  memory.Allocator
	left atomic.Int64
}

func (a *budgetAllocator) take(n int) {
	if a.left.Add(-int64(n)) < 0 {
		panic(fmt.Sprintf("parameters need more than %d bytes of memory", maxParamMemory))
	}
}

func (a *budgetAllocator) Allocate(size int) []byte {
	a.take(size)
	return a.mem.Allocate(size)
}

func (a *budgetAllocator) Reallocate(size int, b []byte) []byte {
	a.take(size - len(b))
	return a.mem.Reallocate(size, b)
}

func (a *budgetAllocator) Free(b []byte) { a.mem.Free(b) }
