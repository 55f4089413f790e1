package flightsql_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/split"
)

// bigRows is the size of the table the replica tests split: three parts
// of split's default million rows.
const bigRows = 3_000_000

// replicaSetup is the data every test replica holds, loaded the same way
// so that row ids agree: big, with every tenth row and a run of 100,000
// deleted (row ids with gaps), and a small table.
var replicaSetup = fmt.Sprintf(`
	CREATE TABLE big AS SELECT range AS id, range %% 7 AS grp, 'v' || range AS s FROM range(%d);
	DELETE FROM big WHERE id %% 10 = 3 OR (id >= 1500000 AND id < 1600000);
	CREATE TABLE small AS SELECT range AS id FROM range(10);`, bigRows)

// bigWant reports whether id is a row of big.
func bigWant(id int64) bool {
	return id >= 0 && id < bigRows && id%10 != 3 && (id < 1_500_000 || id >= 1_600_000)
}

// replica is an in-process Flight SQL server over a database of its own.
type replica struct {
	db     *engine.DB
	addr   string
	client *client.Client
}

// uri is the replica's location.
func (r *replica) uri() string { return "grpc+tcp://" + r.addr }

// replicaKey is the ticket key every test replica shares, as replicas
// given one --token-key-file do.
var replicaKey = []byte("quiver test replicas' ticket key")

// startReplicas starts n servers, each over its own in-memory database
// loaded with setup, each with the split planner, every replica's
// location (its own first) and replicaKey. opts, when not nil, adjusts
// each one's options.
func startReplicas(t testing.TB, n int, setup string, opts func(i int, o *flightsql.Options)) []*replica {
	t.Helper()
	ctx := context.Background()
	reps := make([]*replica, n)
	lns := make([]net.Listener, n)
	for i := range reps {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		db, err := engine.Open(ctx, engine.Options{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			db.Close()
			mem.AssertSize(t, 0)
		})
		if setup != "" {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Exec(ctx, setup); err != nil {
				t.Fatalf("set up replica %d: %v", i, err)
			}
			c.Release()
		}
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		reps[i] = &replica{db: db, addr: lns[i].Addr().String()}
	}
	for i, r := range reps {
		var locs []string
		for j := range reps {
			locs = append(locs, reps[(i+j)%n].uri())
		}
		o := flightsql.Options{
			Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
			Planner:   flightsql.Planners{&split.Planner{DB: r.db}},
			Locations: locs,
			TicketKey: replicaKey,
		}
		if opts != nil {
			opts(i, &o)
		}
		srv, err := flightsql.New(r.db, o)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(lns[i])
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
		})
		r.client = dialAddr(t, r.addr)
	}
	return reps
}

// dialAddr connects a client to addr, closed when the test ends.
func dialAddr(t testing.TB, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), client.Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fetchIDs fetches a ticket through c and returns the first column, a
// BIGINT, in order, with the stream's schema.
func fetchIDs(t *testing.T, c *client.Client, tkt *flight.Ticket) ([]int64, *arrow.Schema) {
	t.Helper()
	ids, schema, err := tryFetchIDs(c, tkt)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return ids, schema
}

func tryFetchIDs(c *client.Client, tkt *flight.Ticket) ([]int64, *arrow.Schema, error) {
	ctx := c.Context(context.Background())
	rdr, err := c.SQL().DoGet(ctx, tkt)
	if err != nil {
		return nil, nil, err
	}
	defer rdr.Release()
	var ids []int64
	for rdr.Next() {
		ids = append(ids, rdr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	return ids, rdr.Schema(), rdr.Err()
}

// locationAddr is HOST:PORT of a grpc+tcp location.
func locationAddr(t *testing.T, loc *flight.Location) string {
	t.Helper()
	u, err := url.Parse(loc.GetUri())
	if err != nil || u.Scheme != "grpc+tcp" {
		t.Fatalf("location %q: want grpc+tcp://HOST:PORT", loc.GetUri())
	}
	return u.Host
}

// checkOnce checks ids hold every row of big that want accepts exactly
// once, and nothing else.
func checkOnce(t *testing.T, ids []int64, want func(int64) bool) {
	t.Helper()
	seen := make([]uint8, bigRows)
	for _, id := range ids {
		if id < 0 || id >= bigRows || !want(id) {
			t.Fatalf("got row %d, which the query does not select", id)
		}
		seen[id]++
	}
	missing, twice := 0, 0
	for id := range int64(bigRows) {
		switch {
		case want(id) && seen[id] == 0:
			missing++
		case seen[id] > 1:
			twice++
		}
	}
	if missing > 0 || twice > 0 {
		t.Errorf("rows: %d missing, %d more than once, of %d fetched", missing, twice, len(ids))
	}
}

func TestEndpoints_SplitAcrossReplicas(t *testing.T) {
	reps := startReplicas(t, 2, replicaSetup, nil)
	a, b := reps[0], reps[1]
	ctx := a.client.Context(context.Background())
	const sql = "SELECT id, s FROM big WHERE grp <> 4"
	want := func(id int64) bool { return bigWant(id) && id%7 != 4 }
	info, err := a.client.SQL().Execute(ctx, sql)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(info.Endpoint); got != 3 {
		t.Fatalf("endpoints: got %d, want 3", got)
	}
	if info.TotalRecords != -1 {
		t.Errorf("total records: got %d, want -1", info.TotalRecords)
	}
	infoSchema, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range info.Endpoint {
		rot := []string{a.uri(), b.uri()}
		if i%2 == 1 {
			rot = []string{b.uri(), a.uri()}
		}
		var got []string
		for _, l := range ep.Location {
			got = append(got, l.GetUri())
		}
		if fmt.Sprint(got) != fmt.Sprint(rot) {
			t.Errorf("endpoint %d locations: got %v, want %v", i, got, rot)
		}
	}

	t.Run("every part on the second replica", func(t *testing.T) {
		var all []int64
		for i, ep := range info.Endpoint {
			ids, schema := fetchIDs(t, b.client, ep.Ticket)
			if !schema.Equal(infoSchema) {
				t.Errorf("part %d schema: got %s, want the FlightInfo's %s", i, schema, infoSchema)
			}
			all = append(all, ids...)
		}
		checkOnce(t, all, want)
	})
	t.Run("each part at its first location", func(t *testing.T) {
		var all []int64
		for _, ep := range info.Endpoint {
			c := dialAddr(t, locationAddr(t, ep.Location[0]))
			ids, _ := fetchIDs(t, c, ep.Ticket)
			all = append(all, ids...)
		}
		checkOnce(t, all, want)
	})
	t.Run("a part fetched again", func(t *testing.T) {
		first, _ := fetchIDs(t, a.client, info.Endpoint[1].Ticket)
		again, _ := fetchIDs(t, b.client, info.Endpoint[1].Ticket)
		if len(first) == 0 || fmt.Sprint(first) != fmt.Sprint(again) {
			t.Errorf("part 1: %d rows, then %d rows or another order", len(first), len(again))
		}
	})
	t.Run("the client reads every endpoint", func(t *testing.T) {
		r, err := a.client.Query(context.Background(), sql)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		var all []int64
		for r.Next() {
			all = append(all, r.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		checkOnce(t, all, want)
	})
}

func TestEndpoints_OneEndpoint(t *testing.T) {
	reps := startReplicas(t, 2, replicaSetup, nil)
	a := reps[0]
	ctx := a.client.Context(context.Background())
	for _, sql := range []string{
		"SELECT id FROM big ORDER BY id",
		"SELECT grp, count(*) FROM big GROUP BY grp",
		"SELECT count(*) FROM big",
		"SELECT b.id FROM big b JOIN small USING (id)",
		"SELECT id FROM big LIMIT 10",
		"SELECT DISTINCT grp FROM big",
		"SELECT id FROM big WHERE id IN (SELECT id FROM small)",
		"SELECT id FROM small",
		"SELECT id FROM big UNION ALL SELECT id FROM small",
		"CREATE TABLE made AS SELECT 1 AS a; SELECT * FROM big",
	} {
		t.Run(sql, func(t *testing.T) {
			info, err := a.client.SQL().Execute(ctx, sql)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
				t.Errorf("got %d endpoints, the first with locations %v; want one without", len(info.Endpoint), info.Endpoint[0].Location)
			}
		})
	}
	t.Run("in a transaction", func(t *testing.T) {
		txn, err := a.client.SQL().BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer txn.Rollback(ctx)
		info, err := txn.Execute(ctx, "SELECT id FROM big")
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
			t.Fatalf("got %d endpoints, the first with locations %v; want one without", len(info.Endpoint), info.Endpoint[0].Location)
		}
		ids, _ := fetchIDs(t, a.client, info.Endpoint[0].Ticket)
		checkOnce(t, ids, bigWant)
		// The transaction lives on this server only.
		_, _, err = tryFetchIDs(reps[1].client, info.Endpoint[0].Ticket)
		wantCode(t, err, codes.InvalidArgument, "transaction")
	})
}

// TestEndpoints_NoLocations checks a server told no locations still
// splits, and lists none.
func TestEndpoints_NoLocations(t *testing.T) {
	reps := startReplicas(t, 1, replicaSetup, func(_ int, o *flightsql.Options) { o.Locations = nil })
	a := reps[0]
	info, err := a.client.SQL().Execute(a.client.Context(context.Background()), "SELECT id FROM big")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 3 {
		t.Fatalf("endpoints: got %d, want 3", len(info.Endpoint))
	}
	var all []int64
	for i, ep := range info.Endpoint {
		if len(ep.Location) != 0 {
			t.Errorf("endpoint %d: got locations %v, want none", i, ep.Location)
		}
		ids, _ := fetchIDs(t, a.client, ep.Ticket)
		all = append(all, ids...)
	}
	checkOnce(t, all, bigWant)
}

func TestOptions_Locations(t *testing.T) {
	db, err := engine.Open(context.Background(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, bad := range []string{"", "10.0.0.1:31337", "://x"} {
		if _, err := flightsql.New(db, flightsql.Options{Locations: []string{bad}}); err == nil {
			t.Errorf("location %q: got no error", bad)
		}
	}
}
