package engine

import "testing"

// TestStreamingLimitOnTop reads plans as DuckDB's EXPLAIN (FORMAT json)
// gives them.
func TestStreamingLimitOnTop(t *testing.T) {
	for _, tt := range []struct {
		plan string
		want bool
		err  bool
	}{
		{`[{"name":"STREAMING_LIMIT","children":[{"name":"SEQ_SCAN ","children":[]}]}]`, true, false},
		{`[{"name":"PROJECTION","children":[{"name":"FILTER","children":[{"name":"STREAMING_LIMIT","children":[]}]}]}]`, true, false},
		{`[{"name":"SEQ_SCAN","children":[]}]`, false, false},
		{`[{"name":"ORDER_BY","children":[{"name":"STREAMING_LIMIT","children":[]}]}]`, false, false},
		{`[{"name":"PROJECTION","children":[{"name":"A"},{"name":"STREAMING_LIMIT"}]}]`, false, false},
		{`[]`, false, false},
		{`not json`, false, true},
	} {
		got, err := streamingLimitOnTop(tt.plan)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: got %v, %v; want %v, error %v", tt.plan, got, err, tt.want, tt.err)
		}
	}
}
