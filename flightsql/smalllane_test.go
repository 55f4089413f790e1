package flightsql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/quiverdata/quiver/admit"
	"github.com/quiverdata/quiver/engine"
	"github.com/quiverdata/quiver/flightsql"
	"github.com/quiverdata/quiver/internal/testutil"
)

// countingPlanner counts the queries it is asked to plan.
type countingPlanner struct {
	flightsql.Planner
	calls atomic.Int64
}

func (p *countingPlanner) Plan(ctx context.Context, c *engine.Conn, sql string) ([]json.RawMessage, error) {
	p.calls.Add(1)
	return p.Planner.Plan(ctx, c, sql)
}

// classified reads quiver_admit_classified_total for lane and source.
func classified(t *testing.T, lane, source string) float64 {
	t.Helper()
	v, _ := testutil.Metric(t, "quiver_admit_classified_total", map[string]string{"lane": lane, "source": source})
	return v
}

// TestGetFlightInfo_SmallQuerySkipsPlanner checks that a query
// GetFlightInfo classifies small gets one endpoint without the split
// planner's own queries, and that its fetch is admitted by the lane its
// ticket carries, without classifying it again; a large one is still
// planned and split. The small query's rows are its own.
func TestGetFlightInfo_SmallQuerySkipsPlanner(t *testing.T) {
	planners := make([]*countingPlanner, 2)
	reps := startReplicas(t, 2, replicaSetup, func(i int, o *flightsql.Options) {
		planners[i] = &countingPlanner{Planner: o.Planner}
		o.Planner = planners[i]
		o.Classifier = &admit.Classifier{}
		o.Admission = admit.New(admit.Config{})
	})
	a := reps[0]
	ctx := a.client.Context(context.Background())

	before := classified(t, "small", "plan")
	info, err := a.client.SQL().Execute(ctx, "SELECT id FROM big WHERE id = 5")
	if err != nil {
		t.Fatal(err)
	}
	if got := planners[0].calls.Load(); got != 0 {
		t.Errorf("the planner was asked %d times for a point lookup", got)
	}
	if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
		t.Fatalf("point lookup: %d endpoints, want one without locations", len(info.Endpoint))
	}
	ids, _ := fetchIDs(t, a.client, info.Endpoint[0].Ticket)
	if len(ids) != 1 || ids[0] != 5 {
		t.Fatalf("point lookup: got %v, want [5]", ids)
	}
	// Another replica runs the ticket by its lane too.
	if ids, _ := fetchIDs(t, reps[1].client, info.Endpoint[0].Ticket); len(ids) != 1 || ids[0] != 5 {
		t.Fatalf("point lookup on the other replica: got %v, want [5]", ids)
	}
	if got := classified(t, "small", "plan") - before; got != 1 {
		t.Errorf("the point lookup was classified by its plan %v times, want once (GetFlightInfo's)", got)
	}

	info, err = a.client.SQL().Execute(ctx, "SELECT id, s FROM big WHERE grp <> 4")
	if err != nil {
		t.Fatal(err)
	}
	if got := planners[0].calls.Load(); got != 1 {
		t.Errorf("the planner was asked %d times for a large scan, want once", got)
	}
	if len(info.Endpoint) != 3 {
		t.Fatalf("large scan: %d endpoints, want 3", len(info.Endpoint))
	}
	var n int
	for _, ep := range info.Endpoint {
		ids, _ := fetchIDs(t, a.client, ep.Ticket)
		n += len(ids)
	}
	want := 0
	for id := range int64(bigRows) {
		if bigWant(id) && id%7 != 4 {
			want++
		}
	}
	if n != want {
		t.Errorf("large scan: %d rows, want %d", n, want)
	}
}

// BenchmarkSmallQuery_PointLookup times a point lookup through a client
// (GetFlightInfo, then DoGet of each endpoint) on the 3M-row table the
// split planner divides into three parts: classified, as quiver serve
// runs it, where GetFlightInfo finds it small and skips the planner, and
// unclassified, where every query is planned (and this one split).
//
//	go test -tags duckdb_arrow -run '^$' -bench SmallQuery_PointLookup -count 5 -timeout 20m ./flightsql/
func BenchmarkSmallQuery_PointLookup(b *testing.B) {
	for _, tt := range []struct {
		name       string
		classifier *admit.Classifier
	}{
		{"classified", &admit.Classifier{}},
		{"unclassified", nil},
	} {
		b.Run(tt.name, func(b *testing.B) {
			reps := startReplicas(b, 1, replicaSetup, func(_ int, o *flightsql.Options) {
				o.Classifier = tt.classifier
				o.Admission = admit.New(admit.Config{})
			})
			c := reps[0].client
			ctx := c.Context(context.Background())
			var id int64
			for b.Loop() {
				id = (id + 7919) % bigRows
				res, err := c.Query(ctx, fmt.Sprintf("SELECT id, s FROM big WHERE id = %d", id))
				if err != nil {
					b.Fatal(err)
				}
				for res.Next() {
				}
				if err := res.Err(); err != nil {
					b.Fatal(err)
				}
				res.Release()
			}
		})
	}
}
