package server_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/testutil"
	"github.com/quiverdata/quiver/server"
)

// TestServer_LocalScanEndpoints checks that a plain scan of a local table
// is one endpoint unless the session asks for split_rows, and then comes
// back as rowid ranges of about that many rows, which list no other
// replica and together hold every row once; statements and prepared
// statements alike. The table is larger than the million rows from which
// a scan used to be split by default. A value that is not a row count is
// refused.
func TestServer_LocalScanEndpoints(t *testing.T) {
	const rows = 2_000_000
	srv := testutil.StartServer(t, server.Config{Peers: []string{"127.0.0.1:1"}, Advertise: "127.0.0.1:2"})
	c := testutil.Dial(t, srv, client.Config{})
	if _, err := c.Exec(context.Background(), "CREATE TABLE big AS SELECT range AS id FROM range(2000000)"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		splitRows string // "" sets no option
		want      int
	}{
		{"no option", "", 1},
		{"zero", "0", 1},
		{"more rows than the table", "5000000", 1},
		{"quarters", "500000", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.splitRows != "" {
				var res *flight.SetSessionOptionsResult
				ctx, res = testutil.SessionCookie(t, c, "split_rows", tc.splitRows)
				if len(res.Errors) > 0 {
					t.Fatalf("split_rows %s refused: %v", tc.splitRows, res.Errors)
				}
			}
			for _, prepared := range []bool{false, true} {
				var info *flight.FlightInfo
				var err error
				if prepared {
					st, perr := c.SQL().Prepare(c.Context(ctx), "SELECT id FROM big")
					if perr != nil {
						t.Fatal(perr)
					}
					info, err = st.Execute(c.Context(ctx))
					st.Close(c.Context(ctx))
				} else {
					info, err = c.SQL().Execute(c.Context(ctx), "SELECT id FROM big")
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := len(info.Endpoint); got != tc.want {
					t.Errorf("prepared=%v: endpoints: got %d, want %d", prepared, got, tc.want)
				}
				seen, n := make([]bool, rows), 0
				for i, ep := range info.Endpoint {
					if len(ep.Location) != 0 {
						t.Errorf("prepared=%v: endpoint %d of a local table lists %v", prepared, i, ep.Location)
					}
					r, err := c.SQL().DoGet(c.Context(ctx), ep.Ticket)
					if err != nil {
						t.Fatal(err)
					}
					for r.Next() {
						ids := r.RecordBatch().Column(0).(*array.Int64)
						for j := range ids.Len() {
							if id := ids.Value(j); id < 0 || id >= rows || seen[id] {
								t.Fatalf("prepared=%v: id %d twice or out of range", prepared, id)
							}
							seen[ids.Value(j)] = true
							n++
						}
					}
					if err := r.Err(); err != nil {
						t.Fatal(err)
					}
					r.Release()
				}
				if n != rows {
					t.Errorf("prepared=%v: rows: got %d, want %d", prepared, n, rows)
				}
			}
		})
	}
	for _, bad := range []string{"many", "-5", "1.5"} {
		t.Run("refused "+bad, func(t *testing.T) {
			_, res := testutil.SessionCookie(t, c, "split_rows", bad)
			if got := res.Errors["split_rows"].GetValue(); got != flight.SetSessionOptionsResultErrorInvalidValue {
				t.Errorf("split_rows %q: got %v, want INVALID_VALUE", bad, got)
			}
		})
	}
}
