package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testmem"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// brokenReader yields its batches until failAt, then fails.
type brokenReader struct {
	array.RecordReader
	n, failAt int
}

func (b *brokenReader) Next() bool {
	if b.n == b.failAt {
		return false
	}
	b.n++
	return b.RecordReader.Next()
}

func (b *brokenReader) Err() error {
	if b.n == b.failAt {
		return errSourceGone
	}
	return nil
}

var errSourceGone = errors.New("source went away")

func TestClient_Ingest(t *testing.T) {
	srv := testutil.StartServer(t, server.Config{})
	mem := testmem.CheckedWait(t)
	recs := makeRows(mem, 0, 50000, 10000)
	defer releaseAll(recs)
	create := &flightsql.TableDefinitionOptions{
		IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate,
		IfExists:   flightsql.TableDefinitionOptionsTableExistsOptionFail,
	}
	for _, comp := range []string{"", "lz4", "zstd", "auto"} {
		t.Run("compression "+comp, func(t *testing.T) {
			c := testutil.Dial(t, srv, client.Config{Compression: comp})
			table := "ing_" + comp
			rdr, _ := array.NewRecordReader(rowsSchema, recs)
			defer rdr.Release()
			n, err := c.Ingest(context.Background(), rdr, &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: create})
			if err != nil || n != 50000 {
				t.Fatalf("ingest: got %d, %v; want 50000", n, err)
			}
			if got := scalar(t, c, fmt.Sprintf(mismatches, table)); got != "0" {
				t.Errorf("rows that differ: %s", got)
			}
			// The same again fails: the table exists.
			rdr2, _ := array.NewRecordReader(rowsSchema, recs)
			defer rdr2.Release()
			if _, err := c.Ingest(context.Background(), rdr2, &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: create}); err == nil {
				t.Error("create over an existing table: no error")
			}
		})
	}

	c := testutil.Dial(t, srv, client.Config{})
	for _, tc := range []struct {
		name string
		rdr  func() array.RecordReader
		want error
	}{
		{"no batches", func() array.RecordReader {
			r, _ := array.NewRecordReader(rowsSchema, nil)
			return r
		}, client.ErrNoRows},
		{"reader fails midway", func() array.RecordReader {
			r, _ := array.NewRecordReader(rowsSchema, recs)
			return &brokenReader{RecordReader: r, failAt: 3}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdr := tc.rdr()
			defer rdr.Release()
			_, err := c.Ingest(context.Background(), rdr, &flightsql.ExecuteIngestOpts{Table: "never", TableDefinitionOptions: create})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want an error (%v)", err, tc.want)
			}
			if got := scalar(t, c, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'never'"); got != "0" {
				t.Errorf("tables named never: got %s, want 0", got)
			}
		})
	}
}
