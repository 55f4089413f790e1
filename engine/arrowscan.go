package engine

/*
#include <stdlib.h>
#include <stdint.h>

struct ArrowArrayStream {
	void (*get_schema)(struct ArrowArrayStream*);
	void (*get_next)(struct ArrowArrayStream*);
	void (*get_last_error)(struct ArrowArrayStream*);
	void (*release)(struct ArrowArrayStream*);
	void* private_data;
};
*/
import "C"

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	duckdb "github.com/duckdb/duckdb-go-bindings"
)

var scanSeq atomic.Uint64

// InsertArrow inserts every batch that r yields into the table named by
// target (already quoted, e.g. "main"."t") with one
// INSERT INTO target [columns] SELECT * FROM <arrow scan of r>.
// DuckDB pulls the batches as it inserts, so memory stays bounded by the
// reader; it casts each column to the table's type. The insert is one
// statement: if r fails midway (its Err), nothing is inserted. It returns
// the number of rows inserted.
func (c *Conn) InsertArrow(ctx context.Context, target string, columns []string, r array.RecordReader) (int64, error) {
	view := fmt.Sprintf("__quiver_scan_%d", scanSeq.Add(1))
	stream := (*cdata.CArrowArrayStream)(C.calloc(1, C.sizeof_struct_ArrowArrayStream))
	defer C.free(unsafe.Pointer(stream))
	cdata.ExportRecordReader(r, stream)
	defer cdata.ReleaseCArrowArrayStream(stream)
	if duckdb.ArrowScan(c.conn, view, duckdb.ArrowStream{Ptr: unsafe.Pointer(stream)}) == duckdb.StateError {
		return 0, errorf(KindInvalid, "scan arrow stream: schema not supported by DuckDB: %s", r.Schema())
	}
	defer func() {
		var res duckdb.Result
		duckdb.Query(c.conn, "DROP VIEW IF EXISTS "+view, &res)
		duckdb.DestroyResult(&res)
	}()
	cols := ""
	if len(columns) > 0 {
		cols = " ("
		for i, col := range columns {
			if i > 0 {
				cols += ", "
			}
			cols += QuoteIdent(col)
		}
		cols += ")"
	}
	n, err := c.Exec(ctx, "INSERT INTO "+target+cols+" SELECT * FROM "+view)
	if err != nil {
		if rerr := r.Err(); rerr != nil {
			return 0, fmt.Errorf("read input: %w", rerr)
		}
		return 0, err
	}
	return n, nil
}
