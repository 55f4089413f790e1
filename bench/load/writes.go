package load

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// writeCheck compares the writes the server acknowledged with the table.
type writeCheck struct {
	acked int
	// present is the distinct ids in the table; unacked of them were
	// never acknowledged (applied, but the client saw an error or had
	// gone, which is allowed).
	present, unacked int
	// lost are acknowledged ids missing from the table, dups ids present
	// more than once: both must be empty.
	lost, dups []int64
}

// checkWrites reads every id in the writes table and checks that each
// acknowledged one is there exactly once.
func (l *suite) checkWrites(ctx context.Context, levels [][]*windowResult) (*writeCheck, error) {
	acked := map[int64]bool{}
	for _, round := range levels {
		for _, w := range round {
			for _, id := range w.acked {
				acked[id] = true
			}
		}
	}
	conn, err := l.target.dial(ctx, protoFlight, nil)
	if err != nil {
		return nil, fmt.Errorf("check writes: %w", err)
	}
	defer conn.close()
	res, err := conn.(flightConn).c.Query(ctx, fmt.Sprintf("SELECT id, count(*)::BIGINT AS n FROM %s GROUP BY id", loadWrites))
	if err != nil {
		return nil, fmt.Errorf("check writes: %w", err)
	}
	defer res.Release()
	counts := map[int64]int64{}
	for res.Next() {
		rec := res.RecordBatch()
		ids, ok1 := rec.Column(0).(*array.Int64)
		ns, ok2 := rec.Column(1).(*array.Int64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("check writes: result columns are %s, want two BIGINT", rec.Schema())
		}
		for i := 0; i < ids.Len(); i++ {
			counts[ids.Value(i)] += ns.Value(i)
		}
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("check writes: %w", err)
	}
	return compareWrites(acked, counts), nil
}

// compareWrites checks counts (id → rows holding it) against the
// acknowledged ids.
func compareWrites(acked map[int64]bool, counts map[int64]int64) *writeCheck {
	wc := &writeCheck{acked: len(acked), present: len(counts)}
	for id := range acked {
		if counts[id] == 0 {
			wc.lost = append(wc.lost, id)
		}
	}
	for id, n := range counts {
		if n > 1 {
			wc.dups = append(wc.dups, id)
		}
		if !acked[id] {
			wc.unacked++
		}
	}
	slices.Sort(wc.lost)
	slices.Sort(wc.dups)
	return wc
}
